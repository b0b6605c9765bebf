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

// checkoutFixture is a repository and one checkout of it made by hub.
type checkoutFixture struct {
	repo, base, tmp, mark string
	r                     *Repo
	c                     *Checkout
}

func newCheckout(t *testing.T, private bool, files map[string]string) *checkoutFixture {
	t.Helper()
	tmp := realDir(t, t.TempDir())
	f := &checkoutFixture{tmp: tmp, mark: filepath.Join(tmp, "mark")}
	f.repo = newRepo(t, filepath.Join(tmp, "repo"), files)
	f.makeCheckout(t, private)
	return f
}

// makeCheckout opens f.repo and makes job j1's checkout of its HEAD, laid
// out as HUB_HOME lays it out (under f.tmp/hub).
func (f *checkoutFixture) makeCheckout(t *testing.T, private bool) {
	t.Helper()
	f.r = mustOpen(t, f.repo)
	f.base = gitT(t, f.repo, "rev-parse", "HEAD")
	jobDir := filepath.Join(f.tmp, "hub", "jobs", "j1")
	writeFile(t, filepath.Join(jobDir, "keep"), "", 0o644)
	o := CheckoutOptions{Dir: filepath.Join(f.tmp, "hub", "worktrees", "j1"), Index: filepath.Join(jobDir, "index"),
		Branch: "hub/j1", Base: f.base}
	if private {
		o.PrivateGitDir = filepath.Join(jobDir, "git")
	}
	c, err := MakeCheckout(context.Background(), f.r, o)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
}

// worker runs script in the checkout as a worker would: git finds its way
// through the checkout's own .git.
func (f *checkoutFixture) worker(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = f.c.Dir
	cmd.Env = append(os.Environ(), append(fixtureIdentity, "T="+f.tmp, "MARK="+f.mark)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("worker script: %v\n%s", err, out)
	}
}

func (f *checkoutFixture) commit(t *testing.T) (CommitResult, error) {
	t.Helper()
	return f.c.Commit(context.Background(), CommitOptions{Message: "hub: left uncommitted\n\nHub-Job: j1\n", Who: hubIdentity,
		Base: f.base, Scratch: filepath.Join(f.tmp, "hub", "jobs", "j1", "import")})
}

// onBranch reads path on the job's branch in the user's repository.
func (f *checkoutFixture) onBranch(t *testing.T, path string) (string, bool) {
	t.Helper()
	out, err := exec.Command("git", "-C", f.repo, "show", "hub/j1:"+path).Output()
	return string(out), err == nil
}

func repairOf(res CommitResult, what string) *Repair {
	for i := range res.Repairs {
		if res.Repairs[i].What == what {
			return &res.Repairs[i]
		}
	}
	return nil
}

// TestCheckoutCommit: whatever the worker does to its git state, hub's
// commit lands on the job's branch with every file it wrote, runs none of
// its planted programs, touches no other ref, and puts its git state back.
func TestCheckoutCommit(t *testing.T) {
	evil := `git init -q --bare "$T/evil"
git -C "$T/evil" config filter.x.clean "sh -c 'touch $MARK; cat'"
git -C "$T/evil" config core.hooksPath "$T/evil/hooks"
mkdir -p "$T/evil/hooks"; printf '#!/bin/sh\ntouch %s\n' "$MARK" > "$T/evil/hooks/post-commit"; chmod +x "$T/evil/hooks/post-commit"
echo '* filter=x' > .gitattributes
`
	cases := []struct {
		name    string
		private string // "only" or "never"; "" for both layouts
		script  string
		files   []string // on the branch afterwards
		repairs []string
	}{
		{name: "plain", script: "echo a2 > a.txt; echo n > new.txt; git add new.txt; git commit -qm 'worker: new'; echo u > untracked.txt",
			files: []string{"a.txt", "new.txt", "untracked.txt"}},
		{name: "detached commit", script: "git checkout -q --detach; echo d > d.txt; git add d.txt; git commit -qm det; echo e > e.txt",
			files: []string{"d.txt", "e.txt"}, repairs: []string{"HEAD"}},
		{name: "side branch", script: "git checkout -q -b side; echo s > s.txt; git add s.txt; git commit -qm side",
			files: []string{"s.txt"}, repairs: []string{"HEAD"}},
		{name: "HEAD on main", script: "git symbolic-ref HEAD refs/heads/main; echo m > m.txt",
			files: []string{"m.txt"}, repairs: []string{"HEAD"}},
		{name: "HEAD garbage", script: "echo 'not a ref' > \"$(git rev-parse --absolute-git-dir)/HEAD\"; echo w > w.txt",
			files: []string{"w.txt"}, repairs: []string{"HEAD"}},
		{name: "gitfile to a planted repo", script: evil + "echo w > w.txt; printf 'gitdir: %s\\n' \"$T/evil\" > .git",
			files: []string{"w.txt", ".gitattributes"}, repairs: []string{".git"}},
		{name: "gitfile to the user's repo", script: "echo w > w.txt; printf 'gitdir: %s/repo/.git\\n' \"$T\" > .git",
			files: []string{"w.txt"}, repairs: []string{".git"}},
		{name: "commondir to a planted repo", script: evil + "echo w > w.txt; echo \"$T/evil\" > \"$(git rev-parse --absolute-git-dir)/commondir\"",
			files: []string{"w.txt", ".gitattributes"}, repairs: []string{"commondir"}, private: "never"},
		{name: ".git removed, a repository above", script: "echo w > w.txt; rm .git; git init -q ..",
			files: []string{"w.txt"}, repairs: []string{".git"}},
		{name: "branch deleted", script: "echo w > w.txt; git update-ref -d refs/heads/hub/j1",
			files: []string{"w.txt"}, private: "never", repairs: []string{"branch"}},
		{name: "planted hook in its own git dir", private: "only",
			script: "d=$(git rev-parse --absolute-git-dir); mkdir -p $d/hooks; printf '#!/bin/sh\\ntouch %s\\n' \"$MARK\" > $d/hooks/post-checkout; chmod +x $d/hooks/post-checkout; git config core.fsmonitor \"touch $MARK\"; echo w > w.txt",
			files:  []string{"w.txt"}, repairs: []string{"config", "hooks"}},
	}
	for _, layout := range []bool{false, true} {
		name := "linked"
		if layout {
			name = "private"
		}
		t.Run(name, func(t *testing.T) {
			for _, tc := range cases {
				if (tc.private == "only" && !layout) || (tc.private == "never" && layout) {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					f := newCheckout(t, layout, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
					mainBefore := gitT(t, f.repo, "rev-parse", "main")
					indexBefore, _ := os.ReadFile(filepath.Join(f.repo, ".git", "index"))
					f.worker(t, tc.script)
					res, err := f.commit(t)
					if err != nil {
						t.Fatalf("Commit: %v", err)
					}
					if exists(f.mark) {
						t.Error("a program the worker planted ran during hub's commit")
					}
					if got := gitT(t, f.repo, "rev-parse", "hub/j1"); got != res.Head {
						t.Errorf("hub/j1 = %s; the result says %s", got, res.Head)
					}
					for _, p := range tc.files {
						if _, ok := f.onBranch(t, p); !ok {
							t.Errorf("%s is not on hub/j1:\n%s", p, gitT(t, f.repo, "log", "--stat", "hub/j1"))
						}
					}
					if got := gitT(t, f.repo, "rev-parse", "main"); got != mainBefore {
						t.Errorf("main moved: %s → %s", mainBefore, got)
					}
					if after, _ := os.ReadFile(filepath.Join(f.repo, ".git", "index")); string(after) != string(indexBefore) {
						t.Error("the user's index changed")
					}
					gitT(t, f.repo, "fsck", "--full", "--no-dangling")
					for _, w := range tc.repairs {
						if repairOf(res, w) == nil {
							t.Errorf("no repair of %s reported: %+v", w, res.Repairs)
						}
					}
					if len(tc.repairs) == 0 && len(res.Repairs) > 0 {
						t.Errorf("repairs reported for a worker that changed no git state: %+v", res.Repairs)
					}
					// Put back: the worker's own git sees the branch, clean.
					if got := gitT(t, f.c.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/hub/j1" {
						t.Errorf("the checkout's HEAD is %s after the commit", got)
					}
					if got := gitT(t, f.c.Dir, "rev-parse", "HEAD"); got != res.Head {
						t.Errorf("the checkout's HEAD is at %s, the branch at %s", got, res.Head)
					}
					if st := gitT(t, f.c.Dir, "status", "--porcelain"); st != "" {
						t.Errorf("the checkout is not clean after hub's commit:\n%s", st)
					}
					if dirty, err := f.c.Dirty(context.Background(), ""); err != nil || dirty {
						t.Errorf("Dirty() = %v, %v after the commit", dirty, err)
					}
					if exists(f.mark) {
						t.Error("a program the worker planted ran when git was used in the checkout after hub put it back")
					}
					if on, what := f.c.HeadOnBranch(); !on {
						t.Errorf("HeadOnBranch after the commit: %s", what)
					}
				})
			}
		})
	}
}

// TestCheckoutPrivateObjects: a private checkout's worker cannot reach the
// user's objects with its own writes, and what it plants in its own store
// (an object under another's name, an alternate to another repository)
// never reaches the user's repository.
func TestCheckoutPrivateObjects(t *testing.T) {
	f := newCheckout(t, true, map[string]string{"build.sh": "echo real\n"})
	blob := gitT(t, f.repo, "rev-parse", "main:build.sh")
	other := newRepo(t, filepath.Join(f.tmp, "other"), map[string]string{"secret.txt": "other secret\n"})
	otherHead := gitT(t, other, "rev-parse", "HEAD")
	// The worker writes its own object under the id of the user's blob,
	// adds the other repository as an alternate and points its branch at
	// that repository's commit.
	f.worker(t, `fake=$(echo 'echo pwned' | git hash-object -w --stdin)
d=$(git rev-parse --absolute-git-dir)/objects
mkdir -p $d/`+blob[:2]+`
cp $d/$(echo $fake | cut -c1-2)/$(echo $fake | cut -c3-) $d/`+blob[:2]+`/`+blob[2:]+`
echo "`+other+`/.git/objects" >> $d/info/alternates
git update-ref refs/heads/hub/j1 `+otherHead+`
echo w > w.txt`)
	res, err := f.commit(t)
	if err != nil {
		t.Fatal(err)
	}
	if r := repairOf(res, "objects"); r == nil {
		t.Errorf("taking a branch from an alternate the worker planted should fail, and say so: %+v", res.Repairs)
	}
	if repairOf(res, "alternates") == nil {
		t.Errorf("the planted alternate is not reported: %+v", res.Repairs)
	}
	if got := gitT(t, f.repo, "show", "main:build.sh"); got != "echo real" {
		t.Errorf("main:build.sh = %q", got)
	}
	if _, err := exec.Command("git", "-C", f.repo, "cat-file", "-e", otherHead).Output(); err == nil {
		t.Error("the other repository's commit reached the user's repository")
	}
	if _, ok := f.onBranch(t, "w.txt"); !ok {
		t.Error("the worker's file is not on its branch")
	}
	gitT(t, f.repo, "fsck", "--full", "--no-dangling")
	if got := gitT(t, f.c.Dir, "cat-file", "-p", blob); got != "echo real" {
		t.Errorf("after the put-back the checkout still reads the planted object: %q", got)
	}
}

// TestCheckoutImport: commits made in a private checkout reach the user's
// repository and the branch, many objects as a pack, and the checkout's
// own object store is empty afterwards.
func TestCheckoutImport(t *testing.T) {
	f := newCheckout(t, true, nil)
	f.worker(t, `for i in $(seq 1 150); do echo $i > f$i.txt; done; git add -A; git commit -qm many; echo one > one.txt; git add one.txt; git commit -qm one`)
	res, err := f.commit(t)
	if err != nil {
		t.Fatal(err)
	}
	log := gitT(t, f.repo, "log", "--format=%s", "hub/j1")
	if !strings.Contains(log, "many") || !strings.Contains(log, "one") || res.Committed {
		t.Errorf("the worker's commits are not the branch (committed %v):\n%s", res.Committed, log)
	}
	if _, ok := f.onBranch(t, "f150.txt"); !ok {
		t.Error("f150.txt is not on the branch")
	}
	ents, _ := os.ReadDir(filepath.Join(f.c.GitDir, "objects"))
	for _, e := range ents {
		if e.Name() != "info" && e.Name() != "pack" {
			t.Errorf("the private object store still holds %s", e.Name())
		}
	}
	gitT(t, f.repo, "fsck", "--full", "--no-dangling")
}

// TestCheckoutStranded: files written into a submodule folder that is not
// checked out are named, never dropped silently; the rest is committed.
func TestCheckoutStranded(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{".gitmodules": "[submodule \"sub\"]\n\tpath = sub\n\turl = ./nowhere\n"})
		gitT(t, f.repo, "update-index", "--add", "--cacheinfo", "160000,"+f.base+",sub")
		gitT(t, f.repo, "commit", "-qm", "a submodule")
		// A new checkout of the commit with the submodule.
		f.base = gitT(t, f.repo, "rev-parse", "HEAD")
		o := CheckoutOptions{Dir: filepath.Join(f.tmp, "wt2"), Index: filepath.Join(f.tmp, "index2"), Branch: "hub/j1", Base: f.base}
		if private {
			o.PrivateGitDir = filepath.Join(f.tmp, "git2")
		}
		if err := f.c.Remove(context.Background()); err != nil {
			t.Fatal(err)
		}
		gitT(t, f.repo, "branch", "-D", "hub/j1")
		c, err := MakeCheckout(context.Background(), f.r, o)
		if err != nil {
			t.Fatal(err)
		}
		f.c = c
		f.worker(t, "mkdir -p sub; echo lost > sub/inside.txt; echo kept > kept.txt")
		_, err = f.commit(t)
		var se *StrandedError
		if !errors.As(err, &se) || !slices.Contains(se.Paths, "sub/inside.txt") {
			t.Errorf("private=%v: Commit = %v; want a StrandedError naming sub/inside.txt", private, err)
		}
		if _, ok := f.onBranch(t, "kept.txt"); !ok {
			t.Errorf("private=%v: kept.txt is not on the branch", private)
		}
		if !exists(filepath.Join(c.Dir, "sub", "inside.txt")) {
			t.Errorf("private=%v: the stranded file is gone from the worktree", private)
		}
	}
}

// TestCheckoutChanges: hub's live view of a checkout, through its own
// index, whatever the worker's .git says.
func TestCheckoutChanges(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"a.txt": "a\n", "gone.txt": "g\n"})
		f.worker(t, `git init -q --bare "$T/evil"; git -C "$T/evil" config filter.x.clean "sh -c 'touch $MARK; cat'"; echo '* filter=x' > .gitattributes
echo a2 > a.txt; rm gone.txt; echo n > new.txt; git add new.txt; git commit -qm new; echo u > u.txt; printf 'gitdir: %s\n' "$T/evil" > .git`)
		files, err := f.c.Changes(context.Background(), f.base)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range files {
			got = append(got, c.Change+" "+c.Path)
		}
		want := []string{"added .gitattributes", "modified a.txt", "deleted gone.txt", "added new.txt", "added u.txt"}
		if !slices.Equal(got, want) {
			t.Errorf("private=%v: Changes = %v; want %v", private, got, want)
		}
		if exists(f.mark) {
			t.Errorf("private=%v: a planted filter ran", private)
		}
	}
}

// TestCheckoutOversize: a file of the work tree over MaxFileBytes is never
// read by git (no object of it is written), is left out of hub's commit
// and stays in the worktree, and Commit says so; a big file in the
// worker's own commit is named too.
func TestCheckoutOversize(t *testing.T) {
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"tracked.bin": "small\n"})
		big := strings.Repeat("x", 3<<20)
		f.worker(t, "echo kept > kept.txt")
		writeFile(t, filepath.Join(f.c.Dir, "big.bin"), big, 0o644)
		writeFile(t, filepath.Join(f.c.Dir, "tracked.bin"), big+"y", 0o644)
		res, err := f.c.Commit(context.Background(), CommitOptions{Message: "hub: left uncommitted\n\nHub-Job: j1\n", Who: hubIdentity,
			Base: f.base, Scratch: filepath.Join(f.tmp, "hub", "jobs", "j1", "import"), MaxFileBytes: 1 << 20})
		var oe *OversizeError
		if !errors.As(err, &oe) || len(oe.Files) != 2 || !strings.Contains(err.Error(), "big.bin (3.0 MiB)") || !strings.Contains(err.Error(), "tracked.bin") {
			t.Fatalf("private=%v: Commit = %+v, %v; want an OversizeError naming big.bin and tracked.bin", private, res, err)
		}
		if _, ok := f.onBranch(t, "kept.txt"); !ok {
			t.Errorf("private=%v: kept.txt is not on the branch", private)
		}
		if _, ok := f.onBranch(t, "big.bin"); ok {
			t.Errorf("private=%v: big.bin is on the branch", private)
		}
		if got, _ := f.onBranch(t, "tracked.bin"); got != "small\n" {
			t.Errorf("private=%v: tracked.bin on the branch is %d bytes, want the base's", private, len(got))
		}
		if !exists(filepath.Join(f.c.Dir, "big.bin")) {
			t.Errorf("private=%v: big.bin is gone from the worktree", private)
		}
		sha := gitT(t, f.repo, "hash-object", filepath.Join(f.c.Dir, "big.bin"))
		if err := exec.Command("git", "-C", f.repo, "cat-file", "-e", sha).Run(); err == nil {
			t.Errorf("private=%v: git wrote an object of big.bin into the repository", private)
		}
	}
	// The worker commits a big file itself (worktree level: in place).
	f := newCheckout(t, false, map[string]string{"a.txt": "a\n"})
	writeFile(t, filepath.Join(f.c.Dir, "huge.bin"), strings.Repeat("z", 2<<20), 0o644)
	f.worker(t, "git add huge.bin && git commit -qm huge")
	_, err := f.c.Commit(context.Background(), CommitOptions{Message: "m\n", Who: hubIdentity, Base: f.base, MaxFileBytes: 1 << 20})
	var oe *OversizeError
	if !errors.As(err, &oe) || len(oe.Files) != 1 || !oe.Files[0].Committed || !strings.Contains(err.Error(), "the worker's own commits hold huge.bin") {
		t.Errorf("a big file in the worker's commit: %v", err)
	}
}
