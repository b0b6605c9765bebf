package deps

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/internal/pathx"
)

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

// copyTree copies top/rel to into/rel as it is: folders with their modes
// (writable by their owner), regular files copied (never linked; with
// copy_file_range, so a filesystem with reflinks shares the blocks
// copy-on-write), symlinks recreated. A symlink that resolves inside top
// points at the same place inside into (relative links stay as they are;
// absolute ones are rewritten); one that resolves outside top keeps
// pointing there, absolutely. Other kinds of file are left out. Files are
// copied by a few workers at once. It returns the slash-separated paths it
// made, files and links.
func copyTree(top, into, rel string, reloc *relocation) (copied, error) {
	var (
		made  = copied{stamps: map[string]stamp{}}
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	type job struct {
		src, dst string
		perm     fs.FileMode
		size     int64
	}
	jobs := make(chan job, 256)
	for range max(4, 2*runtime.NumCPU()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if failed() {
					continue
				}
				if err := copyFile(j.src, j.dst, j.perm, j.size, reloc); err != nil {
					fail(err)
				}
			}
		}()
	}
	root := filepath.Join(top, filepath.FromSlash(rel))
	werr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if failed() {
			return fs.SkipAll
		}
		r, err := filepath.Rel(top, p)
		if err != nil {
			return err
		}
		if d.IsDir() && transient(r) {
			return filepath.SkipDir
		}
		dst := filepath.Join(into, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm()|0o700) // the worker may install more into it
		case info.Mode().IsRegular():
			made.paths = append(made.paths, filepath.ToSlash(r))
			made.stamps[filepath.ToSlash(r)] = stampOf(info)
			jobs <- job{p, dst, info.Mode().Perm(), info.Size()}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			made.paths = append(made.paths, filepath.ToSlash(r))
			made.stamps[filepath.ToSlash(r)] = stampOf(info)
			to := relink(top, into, p, target)
			if filepath.IsAbs(to) && to != target {
				made.absInside = true
			}
			return os.Symlink(to, dst)
		}
		return nil // a socket, a device, a fifo: nothing a build reads
	})
	close(jobs)
	wg.Wait()
	return made, errors.Join(werr, first)
}

// unchanged says whether top/rels holds exactly the files of stamps,
// each as it was: nothing added, removed or written since.
func unchanged(top string, rels []string, stamps map[string]stamp) bool {
	n := 0
	for _, rel := range rels {
		err := filepath.WalkDir(filepath.Join(top, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, err := filepath.Rel(top, p)
			if err != nil {
				return err
			}
			if d.IsDir() {
				if transient(r) {
					return filepath.SkipDir
				}
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := stamps[filepath.ToSlash(r)]; !ok || st != stampOf(fi) {
				return errChanged
			}
			n++
			return nil
		})
		if err != nil {
			return false
		}
	}
	return n == len(stamps)
}

var errChanged = errors.New("changed")

// transient says whether the folder at rel (from the top) is a tool's
// cache inside a dependency tree (node_modules/.cache, where nyc, babel
// and eslint write while tests run; node_modules/.vite): never part of
// the tree, so it is neither copied nor held against a copy.
func transient(rel string) bool {
	dir, name := filepath.Split(rel)
	return (name == ".cache" || name == ".vite") && filepath.Base(dir) == "node_modules"
}

// copyFile copies one file, relocating a small one that names reloc.from.
func copyFile(src, dst string, perm fs.FileMode, size int64, reloc *relocation) error {
	if reloc != nil && size <= maxRelocate {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(reloc.from)) {
			b = bytes.ReplaceAll(b, []byte(reloc.from), []byte(reloc.to))
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
			if err != nil {
				return err
			}
			_, werr := f.Write(b)
			return errors.Join(werr, f.Chmod(perm), f.Close())
		}
	}
	return gitx.CopyNewFile(src, dst, perm)
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
