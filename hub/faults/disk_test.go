//go:build linux

package faults

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// diskSize is the tmpfs the full-disk case runs on.
const diskSize = "24m"

// TestFullDisk: the repo and the job's worktree live on a small tmpfs,
// and the worker fills it, so hub's commit cannot write its objects. The
// job must end failed with an error that says so and where the files
// stay, its record readable and its reservation closed; a job that
// finished before keeps its branch, and hub keeps serving.
func TestFullDisk(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		fullDiskCase(t)
	}
}

func fullDiskCase(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	disk := filepath.Join(w.dir, "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size="+diskSize); err != nil {
		record(outcome{Test: "TestFullDisk", Fault: "a full disk during the commit: not run (mounting a tmpfs needs root: " + err.Error() + ")"})
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk case needs root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	// The worktrees on the small disk too: hub's commit writes the
	// worker's files into the repo's objects, on the disk the worker filled.
	if err := os.MkdirAll(filepath.Join(disk, "worktrees"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(w.paths.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(disk, "worktrees"), w.paths.WorktreesDir()); err != nil {
		t.Fatal(err)
	}
	w.makeRepo(filepath.Join(disk, "repo"))
	w.startDaemon(ctx)

	// A job that ends before the disk fills: nothing of it may be lost.
	okID := w.start(ctx, protocol.StartParams{Task: "before the disk fills", Exec: `echo fine > fine.txt`, Verify: "test -f fine.txt"})
	if e := w.waitEnd(ctx, okID)[0]; e.State != protocol.StateSucceeded {
		t.Fatalf("the first job ended %s: %s", e.State, e.Error)
	}

	// The worker writes its work, then fills the disk (its own write fails
	// with ENOSPC; it exits 0 all the same).
	fillID := w.start(ctx, protocol.StartParams{Task: "fill the disk",
		Exec:   `echo "before fill" > before.txt; dd if=/dev/urandom of=fill.bin bs=1M count=64 2>/dev/null; exit 0`,
		Verify: "test -f before.txt"})
	end := w.waitEnd(ctx, fillID)[0]
	rec := w.storeJob(ctx, fillID)
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err == nil && st.Bavail*uint64(st.Bsize) > 1<<20 {
		t.Errorf("the disk was not full: %d bytes free", st.Bavail*uint64(st.Bsize))
	}
	if end.State != protocol.StateFailed || !strings.Contains(end.Error, "committing") || !strings.Contains(end.Error, rec.Worktree) {
		t.Errorf("after a full disk the job ended %s: %q; want failed, saying the commit failed and where the files stay", end.State, end.Error)
	}
	if !strings.Contains(strings.ToLower(end.Error), "space") {
		t.Errorf("the error does not say the disk is full: %q", end.Error)
	}
	// hub still serves: a job started on the full disk ends clearly too
	// (its worktree cannot be made), and the first job keeps its branch.
	repo := w.repo
	laterID := w.start(ctx, protocol.StartParams{Task: "on the full disk", Exec: `echo "later" > later.txt`, Verify: "test -f later.txt"})
	later := w.waitEnd(ctx, laterID)[0]
	laterWork := work{id: laterID}
	switch {
	case later.State == protocol.StateSucceeded:
		laterWork.files = map[string]string{"later.txt": "later\n"}
	case later.State != protocol.StateFailed || !strings.Contains(later.Error, "preparing failed"):
		t.Errorf("a job started on the full disk ended %s: %q; want failed while preparing", later.State, later.Error)
	}
	f := w.checkAll(ctx,
		work{id: okID, files: map[string]string{"fine.txt": "fine\n"}, repo: repo},
		work{id: fillID, files: map[string]string{"before.txt": "before fill\n"}, kept: rec.Worktree},
		laterWork)
	report(t, outcome{Test: "TestFullDisk", Fault: "a full disk (" + diskSize + " tmpfs holding the repo and the worktrees) during the commit",
		Ends: []string{w.ending(end), "a job after it: " + w.ending(later)}, Figures: f, Took: time.Since(began)})
}
