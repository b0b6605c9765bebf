package gitx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// What the git boundary costs, as ratios `make bench` reads: hub's commit
// of a worker's changes (pinned to hub's paths, its own index, the worker's
// git state put back; from a private checkout with the worker's own commit
// imported) against the commit hub made before it (git add -A and git
// commit in the worktree, through its .git), and making a checkout (linked
// with hub's index, private) against a bare `git worktree add`. The
// repository has 2,000 files of about 400 bytes in 40 folders, one commit;
// each change rewrites 10 of them and adds one.

const benchFiles = 2000

func benchRepo(b *testing.B) (*Repo, string) {
	b.Helper()
	files := map[string]string{}
	for i := range benchFiles {
		files[fmt.Sprintf("pkg%02d/f%04d.go", i%40, i)] = fmt.Sprintf("package pkg%02d\n\n// %0400d\nvar V%d = %d\n", i%40, i, i, i)
	}
	repo := newRepo(b, filepath.Join(b.TempDir(), "repo"), files)
	r := mustOpen(b, repo)
	base, err := r.Resolve("")
	if err != nil {
		b.Fatal(err)
	}
	return r, base
}

// change is what a worker leaves: 10 files rewritten, one added.
func change(b *testing.B, dir string, n int) {
	b.Helper()
	for i := range 10 {
		writeFile(b, filepath.Join(dir, fmt.Sprintf("pkg%02d/f%04d.go", i, i*40+i)), fmt.Sprintf("package pkg%02d\n// change %d\n", i, n), 0o644)
	}
	writeFile(b, filepath.Join(dir, fmt.Sprintf("new/n%d.go", n)), "package new\n", 0o644)
}

func benchCheckout(b *testing.B, r *Repo, base string, private bool, n int) *Checkout {
	b.Helper()
	tmp := b.TempDir()
	o := CheckoutOptions{Dir: filepath.Join(tmp, "wt"), Index: filepath.Join(tmp, "index"), Branch: fmt.Sprintf("hub/b%d", n), Base: base}
	if private {
		o.PrivateGitDir = filepath.Join(tmp, "git")
	}
	c, err := MakeCheckout(context.Background(), r, o)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchCommit(b *testing.B, private bool) {
	r, base := benchRepo(b)
	c := benchCheckout(b, r, base, private, 0)
	scratch := filepath.Join(b.TempDir(), "import")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		change(b, c.Dir, i)
		if private { // the worker's own commit of one file, in its store
			gitT(b, c.Dir, "add", fmt.Sprintf("new/n%d.go", i))
			gitT(b, c.Dir, "commit", "-q", "-m", "worker")
		}
		b.StartTimer()
		if _, err := c.Commit(context.Background(), CommitOptions{Message: "hub", Who: hubIdentity, Base: base, Scratch: scratch}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCommitLinked(b *testing.B)  { benchCommit(b, false) }
func BenchmarkCommitPrivate(b *testing.B) { benchCommit(b, true) }

// BenchmarkCommitAll is the floor: the commit as hub made it before the
// git boundary.
func BenchmarkCommitAll(b *testing.B) {
	r, base := benchRepo(b)
	wt := filepath.Join(b.TempDir(), "wt")
	if err := AddWorktree(context.Background(), r, wt, "hub/floor", base); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		change(b, wt, i)
		b.StartTimer()
		if _, _, err := CommitAll(context.Background(), wt, "hub", hubIdentity); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMake(b *testing.B, private bool) {
	r, base := benchRepo(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := benchCheckout(b, r, base, private, i)
		b.StopTimer()
		if err := c.Remove(context.Background()); err != nil {
			b.Fatal(err)
		}
		_ = DeleteBranch(context.Background(), r, c.Branch)
		b.StartTimer()
	}
}

func BenchmarkCheckoutLinked(b *testing.B)  { benchMake(b, false) }
func BenchmarkCheckoutPrivate(b *testing.B) { benchMake(b, true) }

// BenchmarkWorktreeAdd is the floor: a bare `git worktree add -b`.
func BenchmarkWorktreeAdd(b *testing.B) {
	r, base := benchRepo(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		wt := filepath.Join(b.TempDir(), "wt")
		if err := AddWorktree(context.Background(), r, wt, fmt.Sprintf("hub/f%d", i), base); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := RemoveWorktree(context.Background(), r, wt, true); err != nil {
			b.Fatal(err)
		}
		_ = DeleteBranch(context.Background(), r, fmt.Sprintf("hub/f%d", i))
		_ = os.RemoveAll(wt)
		b.StartTimer()
	}
}
