package gitx

import (
	"bytes"
	"context"
	"fmt"
)

// StatusEntry is one line of `git status --porcelain=v1`: X is the index
// status, Y the work tree status ('?' for both on an untracked file). OldPath
// is set for renames and copies.
type StatusEntry struct {
	Path, OldPath string
	X, Y          byte
}

// Status lists the changes in the work tree at dir, untracked files one by
// one, ignored files not at all. It takes no optional locks, so it can run
// next to an agent's git.
func Status(ctx context.Context, dir string) ([]StatusEntry, error) {
	out, err := runGit(ctx, dir, readOnly, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	return parseStatus(out)
}

// parseStatus reads `status --porcelain=v1 -z`: "XY path\0", and for a rename
// or copy "XY path\0oldpath\0".
func parseStatus(out []byte) ([]StatusEntry, error) {
	var entries []StatusEntry
	fields := splitNUL(out)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 || f[2] != ' ' {
			return nil, fmt.Errorf("git status: cannot parse entry %q", f)
		}
		e := StatusEntry{X: f[0], Y: f[1], Path: string(f[3:])}
		if isRenameOrCopy(e.X) || isRenameOrCopy(e.Y) {
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("git status: rename of %q has no old path", e.Path)
			}
			i++
			e.OldPath = string(fields[i])
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func isRenameOrCopy(c byte) bool { return c == 'R' || c == 'C' }

// Dirty reports whether the work tree at dir has any tracked change or any
// untracked file that is not ignored.
func Dirty(ctx context.Context, dir string) (bool, error) {
	// Untracked directories are reported whole; that is enough for yes or no.
	out, err := runGit(ctx, dir, readOnly, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
	if err != nil {
		return false, err
	}
	return len(out) > 0, nil
}

// splitNUL splits NUL-terminated fields (a missing final NUL is tolerated).
func splitNUL(b []byte) [][]byte {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(b, []byte{0})
}

// TrackedChanges reports whether the checkout at dir has changes to
// tracked files (staged or not); untracked files do not count.
func TrackedChanges(ctx context.Context, dir string) (bool, error) {
	entries, err := Status(ctx, dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.X != '?' {
			return true, nil
		}
	}
	return false, nil
}
