package limit

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep Usage walks: a folder per level holds a file
// descriptor open.
const maxDepth = 1024

// Usage is the disk space the folders dirs take: the blocks allocated
// (st_blocks × 512) to every file, folder and link under them, each inode
// counted once however many hard links or folders of dirs reach it. It
// walks by directory file descriptors opened with O_NOFOLLOW relative to
// their parent's, so it never follows a symbolic link — a folder swapped
// for a link while it walks is skipped, never walked nor counted as its
// target — and it stays on each folder's own file system (a mount inside
// is not counted). A folder of dirs that does not exist counts 0; one that
// is a symbolic link is an error.
//
// On an error (a folder it may not read, a tree deeper than 1,024 levels)
// it still walks the rest, and returns what it counted with the error: at
// least that much is in use.
func Usage(dirs ...string) (int64, error) {
	w := walker{seen: map[fileID]struct{}{}, buf: make([]byte, 64<<10)}
	for _, d := range dirs {
		w.root(d)
	}
	return w.total, errors.Join(w.errs...)
}

type fileID struct{ dev, ino uint64 }

type walker struct {
	seen  map[fileID]struct{} // folders, and files with more than one link
	buf   []byte              // getdents; the names are copied out before a walk goes deeper
	total int64
	errs  []error
}

func (w *walker) fail(path string, err error) {
	if len(w.errs) < 8 {
		w.errs = append(w.errs, fmt.Errorf("usage: %s: %w", path, err))
	}
}

// count adds st's blocks unless its inode was counted already.
func (w *walker) count(st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Nlink > 1 {
		id := fileID{uint64(st.Dev), st.Ino}
		if _, ok := w.seen[id]; ok {
			return
		}
		w.seen[id] = struct{}{}
	}
	w.total += st.Blocks * 512
}

func (w *walker) root(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return
	case errors.Is(err, unix.ELOOP):
		w.fail(dir, errors.New("is a symbolic link"))
		return
	case err != nil:
		w.fail(dir, err)
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.fail(dir, err)
		return
	}
	if _, ok := w.seen[fileID{uint64(st.Dev), st.Ino}]; ok {
		return // a folder given twice, or inside another given
	}
	w.count(&st)
	w.dir(fd, dir, uint64(st.Dev), 1)
}

// dir counts what folder fd (at path, for errors) holds on device dev.
func (w *walker) dir(fd int, path string, dev uint64, depth int) {
	if depth > maxDepth {
		w.fail(path, fmt.Errorf("deeper than %d folders: not measured", maxDepth))
		return
	}
	var names []string
	for {
		n, err := unix.ReadDirent(fd, w.buf)
		if err != nil {
			w.fail(path, err)
			return
		}
		if n <= 0 {
			return
		}
		_, _, names = unix.ParseDirent(w.buf[:n], -1, names[:0])
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if !errors.Is(err, unix.ENOENT) { // gone since: nothing to count
					w.fail(filepath.Join(path, name), err)
				}
				continue
			}
			if uint64(st.Dev) != dev {
				continue // a mount point: another file system
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				w.count(&st)
				continue
			}
			w.sub(fd, path, name, dev, depth)
		}
	}
}

// sub opens folder name of folder fd without following a link, and counts
// it and what it holds. A folder swapped for a link or a file since it was
// listed fails O_NOFOLLOW|O_DIRECTORY and is skipped; one swapped for
// another folder is counted as what was opened, which is where it is now.
func (w *walker) sub(fd int, path, name string, dev uint64, depth int) {
	p := filepath.Join(path, name)
	cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return
	case err != nil:
		w.fail(p, err)
		return
	}
	defer unix.Close(cfd)
	var st unix.Stat_t
	if err := unix.Fstat(cfd, &st); err != nil {
		w.fail(p, err)
		return
	}
	if uint64(st.Dev) != dev {
		return
	}
	if _, ok := w.seen[fileID{uint64(st.Dev), st.Ino}]; ok {
		return // reached again (a bind mount of a folder above)
	}
	w.count(&st)
	w.dir(cfd, p, dev, depth+1)
}
