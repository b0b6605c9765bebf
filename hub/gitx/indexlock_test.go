package gitx

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestClearStaleIndexLock: the index.lock a killed git left is removed and
// the commit goes through; one a live process holds open stays.
func TestClearStaleIndexLock(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, t.TempDir(), map[string]string{"a.txt": "a\n"})
	lock := filepath.Join(repo, ".git", "index.lock")
	writeFile(t, filepath.Join(repo, "b.txt"), "b\n", 0o644)

	// Held open (here, by this test): left alone, and the commit still fails.
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	if cleared, err := ClearStaleIndexLock(ctx, repo); cleared || err != nil {
		t.Fatalf("a lock held open: cleared=%v, %v", cleared, err)
	}
	if _, _, err := CommitAll(ctx, repo, "b", hubIdentity); err == nil {
		t.Fatal("CommitAll succeeded past a held index.lock")
	}
	// Its holder gone: stale, removed, and the commit goes through.
	f.Close()
	if cleared, err := ClearStaleIndexLock(ctx, repo); !cleared || err != nil {
		t.Fatalf("a stale lock: cleared=%v, %v", cleared, err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the stale lock is still there: %v", err)
	}
	if _, committed, err := CommitAll(ctx, repo, "b", hubIdentity); err != nil || !committed {
		t.Fatalf("CommitAll after clearing: %v, %v", committed, err)
	}
	if cleared, err := ClearStaleIndexLock(ctx, repo); cleared || err != nil {
		t.Fatalf("no lock: cleared=%v, %v", cleared, err)
	}
}
