package rpc

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func deadline() time.Time { return time.Now().Add(waitFor) }

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestListenRefusesForeignDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	} else {
		dir = "/" // owned by root, and we are not
	}
	ln, err := Listen(filepath.Join(dir, "hub.sock"))
	if err == nil {
		ln.Close()
		t.Fatal("Listen in a directory owned by another uid succeeded")
	}
	if !strings.Contains(err.Error(), "is owned by uid") || !strings.Contains(err.Error(), "not you") {
		t.Errorf("error %q does not say who owns the directory", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "hub.sock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a socket file was created: %v", err)
	}
}

func TestListenMissingDir(t *testing.T) {
	_, err := Listen(filepath.Join(t.TempDir(), "nope", "hub.sock"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Listen in a missing dir = %v, want ErrNotExist", err)
	}
}

func TestListenModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hub.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, dir).Perm(); got != 0o700 {
		t.Errorf("dir mode = %v, want 0700", got)
	}
	m := mode(t, path)
	if m&fs.ModeSocket == 0 || m.Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket with 0600", m)
	}
	if got := ln.Addr().String(); got != path {
		t.Errorf("Addr = %q, want %q", got, path)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file left after Close: %v", err)
	}
	ln.Close() // twice is harmless
}

func TestListenStaleAndLive(t *testing.T) {
	path := sockPath(t)
	// A stale socket: bound, then closed without unlinking.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if mode(t, path)&fs.ModeSocket == 0 {
		t.Fatal("no stale socket to test with")
	}

	serveAt(t, path, mux{"echo": echo}.handle, nil, nil)
	c := dial(t, path, nil)
	if err := c.Call(testCtx(t), "echo", 1, nil); err != nil {
		t.Fatalf("the server on the replaced socket: %v", err)
	}

	// The live one is not taken over.
	ln, err := Listen(path)
	if !errors.Is(err, ErrInUse) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("Listen on a live socket = %v, want ErrInUse", err)
	}
	if err := c.Call(testCtx(t), "echo", 2, nil); err != nil {
		t.Fatalf("the live server after a second Listen: %v", err)
	}

	// A file that is not a socket is left alone.
	other := filepath.Join(t.TempDir(), "file")
	os.WriteFile(other, []byte("x"), 0o600)
	if _, err := Listen(other); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen on a regular file = %v", err)
	}
}

func TestLongPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 130 {
		dir = filepath.Join(dir, "a-rather-long-directory-name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hub.sock")
	if len(path) <= 108 {
		t.Fatalf("path %q is not long enough", path)
	}
	serveAt(t, path, mux{"echo": echo}.handle, nil, nil)
	if m := mode(t, path); m&fs.ModeSocket == 0 || m.Perm() != 0o600 {
		t.Errorf("socket mode = %v", m)
	}
	c := dial(t, path, nil)
	var got string
	if err := c.Call(testCtx(t), "echo", "long", &got); err != nil {
		t.Fatal(err)
	}
	if got != "long" {
		t.Errorf("echo = %q", got)
	}
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Errorf("second Listen on the long path = %v, want ErrInUse", err)
	}

	// A name that cannot fit even under /proc/self/fd is refused clearly.
	_, err := Listen(filepath.Join(dir, strings.Repeat("n", 100)))
	if err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("Listen with a 100-byte name = %v", err)
	}
}

func TestDialChecks(t *testing.T) {
	ctx := testCtx(t)
	if _, err := Dial(ctx, sockPath(t)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Dial with no socket = %v, want ErrNotExist", err)
	}

	// A stale socket: refused.
	path := sockPath(t)
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if _, err := Dial(ctx, path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial on a stale socket = %v, want ECONNREFUSED", err)
	} else if strings.Contains(err.Error(), "/proc/") {
		t.Errorf("error %q names the /proc path", err)
	}

	// A socket owned by someone else: refused before connecting.
	if os.Getuid() != 0 {
		t.Skip("needs root to chown a socket")
	}
	path = sockPath(t)
	serveAt(t, path, mux{"echo": echo}.handle, nil, nil)
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = Dial(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, not you") {
		t.Errorf("Dial on a foreign socket = %v", err)
	}
}

func TestDialContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := serve(t, mux{"echo": echo}.handle, nil)
	if _, err := Dial(ctx, path); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a done ctx = %v", err)
	}
}
