package gitx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeOf lists the branch's tree as "mode path" lines (symlinks with their
// target).
func (f *checkoutFixture) treeOf(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(gitT(t, f.repo, "ls-tree", "-r", "hub/j1"), "\n") {
		meta, path, _ := strings.Cut(l, "\t")
		mode := strings.Fields(meta)[0]
		if mode == "120000" {
			target, _ := f.onBranch(t, path)
			path += " -> " + target
		}
		lines = append(lines, mode+" "+path)
	}
	return lines
}

// TestCheckoutNestedRepos: repositories the worker made inside its
// checkout (`git init`, with a commit or without, one inside another) are
// committed as plain files, without their .git, ignored files left out,
// symlinks as symlinks; nothing of their git dirs runs; a submodule of the
// base tree stays a submodule; the checkout is clean afterwards.
func TestCheckoutNestedRepos(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n"})
		// A submodule in the base tree, checked out by the worker.
		modHead := f.withSubmodule(t, private)
		writeFile(t, filepath.Join(f.tmp, "secret"), "secret\n", 0o600)
		f.worker(t, `git init -q sub
echo s > sub/f; echo ignored > sub/x.log; mkdir -p sub/deeper/deepest; echo d > sub/deeper/deepest/d
ln -s "$T/secret" sub/link
git -C sub config core.fsmonitor "touch $MARK"
git -C sub config filter.evil.clean "sh -c 'touch $MARK; cat'"
printf '#!/bin/sh\ntouch %s\n' "$MARK" > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit
echo '* filter=evil' > sub/.gitattributes
git init -q sub/inner; echo i > sub/inner/i
git init -q withcommit; echo c > withcommit/c; git -C withcommit add c; git -C withcommit commit -qm c
git init -q empty
git init -q ':(glob)odd'; echo o > ':(glob)odd/:(icase)f'; echo l > ':(glob)odd/y.log'
mkdir -p plain; git init -q plain/deep; echo p > plain/deep/p
git clone -q "$T/repo" mod; git -C mod checkout -q --detach `+modHead+`
echo top > top.txt`)
		if files, err := f.c.Changes(context.Background(), f.base); err != nil {
			t.Fatal(err)
		} else {
			var got []string
			for _, fc := range files {
				got = append(got, fc.Path)
			}
			for _, want := range []string{"sub/f", "sub/inner/i", "withcommit/c", "plain/deep/p", "top.txt"} {
				if !slices.Contains(got, want) {
					t.Errorf("private=%v: Changes does not list %s: %v", private, want, got)
				}
			}
		}
		res, err := f.commit(t)
		if err != nil {
			t.Fatalf("private=%v: Commit: %v", private, err)
		}
		if exists(f.mark) {
			t.Errorf("private=%v: a program planted in a nested repository's .git ran", private)
		}
		want := []string{"100644 .gitignore", "100644 :(glob)odd/:(icase)f", "100644 a.txt", "160000 mod", "100644 plain/deep/p",
			"100644 sub/.gitattributes", "100644 sub/deeper/deepest/d", "100644 sub/f", "100644 sub/inner/i",
			"120000 sub/link -> " + filepath.Join(f.tmp, "secret"), "100644 top.txt", "100644 withcommit/c"}
		if got := f.treeOf(t); !slices.Equal(got, want) {
			t.Errorf("private=%v: the branch holds\n%s\nwant\n%s", private, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := gitT(t, f.repo, "rev-parse", "hub/j1:mod"); got != modHead {
			t.Errorf("private=%v: the submodule moved to %s", private, got)
		}
		var nested []string
		for _, r := range res.Repairs {
			if r.What == RepairNested {
				nested = append(nested, r.Found+"; "+r.Done)
			}
		}
		wantRep := []string{
			":(glob)odd/ is a git repository the worker made; committed its files as plain files (1); its .git is not on the branch",
			"empty/ is a git repository the worker made; found no files in it to commit; its .git is not on the branch",
			"plain/deep/ is a git repository the worker made; committed its files as plain files (1); its .git is not on the branch",
			"sub/ is a git repository the worker made, with sub/inner/ inside it; committed its files as plain files (5); its .git is not on the branch",
			"withcommit/ is a git repository the worker made; committed its files as plain files (1); its .git is not on the branch",
		}
		if !slices.Equal(nested, wantRep) {
			t.Errorf("private=%v: repairs\n%s\nwant\n%s", private, strings.Join(nested, "\n"), strings.Join(wantRep, "\n"))
		}
		if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || dirty {
			t.Errorf("private=%v: Dirty() = %v, %v after the commit", private, dirty, err)
		}
		if !exists(filepath.Join(f.c.Dir, "sub", ".git", "HEAD")) {
			t.Errorf("private=%v: the nested repository's .git is gone from the worktree", private)
		}
		gitT(t, f.repo, "fsck", "--full", "--no-dangling")
	}
}

// TestCheckoutAddedSubmoduleNoCommit: a repository .gitmodules names (the
// worker's `git submodule add`, undone to no commit) cannot be committed
// as a submodule or as files: Commit says so naming it, commits the rest,
// and the checkout stays dirty for cleanup to see.
func TestCheckoutAddedSubmoduleNoCommit(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, nil)
		f.worker(t, `git init -q lib; echo l > lib/l
printf '[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n' > .gitmodules
echo kept > kept.txt`)
		_, err := f.commit(t)
		var ue *UncommittableError
		if !errors.As(err, &ue) || !slices.Equal(ue.Folders, []string{"lib/"}) || !strings.Contains(err.Error(), "lib/: a submodule the worker added") {
			t.Fatalf("private=%v: Commit = %v; want an UncommittableError naming lib/", private, err)
		}
		if _, ok := f.onBranch(t, "kept.txt"); !ok {
			t.Errorf("private=%v: kept.txt is not on the branch", private)
		}
		if _, ok := f.onBranch(t, "lib/l"); ok {
			t.Errorf("private=%v: lib/l is on the branch", private)
		}
		if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || !dirty {
			t.Errorf("private=%v: Dirty() = %v, %v; the submodule hub could not commit is there", private, dirty, err)
		}
	}
}

// sparseCheckout makes the user's repository a sparse checkout in cone mode of
// in/ (its files out/… are absent), and returns its fixture.
func sparseCheckout(t *testing.T, private bool) *checkoutFixture {
	t.Helper()
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{"in/a.txt": "a\n", "out/b.txt": "b\n", "out/deep/c.txt": "c\n", "top.txt": "t\n"})
	gitT(t, repo, "sparse-checkout", "set", "--cone", "in")
	if exists(filepath.Join(repo, "out")) {
		t.Fatal("the user's checkout is not sparse")
	}
	f := &checkoutFixture{tmp: tmp, mark: filepath.Join(tmp, "mark"), repo: repo}
	f.makeCheckout(t, private)
	return f
}

// TestCheckoutSparse: a job on a sparse user checkout gets the whole tree,
// for hub and for the worker's own git, and its branch records exactly the
// worker's changes inside and outside the cone, no deletions; a verify
// checkout is whole too.
func TestCheckoutSparse(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := sparseCheckout(t, private)
		for _, p := range []string{"in/a.txt", "out/b.txt", "out/deep/c.txt", "top.txt"} {
			if !exists(filepath.Join(f.c.Dir, p)) {
				t.Errorf("private=%v: the job's checkout lacks %s", private, p)
			}
		}
		if st := gitT(t, f.c.Dir, "status", "--porcelain"); st != "" {
			t.Errorf("private=%v: the new checkout is not clean for the worker's git:\n%s", private, st)
		}
		if out, err := exec.Command("git", "-C", f.c.Dir, "sparse-checkout", "list").CombinedOutput(); err == nil {
			t.Errorf("private=%v: the worker's git takes its checkout for sparse: %s", private, out)
		}
		// The worker's git does not take it for sparse: a checkout of
		// another commit keeps the files outside the cone.
		f.worker(t, `git checkout -q --detach HEAD && git checkout -q hub/j1
test -f out/b.txt
echo a2 >> in/a.txt; echo b2 >> out/b.txt`)
		res, err := f.commit(t)
		if err != nil {
			t.Fatalf("private=%v: Commit: %v", private, err)
		}
		if got := gitT(t, f.repo, "diff", "--name-status", f.base, "hub/j1"); got != "M\tin/a.txt\nM\tout/b.txt" {
			t.Errorf("private=%v: the branch changes\n%s\nwant exactly in/a.txt and out/b.txt modified", private, got)
		}
		if repairOf(res, RepairSparse) != nil {
			t.Errorf("private=%v: a sparse repair for a worker that made nothing sparse: %+v", private, res.Repairs)
		}
		if exists(filepath.Join(f.repo, "out")) {
			t.Errorf("private=%v: the user's sparse checkout got the files outside its cone", private)
		}
		v, err := MakeCheckout(context.Background(), f.r, CheckoutOptions{Dir: filepath.Join(f.tmp, "verify"), Index: filepath.Join(f.tmp, "vindex"),
			Base: res.Head, PrivateGitDir: filepath.Join(f.tmp, "vgit")})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(v.Dir, "out", "b.txt")); err != nil || string(b) != "b\nb2\n" {
			t.Errorf("private=%v: the verify checkout's out/b.txt = %q, %v", private, b, err)
		}
	}
}

// TestCheckoutWorkerSparse: a worker that makes its own checkout sparse
// removes the files outside its patterns from the work tree; hub's commit
// keeps them on the branch, not deleted, and says so.
func TestCheckoutWorkerSparse(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"in/a.txt": "a\n", "out/b.txt": "b\n", "top.txt": "t\n"})
		f.worker(t, `git sparse-checkout set --cone in; test ! -e out/b.txt; echo a2 >> in/a.txt`)
		res, err := f.commit(t)
		if err != nil {
			t.Fatalf("private=%v: Commit: %v", private, err)
		}
		if got := gitT(t, f.repo, "diff", "--name-status", f.base, "hub/j1"); got != "M\tin/a.txt" {
			t.Errorf("private=%v: the branch changes\n%s\nwant only in/a.txt modified", private, got)
		}
		if r := repairOf(res, RepairSparse); r == nil || r.Found != "the worker made its worktree sparse: 1 file of the tree is not in it" {
			t.Errorf("private=%v: no sparse repair: %+v", private, res.Repairs)
		}
		if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || dirty {
			t.Errorf("private=%v: Dirty() = %v, %v after the commit", private, dirty, err)
		}
	}
}

// TestCheckoutSubmoduleConfig: a submodule's checkout in the work tree (of
// the base tree, or one the worker added) is the worker's, config and all:
// hub's commit, its live diff and its dirty check never run git inside it
// (git would run its filters to see whether its files changed), and still
// record where its HEAD is.
func TestCheckoutSubmoduleConfig(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"a.txt": "a\n"})
		f.withSubmodule(t, private)
		// Each repository: a commit of its own, then the traps, then a
		// tracked file whose stat no longer matches its index.
		f.worker(t, `for d in mod lib; do
  rm -rf $d; git init -q $d; echo x > $d/x.txt; git -C $d add x.txt; git -C $d commit -qm x
  git -C $d config filter.evil.clean "sh -c 'touch $MARK; cat'"
  git -C $d config core.fsmonitor "touch $MARK"
  echo '* filter=evil' > $d/.gitattributes
  touch -d 2000-01-01 $d/x.txt
done
printf '[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n' > .gitmodules`)
		modHead := gitT(t, filepath.Join(f.c.Dir, "mod"), "-c", "core.fsmonitor=false", "rev-parse", "HEAD")
		libHead := gitT(t, filepath.Join(f.c.Dir, "lib"), "-c", "core.fsmonitor=false", "rev-parse", "HEAD")
		if exists(f.mark) {
			t.Fatal("the test's own git ran a trap")
		}
		if _, err := f.c.Changes(context.Background(), f.base); err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Dirty(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if exists(f.mark) {
			t.Fatalf("private=%v: hub's live view ran a submodule's filter", private)
		}
		if _, err := f.commit(t); err != nil {
			t.Fatalf("private=%v: Commit: %v", private, err)
		}
		if exists(f.mark) {
			t.Fatalf("private=%v: hub's commit ran a submodule's filter", private)
		}
		for path, want := range map[string]string{"mod": modHead, "lib": libHead} {
			if got := gitT(t, f.repo, "rev-parse", "hub/j1:"+path); got != want {
				t.Errorf("private=%v: %s on the branch is %s, its HEAD %s", private, path, got, want)
			}
		}
		// Each submodule still holds the worker's .gitattributes, which is
		// on no branch: dirty, read without running the traps.
		if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || !dirty || exists(f.mark) {
			t.Errorf("private=%v: Dirty() = %v, %v with files uncommitted inside the submodules; want true (a trap ran: %v)", private, dirty, err, exists(f.mark))
		}
		f.worker(t, "rm mod/.gitattributes lib/.gitattributes")
		if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || dirty || exists(f.mark) {
			t.Errorf("private=%v: Dirty() = %v, %v after the commit (a trap ran: %v)", private, dirty, err, exists(f.mark))
		}
		f.worker(t, "for d in mod lib; do echo '* filter=evil' > $d/.gitattributes; done")
		// Again, now that the branch has both submodules at their HEADs
		// (git would look inside a submodule whose HEAD has not moved).
		f.worker(t, "touch -d 2001-01-01 mod/x.txt lib/x.txt; echo more > more.txt")
		if _, err := f.c.Changes(context.Background(), f.base); err != nil {
			t.Fatal(err)
		}
		if _, err := f.commit(t); err != nil {
			t.Fatalf("private=%v: second Commit: %v", private, err)
		}
		if _, ok := f.onBranch(t, "more.txt"); !ok || exists(f.mark) {
			t.Errorf("private=%v: second commit: more.txt on the branch %v, a trap ran %v", private, ok, exists(f.mark))
		}
	}
}

// withSubmodule commits a submodule "mod" (a gitlink to the base) and makes
// the fixture's checkout again from that commit, the job's branch anew.
// It returns the submodule's commit.
func (f *checkoutFixture) withSubmodule(t *testing.T, private bool) string {
	t.Helper()
	mod := f.base
	gitT(t, f.repo, "update-index", "--add", "--cacheinfo", "160000,"+mod+",mod")
	gitT(t, f.repo, "commit", "-qm", "a submodule")
	f.base = gitT(t, f.repo, "rev-parse", "HEAD")
	if err := f.c.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	gitT(t, f.repo, "branch", "-D", "hub/j1")
	o := CheckoutOptions{Dir: filepath.Join(f.tmp, "wt2"), Index: filepath.Join(f.tmp, "index2"), Branch: "hub/j1", Base: f.base}
	if private {
		o.PrivateGitDir = filepath.Join(f.tmp, "git2")
	}
	c, err := MakeCheckout(context.Background(), f.r, o)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return mod
}
