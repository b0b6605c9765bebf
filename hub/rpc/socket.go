package rpc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrInUse is returned by Listen when a live server already answers on the
// socket.
var ErrInUse = errors.New("socket in use: another server is listening on it")

// maxSunPath is the longest socket address the kernel takes (sun_path less
// its terminating NUL: 107 bytes on Linux and Windows, 103 on macOS).
const maxSunPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// staleProbeTimeout bounds the dial that tells a live socket from a stale one.
const staleProbeTimeout = 2 * time.Second

// sockDir is an open socket directory. Addresses are formed as
// /proc/self/fd/<fd>/<name>, so that paths longer than sun_path work and the
// socket lands in the very directory whose ownership was checked.
type sockDir struct {
	f    *os.File
	base string // "/proc/self/fd/<fd>", or the directory path without /proc
}

func openSockDir(dir string) (*sockDir, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	d := &sockDir{f: f, base: "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))}
	if _, err := os.Stat(d.base); err != nil {
		d.base = dir // no /proc: only short paths work
	}
	return d, nil
}

// addr is the address of name inside the directory.
func (d *sockDir) addr(path, name string) (string, error) {
	a := d.base + string(filepath.Separator) + name
	if len(a) > maxSunPath {
		return "", fmt.Errorf("socket path %s is too long (the socket name may have at most %d bytes)", path, maxSunPath-len(d.base)-1)
	}
	return a, nil
}

func (d *sockDir) Close() error { return d.f.Close() }

func splitSocketPath(path string) (dir, name string, err error) {
	path = filepath.Clean(path)
	dir, name = filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return "", "", fmt.Errorf("%q is not a socket path", path)
	}
	if dir == "" {
		dir = "."
	}
	return dir, name, nil
}

// Listen creates the unix socket at path for a daemon. The parent directory
// must exist and be owned by the current uid; it is made mode 0700 if it is
// looser, and a directory owned by another uid is refused. A stale socket
// file (nothing answers) is replaced; a live one gives an error wrapping
// ErrInUse. The socket file is mode 0600. Closing the listener removes the
// socket file, unless another server has replaced it since.
func Listen(path string) (net.Listener, error) {
	dirPath, name, err := splitSocketPath(path)
	if err != nil {
		return nil, err
	}
	d, err := openSockDir(dirPath)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: the socket directory must exist: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()
	if err := checkSockDir(d, dirPath); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	addr, err := d.addr(path, name)
	if err != nil {
		return nil, err
	}
	if err := removeStale(addr, path); err != nil {
		return nil, err
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		if inUse(err) {
			return nil, fmt.Errorf("listen on %s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("listen on %s: %w", path, renamePath(err, path))
	}
	ul.SetUnlinkOnClose(false) // it would unlink the /proc path after the fd is gone
	if err := makePrivate(addr); err != nil {
		ul.Close()
		os.Remove(addr)
		return nil, fmt.Errorf("listen on %s: %w", path, renamePath(err, path))
	}
	fi, err := os.Lstat(addr)
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, renamePath(err, path))
	}
	ok = true
	return &listener{ul: ul, dir: d, addr: addr, path: path, fi: fi}, nil
}

// checkSockDir enforces the ownership and mode of the socket directory.
func checkSockDir(d *sockDir, dirPath string) error {
	fi, err := d.f.Stat()
	if err != nil {
		return err
	}
	if who, err := notMine(d.f.Name(), fi); err != nil {
		return fmt.Errorf("cannot tell who owns %s: %w", dirPath, err)
	} else if who != "" {
		return fmt.Errorf("socket directory %s is owned by %s; use a directory of your own", dirPath, who)
	}
	return makeDirPrivate(d.f, fi, dirPath)
}

// removeStale removes a socket file nobody answers on. A live socket is
// ErrInUse; a file that is not a socket is left alone.
func removeStale(addr, path string) error {
	fi, err := os.Lstat(addr)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, renamePath(err, path))
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("listen on %s: the file exists and is not a socket; move it away", path)
	}
	nc, err := net.DialTimeout("unix", addr, staleProbeTimeout)
	if err == nil {
		nc.Close()
		return fmt.Errorf("listen on %s: %w", path, ErrInUse)
	}
	if !refused(err) {
		return fmt.Errorf("listen on %s: cannot tell whether the existing socket is live: %w", path, renamePath(err, path))
	}
	if err := os.Remove(addr); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listen on %s: remove stale socket: %w", path, renamePath(err, path))
	}
	return nil
}

// listener keeps the socket directory open for the listener's life and
// reports the real path as its address.
type listener struct {
	ul   *net.UnixListener
	dir  *sockDir
	addr string      // what was bound (maybe under /proc/self/fd)
	path string      // what the caller asked for
	fi   fs.FileInfo // the socket file as bound

	closeOnce sync.Once
	closeErr  error
}

func (l *listener) Accept() (net.Conn, error) { return l.ul.Accept() }

func (l *listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.ul.Close()
		if fi, err := os.Lstat(l.addr); err == nil && os.SameFile(fi, l.fi) {
			os.Remove(l.addr)
		}
		l.dir.Close()
	})
	return l.closeErr
}

// Dial connects to the socket at path, after checking that the socket file is
// owned by the current uid. Errors wrap fs.ErrNotExist when there is no
// socket file and syscall.ECONNREFUSED when nothing listens on it.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	dirPath, name, err := splitSocketPath(path)
	if err != nil {
		return nil, err
	}
	d, err := openSockDir(dirPath)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	defer d.Close()
	addr, err := d.addr(path, name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, renamePath(err, path))
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return nil, fmt.Errorf("dial %s: not a socket", path)
	}
	if who, err := notMine(addr, fi); err != nil {
		return nil, fmt.Errorf("dial %s: cannot tell who owns the socket: %w", path, err)
	} else if who != "" {
		return nil, fmt.Errorf("socket %s is owned by %s; refusing to talk to it", path, who)
	}
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "unix", addr)
	if err != nil {
		err = renamePath(err, path)
		if refused(err) && !errors.Is(err, syscall.ECONNREFUSED) {
			err = fmt.Errorf("%w (%w)", syscall.ECONNREFUSED, err) // one cause to check on every platform
		}
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	return nc, nil
}

// renamePath puts the caller's path into errors that name the /proc/self/fd
// address, so that messages make sense to people.
func renamePath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		c := *oe
		if c.Addr != nil {
			c.Addr = &net.UnixAddr{Name: path, Net: "unix"}
		}
		if c.Source != nil {
			c.Source = nil
		}
		return &c
	}
	return err
}
