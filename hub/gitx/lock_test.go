package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestLockRepo(t *testing.T) {
	repo := newRepo(t, t.TempDir(), nil)
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, repo, "worktree", "add", "-q", "--detach", wt)
	r, viaWorktree := mustOpen(t, repo), mustOpen(t, wt)
	lockDir := filepath.Join(t.TempDir(), "locks")
	before := gitT(t, repo, "status", "--porcelain", "--ignored")

	unlock, err := LockRepo(context.Background(), lockDir, r)
	if err != nil {
		t.Fatal(err)
	}

	// A second locker, even in this process and even through a linked
	// worktree of the same repo, waits for the first.
	for name, other := range map[string]*Repo{"same repo": r, "linked worktree": viaWorktree} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		u, err := LockRepo(ctx, lockDir, other)
		cancel()
		if err == nil {
			u()
			t.Fatalf("%s: a second LockRepo got the lock while the first held it", name)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: second LockRepo error %v; want context.DeadlineExceeded", name, err)
		}
	}

	got := make(chan error, 1)
	go func() {
		u, err := LockRepo(context.Background(), lockDir, viaWorktree)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a waiting LockRepo returned (%v) before the unlock", err)
	case <-time.After(30 * time.Millisecond):
	}
	unlock()
	unlock() // twice is harmless
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting LockRepo after unlock: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting LockRepo did not get the lock after unlock")
	}

	fi, err := os.Stat(lockDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("lock dir mode %v, want 0700", fi.Mode().Perm())
	}
	ents, err := os.ReadDir(lockDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || !regexp.MustCompile(`^[0-9a-f]{16}\.lock$`).MatchString(ents[0].Name()) {
		t.Errorf("lock dir holds %v; want one <16 hex>.lock file", ents)
	}
	if after := gitT(t, repo, "status", "--porcelain", "--ignored"); after != before {
		t.Errorf("LockRepo changed the repo: status %q, was %q", after, before)
	}

	other := mustOpen(t, newRepo(t, t.TempDir(), nil))
	u1, err := LockRepo(context.Background(), lockDir, r)
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	u2, err := LockRepo(ctx, lockDir, other)
	if err != nil {
		t.Fatalf("another repo's lock: %v", err)
	}
	u2()
}
