// Package atomicfile writes a file so that a reader never sees half of it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes path through a temporary file in its directory (created with
// mode before any byte lands), a sync and a rename: after a crash the file
// is the old one or the new one, whole.
func Write(path string, b []byte, mode os.FileMode) error { return write(path, b, mode, true) }

// Replace is Write without the sync, for a file hub can make again: a
// reader still never sees half of it, and a symlink at path is replaced,
// never followed.
func Replace(path string, b []byte, mode os.FileMode) error { return write(path, b, mode, false) }

func write(path string, b []byte, mode os.FileMode, sync bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
