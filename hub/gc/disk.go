package gc

import (
	"context"
	"io/fs"
	"path/filepath"
)

// DiskUse is the apparent size of the file or tree at path: the sizes of
// its files and symlinks (not followed), 0 when it does not exist. What it
// cannot read is left out; it stops early when ctx is done.
func DiskUse(ctx context.Context, path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}
