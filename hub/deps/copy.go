package deps

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hub-agents/hub/hub/internal/pathx"
)

// Copying a dependency tree (copyTree, in copy_unix.go and copy_other.go)
// reads folders someone else may be writing: a job's worktree, where a
// sandboxed worker runs, or the user's checkout. On unix nothing is ever
// reached by a path that such a writer can change under the copy: each
// folder is opened from its parent's descriptor without following a
// link, listed through its own descriptor, and each file opened and
// checked through it; what is written goes the same way.

// copied is what copyTree made: the paths (files and links, from the
// top), each source file's stamp as it was read (to tell afterwards that
// the source did not change during the copy), and whether a link inside
// the tree names the tree's own place absolutely (a copy that moves
// elsewhere would point back at the old place).
type copied struct {
	paths     []string
	stamps    map[string]stamp
	absInside bool
}

// stamp is what says a file did not change: its size, mode and mtime.
type stamp struct {
	size  int64
	mode  fs.FileMode
	mtime int64
}

func stampOf(fi fs.FileInfo) stamp {
	return stamp{fi.Size(), fi.Mode(), fi.ModTime().UnixNano()}
}

// relocation rewrites, in the text files of a tree, the absolute path the
// tree was installed at (from) to where its copy is (to): a Python venv
// names itself in its scripts' first lines, activate and pyvenv.cfg.
type relocation struct{ from, to string }

// maxRelocate bounds the files a relocation reads: a script, not a wheel.
const maxRelocate = 1 << 20

// errChanged: what was being read changed while hub read it (a folder
// became a link, a file a fifo; a file was added, removed or written).
var errChanged = errors.New("changed")

// transient says whether the folder at rel (from the top) is a tool's
// cache inside a dependency tree (node_modules/.cache, where nyc, babel
// and eslint write while tests run; node_modules/.vite): never part of
// the tree, so it is neither copied nor held against a copy.
func transient(rel string) bool {
	dir, name := filepath.Split(rel)
	return (name == ".cache" || name == ".vite") && filepath.Base(dir) == "node_modules"
}

// copyData copies in to out, which is new, and gives out perm: the bytes
// of a small file that names reloc.from with it rewritten to reloc.to;
// any other file with copy_file_range (os.File.ReadFrom), so a
// filesystem with reflinks shares the blocks copy-on-write.
func copyData(in, out *os.File, perm fs.FileMode, size int64, reloc *relocation) error {
	if reloc != nil && size <= maxRelocate {
		b, err := io.ReadAll(io.LimitReader(in, maxRelocate+1))
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(reloc.from)) {
			if _, err := out.Write(bytes.ReplaceAll(b, []byte(reloc.from), []byte(reloc.to))); err != nil {
				return err
			}
			return out.Chmod(perm)
		}
		if _, err := in.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	if _, err := out.ReadFrom(in); err != nil {
		return err
	}
	return out.Chmod(perm) // the mode O_CREAT gave it went through the umask
}

// relink is the target a copy of the symlink at p (in top) pointing at
// target gets in into.
func relink(top, into, p, target string) string {
	abs := target
	if !filepath.IsAbs(target) {
		abs = filepath.Join(filepath.Dir(p), target)
	}
	rel, inside := pathx.Under(top, abs)
	switch {
	case inside && !filepath.IsAbs(target):
		return target // resolves to the same place inside into
	case inside:
		return filepath.Join(into, rel)
	}
	return abs // outside the checkout: the same place, named absolutely
}
