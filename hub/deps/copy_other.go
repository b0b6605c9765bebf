//go:build !unix

package deps

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// On Windows the copy goes by path. The writer copy_unix.go guards
// against — a sandboxed worker swapping a folder of the tree it writes
// for a link to a folder of the host while hub copies the tree — has no
// counterpart here: hub offers no sandboxed isolation on Windows (see
// hub/sandbox), so a worker there runs with the user's own access, and a
// swap would get it nothing it could not read already.

// copyTree copies top/rel to into/rel; see copy_unix.go for the contract.
// Here it walks the tree by path.
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
		src, dst, r string
		perm        fs.FileMode
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
				st, err := copyFile(j.src, j.dst, j.perm, reloc)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				made.stamps[j.r] = st
				mu.Unlock()
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
			jobs <- job{p, dst, filepath.ToSlash(r), info.Mode().Perm()}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			made.paths = append(made.paths, filepath.ToSlash(r))
			mu.Lock()
			made.stamps[filepath.ToSlash(r)] = stampOf(info)
			mu.Unlock()
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

// copyFile copies the regular file src to dst, which must not exist, and
// returns the stamp of what it read.
func copyFile(src, dst string, perm fs.FileMode, reloc *relocation) (stamp, error) {
	in, err := os.Open(src)
	if err != nil {
		return stamp{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return stamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return stamp{}, &fs.PathError{Op: "copy", Path: src, Err: errChanged}
	}
	perm |= 0o200 // the copy is its holder's to write (an entry of hub's cache is read-only)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return stamp{}, err
	}
	if err := errors.Join(copyData(in, out, perm, fi.Size(), reloc), out.Close()); err != nil {
		os.Remove(dst)
		return stamp{}, err
	}
	return stampOf(fi), nil
}

// unchanged says whether top/rels holds exactly the files of stamps,
// each as it is now: nothing added, removed or written since.
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

// makeWritable makes every folder under root (root too) writable by its
// owner, and every regular file, so that the tree can be removed; a link
// is never followed (WalkDir does not descend into one).
func makeWritable(root string) error {
	var first error
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if d.IsDir() || d.Type().IsRegular() {
			if info, err := d.Info(); err == nil && info.Mode().Perm()&0o200 == 0 {
				if err := os.Chmod(p, info.Mode().Perm()|0o700); err != nil && first == nil {
					first = err
				}
			}
		}
		return nil
	})
	return first
}
