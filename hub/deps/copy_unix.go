//go:build unix

package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	// dirFlags opens a folder, never through a link.
	dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// fileFlags opens a file to read it, never through a link, and
	// without waiting: a fifo (or a device) swapped in for a file opens
	// at once, and is refused once its fstat says what it is.
	fileFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	// newFlags makes a file that was not there, never through a link.
	newFlags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// copyQueue is how many files the walk of a copy lists ahead of its
// workers; maxCopiers bounds the workers. Together they bound the
// descriptors a copy holds open: each file queued or being copied keeps
// its source and destination folders open (two each at most), a worker
// has two files open, and the walk two folders per level it is down — at
// most 2×(64+16) + 2×16 = 192, and two a level.
const (
	copyQueue  = 64
	maxCopiers = 16
)

// copyTree copies top/rel to into/rel as it is: folders and files with
// their modes, writable by their owner (a copy of a read-only cache entry
// is its holder's to write), regular files copied (never linked; with
// copy_file_range, so a filesystem with reflinks shares the blocks
// copy-on-write), symlinks recreated. A symlink that resolves inside top
// points at the same place inside into (relative links stay as they are;
// absolute ones are rewritten); one that resolves outside top keeps
// pointing there, absolutely. Other kinds of file are left out, as are
// transient folders. Files are copied by a few workers at once. It returns
// the slash-separated paths it made, files and links, and each one's
// stamp as it was read.
//
// top and into are hub's own paths, opened as they are; below them
// nothing is ever reached through a link, on either side: every component
// of rel and every folder under it is opened from its parent's descriptor
// with O_NOFOLLOW, listed through its own descriptor, and each file opened
// from its folder's descriptor, O_NOFOLLOW and O_NONBLOCK, and checked to
// be a regular file by an fstat of the open file before a byte is read;
// the stamp is that fstat's, of what was copied. The kind a folder's
// listing gives (d_type) only says how to open an entry (a folder with
// O_DIRECTORY, a file as a file; a link is fstatat'd, for its stamp, and
// read with readlinkat); what an entry is, is what its open descriptor
// says. Folders, files and links
// are made in the copy through the descriptor of the folder they go in
// (mkdirat, openat O_CREAT|O_EXCL|O_NOFOLLOW, symlinkat). Something that is
// not, when it is opened, the kind it was listed as (a folder swapped for
// a link, a file for a fifo or a folder) is an error wrapping errChanged:
// the copy is not of one tree, and the caller throws it away. So is a
// component of rel that is a link, on either side.
func copyTree(top, into, rel string, reloc *relocation) (copied, error) {
	c := &treeCopy{top: top, into: into, reloc: reloc, stamps: map[string]stamp{}}
	src, name, err := openParent(top, rel)
	if err != nil {
		return c.result(), err
	}
	defer src.release()
	dst, _, err := openParent(into, rel)
	if err != nil {
		return c.result(), err
	}
	defer dst.release()

	jobs := make(chan fileJob, copyQueue)
	var wg sync.WaitGroup
	for range min(max(4, 2*runtime.NumCPU()), maxCopiers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if !c.failed() {
					if err := c.copyFile(j); err != nil {
						c.fail(err)
					}
				}
				j.src.release()
				j.dst.release()
			}
		}()
	}
	if err := c.entry(jobs, src, dst, name, rel, typeUnknown); err != nil {
		c.fail(err) // the workers skip what is queued
	}
	close(jobs)
	wg.Wait()
	return c.result(), c.first
}

// treeCopy is one copyTree: its walk (one goroutine) and its workers.
type treeCopy struct {
	top, into string
	reloc     *relocation

	// The walk's alone.
	paths     []string
	absInside bool

	resultMu sync.Mutex
	stamps   map[string]stamp
	first    error
}

func (c *treeCopy) result() copied {
	return copied{paths: c.paths, stamps: c.stamps, absInside: c.absInside}
}

func (c *treeCopy) fail(err error) {
	c.resultMu.Lock()
	if c.first == nil {
		c.first = err
	}
	c.resultMu.Unlock()
}

func (c *treeCopy) failed() bool {
	c.resultMu.Lock()
	defer c.resultMu.Unlock()
	return c.first != nil
}

func (c *treeCopy) stamp(r string, st stamp) {
	c.resultMu.Lock()
	c.stamps[r] = st
	c.resultMu.Unlock()
}

// fileJob is a regular file for a worker to copy: the name in src to the
// same name in dst, each folder held open for it.
type fileJob struct {
	src, dst *dirRef
	name, r  string
}

// typeUnknown: an entry whose kind the walk has not been told.
const typeUnknown = ^fs.FileMode(0)

// entry copies what is at name in src (r from the top, slash-separated)
// to the same name in dst: typ is its kind as its folder's listing gave
// it, which only says how to open it.
func (c *treeCopy) entry(jobs chan<- fileJob, src, dst *dirRef, name, r string, typ fs.FileMode) error {
	var st unix.Stat_t
	if typ == typeUnknown || typ == fs.ModeSymlink {
		if err := fstatat(src.fd, name, &st); err != nil {
			return c.srcErr("fstatat", r, err)
		}
		typ = modeOf(&st).Type()
	}
	switch typ {
	case fs.ModeDir:
		if transient(r) {
			return nil
		}
		return c.folder(jobs, src, dst, name, r)
	case 0:
		c.paths = append(c.paths, r)
		jobs <- fileJob{src.hold(), dst.hold(), name, r}
		return nil
	case fs.ModeSymlink:
		target, err := readlinkat(src.fd, name)
		if err != nil {
			if errors.Is(err, unix.EINVAL) {
				return c.changed(r, "no longer a link")
			}
			return c.srcErr("readlinkat", r, err)
		}
		c.paths = append(c.paths, r)
		c.stamp(r, stampOfStat(&st))
		p := filepath.Join(c.top, filepath.FromSlash(r))
		to := relink(c.top, c.into, p, target)
		if filepath.IsAbs(to) && to != target {
			c.absInside = true
		}
		if err := unix.Symlinkat(to, dst.fd, name); err != nil {
			return c.dstErr("symlinkat", r, err)
		}
		return nil
	}
	return nil // a socket, a device, a fifo: nothing a build reads
}

// folder copies the folder name in src to a new folder name in dst.
func (c *treeCopy) folder(jobs chan<- fileJob, src, dst *dirRef, name, r string) error {
	in, err := openDir(src.fd, name, true)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return c.changed(r, "no longer a folder")
		}
		return c.srcErr("openat", r, err)
	}
	defer in.release()
	var st unix.Stat_t
	if err := fstat(in.fd, &st); err != nil {
		return c.srcErr("fstat", r, err)
	}
	if err := unix.Mkdirat(dst.fd, name, 0o700); err != nil {
		return c.dstErr("mkdirat", r, err)
	}
	out, err := openDir(dst.fd, name, false)
	if err != nil {
		return c.dstErr("openat", r, err)
	}
	defer out.release()
	// Writable by its owner: the worker may install more into it.
	if err := unix.Fchmod(out.fd, uint32(modeOf(&st).Perm()|0o700)); err != nil {
		return c.dstErr("fchmod", r, err)
	}
	ents, err := in.f.ReadDir(-1)
	if err != nil {
		return c.srcErr("getdents", r, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		if c.failed() {
			return nil
		}
		if err := c.entry(jobs, in, out, e.Name(), r+"/"+e.Name(), e.Type()); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the regular file j.name of j.src to a new file in j.dst.
func (c *treeCopy) copyFile(j fileJob) error {
	fd, err := openat(j.src.fd, j.name, fileFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return c.changed(j.r, "a link now")
		}
		return c.srcErr("openat", j.r, err)
	}
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return c.srcErr("fstat", j.r, err)
	}
	mode := modeOf(&st)
	if !mode.IsRegular() {
		unix.Close(fd)
		return c.changed(j.r, "a "+kind(mode)+" now")
	}
	// A regular file for sure: O_NONBLOCK means nothing to it; cleared
	// all the same, so the os.File below is a plain blocking file.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return c.srcErr("fcntl", j.r, err)
	}
	in := os.NewFile(uintptr(fd), filepath.Join(c.top, filepath.FromSlash(j.r)))
	defer in.Close()
	c.stamp(j.r, stampOfStat(&st))

	perm := mode.Perm() | 0o200 // the copy is its holder's to write (an entry of hub's cache is read-only)
	ofd, err := openat(j.dst.fd, j.name, newFlags, uint32(perm))
	if err != nil {
		return c.dstErr("openat", j.r, err)
	}
	out := os.NewFile(uintptr(ofd), filepath.Join(c.into, filepath.FromSlash(j.r)))
	if err := errors.Join(copyData(in, out, perm, st.Size, c.reloc), out.Close()); err != nil {
		_ = unix.Unlinkat(j.dst.fd, j.name, 0)
		return err
	}
	return nil
}

func (c *treeCopy) srcErr(op, r string, err error) error {
	return &fs.PathError{Op: op, Path: filepath.Join(c.top, filepath.FromSlash(r)), Err: err}
}

func (c *treeCopy) dstErr(op, r string, err error) error {
	return &fs.PathError{Op: op, Path: filepath.Join(c.into, filepath.FromSlash(r)), Err: err}
}

func (c *treeCopy) changed(r, now string) error {
	return fmt.Errorf("%s %w while hub copied it (%s)", filepath.Join(c.top, filepath.FromSlash(r)), errChanged, now)
}

func kind(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeDir:
		return "folder"
	case fs.ModeSymlink:
		return "link"
	case fs.ModeNamedPipe:
		return "fifo"
	case fs.ModeSocket:
		return "socket"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "device"
	}
	return "file of another kind"
}

// dirRef is an open folder, shared by the walk and the copies of its files:
// closed when the last of them lets it go.
type dirRef struct {
	f    *os.File // to list it (a source folder); nil for a destination
	fd   int
	refs atomic.Int32
}

// openDir opens the folder name in the folder parent, never through a
// link; held once.
func openDir(parent int, name string, list bool) (*dirRef, error) {
	fd, err := openat(parent, name, dirFlags, 0)
	if err != nil {
		return nil, err
	}
	return newDir(fd, name, list), nil
}

func newDir(fd int, name string, list bool) *dirRef {
	d := &dirRef{fd: fd}
	if list {
		d.f = os.NewFile(uintptr(fd), name)
	}
	d.refs.Store(1)
	return d
}

func (d *dirRef) hold() *dirRef {
	d.refs.Add(1)
	return d
}

func (d *dirRef) release() {
	if d.refs.Add(-1) != 0 {
		return
	}
	if d.f != nil {
		d.f.Close()
	} else {
		unix.Close(d.fd)
	}
}

// openParent opens the folder that holds the last component of rel
// (slash-separated) under root: root as it is (a path of hub's own),
// each component below it never through a link. It returns that folder,
// held once, and the last component's name.
func openParent(root, rel string) (*dirRef, string, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, "", fmt.Errorf("copy %q: not a path inside the tree", rel)
		}
	}
	fd, err := openat(unix.AT_FDCWD, root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &fs.PathError{Op: "open", Path: root, Err: err}
	}
	for i, p := range parts[:len(parts)-1] {
		next, err := openat(fd, p, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return nil, "", &fs.PathError{Op: "openat", Path: filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/"))), Err: err}
		}
		fd = next
	}
	return newDir(fd, root, false), parts[len(parts)-1], nil
}

// unchanged says whether top/rels holds exactly the files of stamps,
// each as it is now: nothing added, removed or written since. It reads
// the trees as copyTree does, never through a link.
func unchanged(top string, rels []string, stamps map[string]stamp) bool {
	n := 0
	for _, rel := range rels {
		parent, name, err := openParent(top, rel)
		if err != nil {
			return false
		}
		ok := sameAs(parent.fd, name, rel, stamps, &n)
		parent.release()
		if !ok {
			return false
		}
	}
	return n == len(stamps)
}

// sameAs says whether name in the folder dirfd (r from the top) is as
// stamps has it, counting in n the files and links it found.
func sameAs(dirfd int, name, r string, stamps map[string]stamp, n *int) bool {
	var st unix.Stat_t
	if fstatat(dirfd, name, &st) != nil {
		return false
	}
	if modeOf(&st).IsDir() {
		if transient(r) {
			return true
		}
		d, err := openDir(dirfd, name, true)
		if err != nil {
			return false
		}
		defer d.release()
		names, err := d.f.Readdirnames(-1)
		if err != nil {
			return false
		}
		for _, e := range names {
			if !sameAs(d.fd, e, r+"/"+e, stamps, n) {
				return false
			}
		}
		return true
	}
	if was, ok := stamps[r]; !ok || was != stampOfStat(&st) {
		return false
	}
	*n++
	return true
}

// makeWritable makes every folder under root (root too) readable,
// writable and searchable by its owner, and every regular file writable
// by it, so that the tree can be removed: a Go module cache copied into a
// tree keeps its 0555 folders. It never follows a link: root itself is
// left alone when it is one, and each folder below is opened from its
// parent's descriptor with O_NOFOLLOW and changed through its own
// descriptor. A folder its owner cannot even read is changed first with
// fchmodat(AT_SYMLINK_NOFOLLOW) (fchmodat2 on Linux, from 6.6; on an older
// kernel such a folder stays as it is). It goes on past what it cannot
// change and returns the first error.
func makeWritable(root string) error {
	fd, err := openWritable(unix.AT_FDCWD, root)
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT):
		return nil // a link, a file, nothing: no folder to change
	case err != nil:
		return &fs.PathError{Op: "open", Path: root, Err: err}
	}
	var first error
	writable(fd, root, &first)
	return first
}

// openWritable opens the folder name in the folder parent, never through
// a link, having made it u+rwx.
func openWritable(parent int, name string) (int, error) {
	fd, err := openat(parent, name, dirFlags, 0)
	if errors.Is(err, unix.EACCES) {
		var st unix.Stat_t
		if serr := fstatat(parent, name, &st); serr != nil || !modeOf(&st).IsDir() {
			return -1, err
		}
		if cerr := unix.Fchmodat(parent, name, uint32(modeOf(&st).Perm()|0o700), unix.AT_SYMLINK_NOFOLLOW); cerr != nil {
			return -1, err
		}
		fd, err = openat(parent, name, dirFlags, 0)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if perm := modeOf(&st).Perm(); perm&0o700 != 0o700 {
		if err := unix.Fchmod(fd, uint32(perm|0o700)); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// writable makes what is in the open folder fd (at path p) writable by
// its owner, and closes fd.
func writable(fd int, p string, first *error) {
	note := func(op, q string, err error) {
		if *first == nil {
			*first = &fs.PathError{Op: op, Path: q, Err: err}
		}
	}
	d := newDir(fd, p, true)
	defer d.release()
	ents, err := d.f.ReadDir(-1)
	if err != nil {
		note("getdents", p, err)
	}
	for _, e := range ents {
		q := filepath.Join(p, e.Name())
		switch e.Type() {
		case fs.ModeDir:
			sub, err := openWritable(fd, e.Name())
			if err != nil {
				if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ENOENT) {
					note("openat", q, err)
				}
				continue // swapped for a link or a file, or gone: left alone
			}
			writable(sub, q, first)
		case 0:
			if err := fileWritable(fd, e.Name()); err != nil {
				note("fchmodat", q, err)
			}
		}
	}
}

// fileWritable adds u+w to the regular file name in the folder dirfd,
// never through a link.
func fileWritable(dirfd int, name string) error {
	var st unix.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil {
		return nil // gone
	}
	mode := modeOf(&st)
	if !mode.IsRegular() || mode.Perm()&0o200 != 0 {
		return nil
	}
	err := unix.Fchmodat(dirfd, name, uint32(mode.Perm()|0o200), unix.AT_SYMLINK_NOFOLLOW)
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOTSUP) {
		return err
	}
	// A Linux older than 6.6: through the open file, when it can be opened.
	fd, err := openat(dirfd, name, fileFlags, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if err := fstat(fd, &st); err != nil || !modeOf(&st).IsRegular() {
		return nil
	}
	return unix.Fchmod(fd, uint32(modeOf(&st).Perm()|0o200))
}

// modeOf is the fs.FileMode os gives the file of st.
func modeOf(st *unix.Stat_t) fs.FileMode {
	m := uint32(st.Mode)
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// stampOfStat is stampOf of the file of st.
func stampOfStat(st *unix.Stat_t) stamp {
	return stamp{st.Size, modeOf(st), st.Mtim.Nano()}
}

// openat, fstat, fstatat and readlinkat, again when a signal interrupts
// them.
func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); err != unix.EINTR {
			return err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		if err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, b)
		if err == unix.EINTR {
			n /= 2
			continue
		}
		if err != nil {
			return "", err
		}
		if k < n {
			return string(b[:k]), nil
		}
	}
}
