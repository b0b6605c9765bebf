package gitx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func skipOf(skips []IncludeSkip, path string) string {
	for _, s := range skips {
		if s.Path == path {
			return s.Why
		}
	}
	return ""
}

// TestPlanInclude: a file is chosen only when .worktreeinclude matches it
// and the standard rules (.gitignore, info/exclude, core.excludesFile)
// ignore it, and never when it is tracked in the user's HEAD or in the
// job's base.
func TestPlanInclude(t *testing.T) {
	ctx := context.Background()
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{
		"README":       "hello\n",
		"base-only.db": "in the base only\n",
		".gitignore":   ".env\n*.secret\nconfig/local.json\ntracked.secret\ndeps/\n",
	})
	base := gitT(t, repo, "rev-parse", "HEAD")
	// base-only.db: tracked in the base, since removed and ignored.
	gitT(t, repo, "rm", "-q", "--cached", "base-only.db")
	writeFile(t, filepath.Join(repo, ".gitignore"), ".env\n*.secret\nconfig/local.json\ntracked.secret\ndeps/\nbase-only.db\n", 0o644)
	commitFixture(t, repo, "untrack base-only.db")
	// tracked.secret: ignored, but in HEAD (force-added), and out of the index.
	writeFile(t, filepath.Join(repo, "tracked.secret"), "committed\n", 0o644)
	gitT(t, repo, "add", "-f", "tracked.secret")
	commitFixture(t, repo, "force-add tracked.secret")
	gitT(t, repo, "rm", "-q", "--cached", "tracked.secret")

	writeFile(t, filepath.Join(repo, ".git", "info", "exclude"), "excluded.txt\n", 0o644)
	global := filepath.Join(tmp, "global-ignore")
	writeFile(t, global, "global.txt\n", 0o644)
	gitT(t, repo, "config", "core.excludesFile", global)
	for _, f := range []string{".env", "a.secret", "config/local.json", "excluded.txt", "global.txt",
		"notignored.txt", "unlisted.secret2", "deps/x/y.js"} {
		writeFile(t, filepath.Join(repo, f), "content of "+f+"\n", 0o644)
	}
	writeFile(t, filepath.Join(repo, ".worktreeinclude"),
		"# local files\n.env\n*.secret\n/config/local.json\nexcluded.txt\nglobal.txt\nnotignored.txt\nbase-only.*\ndeps/\n\n", 0o644)
	r := mustOpen(t, repo)

	plan, err := PlanInclude(ctx, r, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", "a.secret", "config/local.json", "deps/x/y.js", "excluded.txt", "global.txt"}
	if diff := cmp.Diff(want, plan.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	for path, why := range map[string]string{
		"notignored.txt": "not ignored by .gitignore",
		"tracked.secret": "tracked in the user's HEAD",
		"base-only.db":   "tracked in the job's base commit",
	} {
		if got := skipOf(plan.Skipped, path); !strings.Contains(got, why) {
			t.Errorf("skipped %s: %q, want it to say %q (all: %v)", path, got, why, plan.Skipped)
		}
	}
	if skipOf(plan.Skipped, "unlisted.secret2") != "" || slices.Contains(plan.Paths, "unlisted.secret2") {
		t.Error("a file .worktreeinclude does not list was looked at")
	}

	// No .worktreeinclude: nothing, no error.
	os.Remove(filepath.Join(repo, ".worktreeinclude"))
	if plan, err := PlanInclude(ctx, r, base); err != nil || len(plan.Paths)+len(plan.Skipped) != 0 {
		t.Errorf("without .worktreeinclude: %+v, %v", plan, err)
	}
}

// TestCheckInclude: patterns that name a tracked file, or point outside
// the repository, are refused with the line and the fix; globs and
// anchored patterns are fine.
func TestCheckInclude(t *testing.T) {
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{"README": "hi\n", "config/app.json": "{}\n", "old.txt": "old\n"})
	base := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "rm", "-q", "old.txt")
	commitFixture(t, repo, "drop old.txt")
	r := mustOpen(t, repo)
	where := filepath.Join(repo, IncludeFile)
	for _, tt := range []struct{ body, want string }{
		{".env\n*.json\n/.env\n!README\nconfig/\nconfig/*.local\n", ""},
		{".env\nREADME\n", where + ` line 2: "README" names README, a file tracked in HEAD; tracked files are already in every worktree and .worktreeinclude is for gitignored ones: take that line out`},
		{"/config/app.json\n", `"/config/app.json" names config/app.json, a file tracked in HEAD`},
		{"old.txt\n", `"old.txt" names old.txt, a file tracked in commit ` + base[:12]},
		{"../x\n", where + ` line 1: "../x" points outside the repository (a ".." component); patterns name files by their path from the repository's top (a leading / anchors a pattern there), such as config/local.json`},
		{"a/../../x\n", `points outside the repository`},
		{"/etc/passwd\n", `line 1: "/etc/passwd" is an absolute path, outside the repository`},
		{repo + "/.env\n", `is an absolute path (the repository's own); write it relative to the repository's top`},
		{"~/.env\n", `names a home folder, outside the repository`},
	} {
		writeFile(t, where, tt.body, 0o644)
		err := r.CheckInclude("HEAD", base)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tt.body, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.body, err, tt.want)
		}
		// PlanInclude refuses the same (at preparing, if the file changed).
		if _, perr := PlanInclude(context.Background(), r, base); (perr == nil) != (err == nil) {
			t.Errorf("%q: PlanInclude %v, CheckInclude %v", tt.body, perr, err)
		}
	}
}

// TestCopyIncluded: files keep their mode and path, folders are made, no
// symlink is followed out of either tree, and nothing of the job's tree
// is overwritten.
func TestCopyIncluded(t *testing.T) {
	f := newCheckout(t, false, map[string]string{"README": "the base's\n", "wlink": "x\n"})
	top := f.repo
	outside := filepath.Join(f.tmp, "outside")
	writeFile(t, filepath.Join(outside, "secret"), "outside\n", 0o644)
	writeFile(t, filepath.Join(top, ".env"), "API_TOKEN=x\n", 0o600)
	writeFile(t, filepath.Join(top, "deep/a/b/c.json"), "{}\n", 0o640)
	writeFile(t, filepath.Join(top, "run.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(top, "real/target.txt"), "target\n", 0o644)
	writeFile(t, filepath.Join(top, "README"), "the user's\n", 0o644)
	writeFile(t, filepath.Join(top, "wdir/x"), "x\n", 0o644)
	mk := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			t.Fatal(err)
		}
	}
	mk("real/target.txt", "rel-link")
	mk(filepath.Join(top, "real", "target.txt"), "abs-link")
	mk(filepath.Join(outside, "secret"), "out-link")
	mk("../outside/secret", "up-link")
	mk(outside, "out-dir")
	mk("real", "in-dir")
	mk(".git/config", "git-link")
	mk("nowhere", "dangling")
	// In the job's tree, wlink is a file: wlink/... has no folder there.
	writeFile(t, filepath.Join(top, "wlinkdir/f"), "f\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(f.c.Dir, "wdir")); err != nil {
		t.Fatal(err)
	}

	plan := &IncludePlan{Top: top, Paths: []string{".env", "README", "abs-link", "dangling", "deep/a/b/c.json", "git-link",
		"in-dir/target.txt", "out-dir/secret", "out-link", "real/target.txt", "rel-link", "run.sh", "up-link", "wdir/x", "wlink/y"}}
	res, err := f.c.CopyIncluded(plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", "abs-link", "deep/a/b/c.json", "real/target.txt", "rel-link", "run.sh"}
	if diff := cmp.Diff(want, res.Copied); diff != "" {
		t.Errorf("copied (-want +got):\n%s\nskipped: %v", diff, res.Skipped)
	}
	for path, why := range map[string]string{
		"README":            "file exists",
		"dangling":          "does not resolve",
		"git-link":          "git dir",
		"in-dir/target.txt": "its folder in-dir is a symlink in your checkout",
		"out-dir/secret":    "its folder out-dir is a symlink in your checkout",
		"out-link":          "outside your checkout",
		"up-link":           "outside your checkout",
		"wdir/x":            "its folder wdir is a symlink in the job's worktree",
		"wlink/y":           "",
	} {
		if got := skipOf(res.Skipped, path); got == "" || !strings.Contains(got, why) {
			t.Errorf("skipped %s: %q, want it to say %q", path, got, why)
		}
	}
	for path, mode := range map[string]os.FileMode{".env": 0o600, "deep/a/b/c.json": 0o640, "run.sh": 0o755} {
		fi, err := os.Lstat(filepath.Join(f.c.Dir, path))
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, mode)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.c.Dir, "README")); string(b) != "the base's\n" {
		t.Errorf("README in the job's tree is %q: a tracked file was overwritten", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "x")); err == nil {
		t.Error("a file was written through the job tree's symlink")
	}
	for _, link := range []string{"rel-link", "abs-link"} {
		target, err := os.Readlink(filepath.Join(f.c.Dir, link))
		if err != nil || target != "real/target.txt" {
			t.Errorf("%s: %q %v, want a link to real/target.txt inside the job's tree", link, target, err)
		}
		if b, _ := os.ReadFile(filepath.Join(f.c.Dir, link)); string(b) != "target\n" {
			t.Errorf("%s reads %q", link, b)
		}
	}
	list, _ := os.ReadFile(f.c.includedList())
	if got := strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00"); !slices.Equal(got, plan.Paths) {
		t.Errorf("recorded %q, want %q", got, plan.Paths)
	}
	if strings.HasPrefix(f.c.includedList(), f.c.Dir) || strings.HasPrefix(f.c.includedList(), f.c.GitDir) {
		t.Errorf("the list %s is where the worker writes", f.c.includedList())
	}
}

// TestCommitLeavesIncludedOut: hub's commit never holds a copied file,
// whatever the worker does to it or to the ignore rules, at every layout
// (a private checkout is the isolated levels').
func TestCommitLeavesIncludedOut(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("private=%v", private), func(t *testing.T) {
			f := newCheckout(t, private, map[string]string{"README": "hi\n", ".gitignore": ".env\nconfig/\n"})
			writeFile(t, filepath.Join(f.repo, ".env"), "API_TOKEN=canary-5f3a9c2e7b1d\n", 0o600)
			writeFile(t, filepath.Join(f.repo, "config/local.json"), "{}\n", 0o644)
			writeFile(t, filepath.Join(f.repo, IncludeFile), ".env\nconfig/\n", 0o644)
			plan, err := PlanInclude(context.Background(), f.r, f.base)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.c.CopyIncluded(plan)
			if err != nil || len(res.Copied) != 2 {
				t.Fatalf("copied %v (%v), skipped %v", res.Copied, err, res.Skipped)
			}
			f.worker(t, `grep -q canary .env
printf '!.env\n!config/\n' >> .gitignore
echo MORE=1 >> .env
echo '{"x":1}' > config/local.json
echo new > new.txt
git add -A`)
			cres, err := f.commit(t)
			if err != nil || !cres.Committed {
				t.Fatalf("commit: %+v %v", cres, err)
			}
			for _, p := range []string{".env", "config/local.json"} {
				if _, ok := f.onBranch(t, p); ok {
					t.Errorf("%s is on the branch", p)
				}
			}
			if b, ok := f.onBranch(t, "new.txt"); !ok || b != "new\n" {
				t.Errorf("new.txt on the branch: %q %v", b, ok)
			}
			if b, _ := f.onBranch(t, ".gitignore"); !strings.Contains(b, "!.env") {
				t.Errorf(".gitignore on the branch: %q", b)
			}
			// A second commit (a salvage after more work) leaves them out too.
			f.worker(t, `echo again >> .env; echo more > new2.txt`)
			if _, err := f.commit(t); err != nil {
				t.Fatal(err)
			}
			if _, ok := f.onBranch(t, ".env"); ok {
				t.Error(".env is on the branch after a second commit")
			}
			if _, ok := f.onBranch(t, "new2.txt"); !ok {
				t.Error("new2.txt is not on the branch")
			}
		})
	}
}

// TestCopyIncludedManyFiles times the copy of 2,000 small files (the
// number goes to the test log: go test -v -run ManyFiles).
func TestCopyIncludedManyFiles(t *testing.T) {
	f := newCheckout(t, false, map[string]string{"README": "hi\n", ".gitignore": "cache/\n"})
	const n = 2000
	for i := range n {
		writeFile(t, filepath.Join(f.repo, "cache", fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i)), strings.Repeat("x", 200), 0o644)
	}
	writeFile(t, filepath.Join(f.repo, IncludeFile), "cache/\n", 0o644)
	t0 := time.Now()
	plan, err := PlanInclude(context.Background(), f.r, f.base)
	if err != nil || len(plan.Paths) != n {
		t.Fatalf("plan: %d paths, %v", len(plan.Paths), err)
	}
	t1 := time.Now()
	res, err := f.c.CopyIncluded(plan)
	if err != nil || len(res.Copied) != n {
		t.Fatalf("copied %d, %v; skipped %v", len(res.Copied), err, bounded(res.Skipped, 3))
	}
	t2 := time.Now()
	f.worker(t, `git add -A 2>/dev/null || true`)
	if _, err := f.commit(t); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files: select %v, copy %v, hub's commit leaving them out %v", n, t1.Sub(t0), t2.Sub(t1), time.Since(t2))
	if out := gitT(t, f.repo, "ls-tree", "-r", "--name-only", "hub/j1"); strings.Contains(out, "cache/") {
		t.Error("copied files are on the branch")
	}
}

func bounded[T any](s []T, n int) []T { return s[:min(n, len(s))] }
