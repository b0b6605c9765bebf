package gitx

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestClearStaleIndexLock: the lock of hub's index a killed git left is
// removed and the commit goes through; one a live process holds open stays.
func TestClearStaleIndexLock(t *testing.T) {
	ctx := context.Background()
	f := newCheckout(t, false, map[string]string{"a.txt": "a\n"})
	lock := f.c.Index + ".lock"
	writeFile(t, filepath.Join(f.c.Dir, "b.txt"), "b\n", 0o644)
	commit := func() (bool, error) {
		res, err := f.commit(t)
		return res.Committed, err
	}

	// Held open (here, by this test): left alone, and the commit still fails.
	lf, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	if cleared, err := ClearStaleIndexLock(ctx, f.c); cleared || err != nil {
		t.Fatalf("a lock held open: cleared=%v, %v", cleared, err)
	}
	if _, err := commit(); err == nil {
		t.Fatal("Commit succeeded past a held index.lock")
	}
	// Its holder gone: stale, removed, and the commit goes through.
	lf.Close()
	if cleared, err := ClearStaleIndexLock(ctx, f.c); !cleared || err != nil {
		t.Fatalf("a stale lock: cleared=%v, %v", cleared, err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the stale lock is still there: %v", err)
	}
	if committed, err := commit(); err != nil || !committed {
		t.Fatalf("Commit after clearing: %v, %v", committed, err)
	}
	if cleared, err := ClearStaleIndexLock(ctx, f.c); cleared || err != nil {
		t.Fatalf("no lock: cleared=%v, %v", cleared, err)
	}
}
