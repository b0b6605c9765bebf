package gitx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ClearStaleIndexLock removes the lock of hub's index of checkout c when
// no process has it open: what a git killed while it wrote the index (with
// a shim killed at committing) leaves behind, after which every git that
// writes that index fails ("Unable to create ....lock: File exists"). A
// lock some live process holds open is left alone; so is every lock where
// /proc cannot tell. It reports whether it removed one.
func ClearStaleIndexLock(ctx context.Context, c *Checkout) (bool, error) {
	lock := c.Index + ".lock"
	if _, err := os.Lstat(lock); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	real := lock // /proc names files by their real path
	if d, err := filepath.EvalSymlinks(filepath.Dir(lock)); err == nil {
		real = filepath.Join(d, filepath.Base(lock))
	}
	if held, err := heldOpen(real); err != nil || held {
		return false, err
	}
	if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("remove stale %s: %w", lock, err)
	}
	return true, nil
}

// heldOpen reports whether any process has path open, from /proc/*/fd.
// Without /proc it cannot tell, and says held.
func heldOpen(path string) (bool, error) {
	fds, err := filepath.Glob("/proc/[0-9]*/fd/*")
	if err != nil || len(fds) == 0 {
		return true, err
	}
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true, nil
		}
	}
	return false, nil
}
