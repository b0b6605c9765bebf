package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOverlap(t *testing.T) {
	cases := []struct {
		a, b []string
		want bool
	}{
		{nil, []string{"a"}, false},
		{[]string{"a.go"}, []string{"b.go"}, false},
		{[]string{"a.go", "x/y.go"}, []string{"x/y.go"}, true},
		{[]string{"x"}, []string{"x/y.go"}, true},  // a file where the other made a folder
		{[]string{"x/y/z"}, []string{"x/y"}, true}, // and the other way round
		{[]string{"x/y.go"}, []string{"x/z.go"}, false},
		{[]string{"xy/z"}, []string{"x"}, false}, // a prefix of a name is not a folder
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// objectCount is how many loose and packed objects the repository holds.
func objectCount(t *testing.T, repo string) string {
	t.Helper()
	return gitT(t, repo, "count-objects", "-v")
}

// TestSnapshotAndConflicts: a work tree in progress — an edit, a new file,
// nothing committed — is snapshot into the scratch store as a commit on
// its base, the same content giving the same commit; conflicts are read
// from it; and nothing of the user's repository or the checkout changes.
func TestSnapshotAndConflicts(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(map[bool]string{false: "linked", true: "private"}[private], func(t *testing.T) {
			ctx := context.Background()
			f := newCheckout(t, private, map[string]string{"a.txt": "1\n2\n3\n", "b.txt": "b\n"})
			f.worker(t, `printf '1\nworker\n3\n' > a.txt; echo new > n.txt`)
			index, _ := os.ReadFile(f.c.Index)
			objects := objectCount(t, f.repo)
			refs := gitT(t, f.repo, "for-each-ref")
			sc := &Scratch{Repo: f.r, Dir: filepath.Join(f.tmp, "scratch")}
			defer sc.Remove()
			idx := filepath.Join(f.tmp, "scratch", "index-j1")
			snap, err := sc.Snapshot(ctx, f.c, f.base, idx)
			if err != nil {
				t.Fatal(err)
			}
			again, err := sc.Snapshot(ctx, f.c, f.base, idx)
			if err != nil || again != snap {
				t.Errorf("the same work tree snapshot twice: %s then %s (%v)", snap, again, err)
			}
			touched, err := sc.Touched(ctx, f.base, snap)
			if err != nil || !slices.Equal(touched, []string{"a.txt", "n.txt"}) {
				t.Errorf("touched %v (%v)", touched, err)
			}
			// The user moves main onto the same line: a conflict; on another line: none.
			gitT(t, f.repo, "switch", "-q", "-c", "other")
			writeFile(t, filepath.Join(f.repo, "a.txt"), "1\nuser\n3\n", 0o644)
			same := commitFixture(t, f.repo, "same line")
			gitT(t, f.repo, "switch", "-q", "-c", "apart", f.base)
			writeFile(t, filepath.Join(f.repo, "b.txt"), "user\n", 0o644)
			apart := commitFixture(t, f.repo, "another file")
			objects = objectCount(t, f.repo)
			if files, err := sc.Conflicts(ctx, same, snap); err != nil || !slices.Equal(files, []string{"a.txt"}) {
				t.Errorf("conflicts with the same line: %v (%v)", files, err)
			}
			if files, err := sc.Conflicts(ctx, apart, snap); err != nil || len(files) != 0 {
				t.Errorf("conflicts with another file: %v (%v)", files, err)
			}
			if after, _ := os.ReadFile(f.c.Index); string(after) != string(index) {
				t.Error("the snapshot wrote hub's index")
			}
			if got := objectCount(t, f.repo); got != objects {
				t.Errorf("the user's repository gained objects:\n%s\nwas\n%s", got, objects)
			}
			if got := gitT(t, f.repo, "for-each-ref"); !strings.Contains(got, "refs/heads/apart") || strings.Contains(got, snap) {
				t.Errorf("refs after the forecast: %s (before %s)", got, refs)
			}
			if b, _ := os.ReadFile(filepath.Join(f.c.Dir, "a.txt")); string(b) != "1\nworker\n3\n" {
				t.Errorf("the work tree changed: %q", b)
			}
		})
	}
}

// TestSnapshotSameSizeEdit: an edit that leaves a file's size, inode and
// mtime as hub's index recorded them, made in the second that index was
// written, is in the snapshot. Only git's racy-entry check (an entry as
// new as its index is read again) tells it apart, so the scratch index
// copied from hub's must keep that index's time. (Git compares ctime in
// whole seconds: the worker's edit in the checkout's second is this case;
// the test turns ctime off to make that second certain.)
func TestSnapshotSameSizeEdit(t *testing.T) {
	ctx := context.Background()
	global := filepath.Join(t.TempDir(), "gitconfig")
	writeFile(t, global, "[core]\n\ttrustctime = false\n", 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	f := newCheckout(t, false, map[string]string{"bug.txt": "broken\n"})
	file := filepath.Join(f.c.Dir, "bug.txt")
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(file, at, at); err != nil {
		t.Fatal(err)
	}
	// hub's index records the file at that time; then its own time is the same second.
	if _, err := runGit(ctx, f.c.Dir, f.c.hubOpts(), "update-index", "--refresh"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.c.Index, at, at); err != nil {
		t.Fatal(err)
	}
	// The worker's edit: same size, same inode, the old mtime put back.
	if err := os.WriteFile(file, []byte("mended\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, at, at); err != nil {
		t.Fatal(err)
	}
	sc := &Scratch{Repo: f.r, Dir: filepath.Join(f.tmp, "scratch")}
	defer sc.Remove()
	snap, err := sc.Snapshot(ctx, f.c, f.base, filepath.Join(sc.Dir, "index-j1"))
	if err != nil {
		t.Fatal(err)
	}
	if touched, err := sc.Touched(ctx, f.base, snap); err != nil || !slices.Equal(touched, []string{"bug.txt"}) {
		t.Errorf("touched %v (%v): the same-size edit is not in the snapshot", touched, err)
	}
	// And hub's own commit of the work tree has it too.
	res, err := f.commit(t)
	if err != nil || !res.Committed || gitT(t, f.repo, "show", res.Head+":bug.txt") != "mended" {
		t.Errorf("hub's commit: %+v (%v)", res, err)
	}
}

// TestIntegrateAndMove: the landing commit is made without a checkout, a
// conflict makes none, and the branch moves only from the tip it was made on.
func TestIntegrateAndMove(t *testing.T) {
	ctx := context.Background()
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{"a.txt": "1\n2\n3\n"})
	r := mustOpen(t, repo)
	base := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "switch", "-q", "-c", "x")
	writeFile(t, filepath.Join(repo, "x.txt"), "x\n", 0o644)
	x := commitFixture(t, repo, "x")
	gitT(t, repo, "switch", "-q", "-c", "y", base)
	writeFile(t, filepath.Join(repo, "a.txt"), "1\ny\n3\n", 0o644)
	y := commitFixture(t, repo, "y")
	gitT(t, repo, "switch", "-q", "-c", "z", base)
	writeFile(t, filepath.Join(repo, "a.txt"), "1\nz\n3\n", 0o644)
	z := commitFixture(t, repo, "z")
	gitT(t, repo, "switch", "-q", "main")

	merged, files, err := Integrate(ctx, r, base, x, false, "merge x\n", hubIdentity)
	if err != nil || len(files) > 0 {
		t.Fatal(err, files)
	}
	if parents := gitT(t, repo, "rev-list", "--parents", "-n1", merged); parents != merged+" "+base+" "+x {
		t.Errorf("merge parents: %s", parents)
	}
	squashed, _, err := Integrate(ctx, r, merged, y, true, "squash y\n", hubIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if parents := gitT(t, repo, "rev-list", "--parents", "-n1", squashed); parents != squashed+" "+merged {
		t.Errorf("squash parents: %s", parents)
	}
	if got := gitT(t, repo, "show", squashed+":a.txt"); got != "1\ny\n3" {
		t.Errorf("squashed a.txt: %q", got)
	}
	if c, files, err := Integrate(ctx, r, squashed, z, false, "z\n", hubIdentity); err != nil || c != "" || !slices.Equal(files, []string{"a.txt"}) {
		t.Errorf("a conflicting integration: %q %v %v", c, files, err)
	}
	// main is checked out in the repository's own work tree.
	if dirs, err := CheckedOut(ctx, r, "main"); err != nil || len(dirs) != 1 || dirs[0] != repo {
		t.Errorf("main checked out in %v (%v)", dirs, err)
	}
	if dirs, _ := CheckedOut(ctx, r, "x"); len(dirs) != 0 {
		t.Errorf("x checked out in %v", dirs)
	}
	// The branch moves only from the tip the commit was made on.
	if err := MoveBranch(ctx, r, "x", squashed, base, "test"); err == nil {
		t.Error("x moved though it was not at the expected tip")
	}
	if got := gitT(t, repo, "rev-parse", "x"); got != x {
		t.Errorf("x is at %s after a refused move", got)
	}
	if err := MoveBranch(ctx, r, "x", squashed, x, "test"); err != nil {
		t.Error(err)
	}
	if err := FastForward(ctx, repo, squashed); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "rev-parse", "main"); got != squashed {
		t.Errorf("main at %s after the fast-forward", got)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "x.txt")); string(b) != "x\n" {
		t.Errorf("the checkout's x.txt: %q", b)
	}
}

// TestScratchFresh: a scratch store answers before anything was written to it.
func TestScratchFresh(t *testing.T) {
	ctx := context.Background()
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{"a.txt": "a\n"})
	base := gitT(t, repo, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(repo, "a.txt"), "b\n", 0o644)
	head := commitFixture(t, repo, "b")
	sc := &Scratch{Repo: mustOpen(t, repo), Dir: filepath.Join(tmp, "fresh")}
	if got, err := sc.Touched(ctx, base, head); err != nil || !slices.Equal(got, []string{"a.txt"}) {
		t.Errorf("touched in a fresh scratch store: %v (%v)", got, err)
	}
	sc2 := &Scratch{Repo: sc.Repo, Dir: filepath.Join(tmp, "fresh2")}
	if got, err := sc2.Conflicts(ctx, base, head); err != nil || len(got) != 0 {
		t.Errorf("conflicts in a fresh scratch store: %v (%v)", got, err)
	}
}

// TestReplay: a branch's commits replayed on a moved tip, each with its
// message and author, no ref moved and no work tree left; a commit that
// does not apply gives its files and no commit; merges are refused.
func TestReplay(t *testing.T) {
	ctx := context.Background()
	tmp := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(tmp, "repo"), map[string]string{"a.txt": "1\n2\n3\n"})
	r := mustOpen(t, repo)
	base := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "switch", "-q", "-c", "job", base)
	writeFile(t, filepath.Join(repo, "j1.txt"), "one\n", 0o644)
	commitFixture(t, repo, "first")
	writeFile(t, filepath.Join(repo, "j2.txt"), "two\n", 0o644)
	job := commitFixture(t, repo, "second")
	gitT(t, repo, "switch", "-q", "main")
	writeFile(t, filepath.Join(repo, "m.txt"), "main\n", 0o644)
	tip := commitFixture(t, repo, "main moved")
	refs := gitT(t, repo, "for-each-ref")
	dir := filepath.Join(tmp, "hub", "worktrees", "j.land")
	// A replay that died half-way left its worktree: the next one clears it.
	gitT(t, repo, "worktree", "add", "-q", "--detach", dir, base)
	writeFile(t, filepath.Join(dir, "half.txt"), "half\n", 0o644)
	got, files, err := Replay(ctx, r, dir, tip, job, hubIdentity)
	if err != nil || len(files) > 0 {
		t.Fatal(err, files)
	}
	if log := gitT(t, repo, "log", "--format=%s", tip+".."+got); log != "second\nfirst" {
		t.Errorf("replayed: %q", log)
	}
	if parents := gitT(t, repo, "rev-list", "--parents", "-n1", got+"~1"); !strings.HasSuffix(parents, " "+tip) {
		t.Errorf("the first replayed commit's parent: %s", parents)
	}
	if gitT(t, repo, "for-each-ref") != refs || exists(dir) || strings.Contains(gitT(t, repo, "worktree", "list"), "j.land") {
		t.Error("a replay left a ref moved, or its work tree behind")
	}
	// A commit that does not apply.
	gitT(t, repo, "switch", "-q", "-c", "clash", base)
	writeFile(t, filepath.Join(repo, "a.txt"), "1\nclash\n3\n", 0o644)
	clash := commitFixture(t, repo, "clash")
	gitT(t, repo, "switch", "-q", "main")
	writeFile(t, filepath.Join(repo, "a.txt"), "1\nmain\n3\n", 0o644)
	tip2 := commitFixture(t, repo, "main on a.txt")
	if c, files, err := Replay(ctx, r, dir, tip2, clash, hubIdentity); err != nil || c != "" || !slices.Equal(files, []string{"a.txt"}) || exists(dir) {
		t.Errorf("a clash: %q %v %v", c, files, err)
	}
	// A branch with a merge.
	gitT(t, repo, "switch", "-q", "-c", "merged", job)
	gitT(t, repo, "merge", "-q", "--no-edit", "--no-ff", "clash")
	merged := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "switch", "-q", "main")
	if _, _, err := Replay(ctx, r, dir, tip2, merged, hubIdentity); !errors.Is(err, ErrHasMerges) {
		t.Errorf("a branch with a merge: %v", err)
	}
}
