//go:build linux

package deps

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// swapper exchanges the names a and b (a folder and a symlink, or a file
// and a fifo) over and over with renameat2(RENAME_EXCHANGE), as a hostile
// process that can write the tree being copied would, until stopped. It
// leaves them as it found them.
type swapper struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	swaps atomic.Int64
}

func swap(t *testing.T, pairs ...[2]string) *swapper {
	t.Helper()
	for _, p := range pairs {
		for range 2 {
			if err := unix.Renameat2(unix.AT_FDCWD, p[0], unix.AT_FDCWD, p[1], unix.RENAME_EXCHANGE); err != nil {
				t.Skipf("renameat2(RENAME_EXCHANGE): %v", err) // a filesystem without it
			}
		}
	}
	s := &swapper{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Each pair in turn, whole rounds, an even number of them.
		for n := 0; !s.stop.Load() || n%2 != 0; n++ {
			for _, p := range pairs {
				if unix.Renameat2(unix.AT_FDCWD, p[0], unix.AT_FDCWD, p[1], unix.RENAME_EXCHANGE) != nil {
					panic("renameat2 failed: " + p[0])
				}
				s.swaps.Add(1)
			}
		}
	}()
	t.Cleanup(s.halt)
	return s
}

func (s *swapper) halt() {
	s.stop.Store(true)
	s.wg.Wait()
}

// TestCopyTreeSwappedFolder: a worker that can write the tree hub copies
// swaps a folder of it for a symlink to a folder of the host (and back,
// continuously) while hub copies the tree: no copy ever holds a host file.
func TestCopyTreeSwappedFolder(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("HUB_HOME", t.TempDir())
	base := t.TempDir()
	top := filepath.Join(base, "wt")
	host := filepath.Join(base, "host") // outside the tree: ~/.ssh, say
	const secret = "-----BEGIN OPENSSH PRIVATE KEY----- hub-test-secret-7f3a9c"
	files := []string{"index.js", "package.json", "lib/a.js", "lib/b.js", "lib/deep/c.js", "dist/d.js"}
	for _, f := range files {
		// The host folder has the same names (so a read through a link
		// finds something at each), all holding the secret.
		put(t, filepath.Join(host, f), secret, 0o600)
	}
	put(t, filepath.Join(host, "secret"), secret, 0o600)
	put(t, filepath.Join(host, "lib/secret"), secret, 0o600)
	// Packages, each swapped for a link (kept outside the copied folder)
	// to the host folder; and a folder deeper in one more.
	var pairs [][2]string
	link := func(dir, to string) {
		l := filepath.Join(top, "stash", strconv.Itoa(len(pairs)))
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, l); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, [2]string{filepath.Join(top, dir), l})
	}
	pkgs := []string{"a", "b", "c", "d", "e", "f"}
	for _, p := range pkgs {
		for _, f := range files {
			put(t, filepath.Join(top, "node_modules", p, f), "module "+f+"\n", 0o644)
		}
		link("node_modules/"+p, host)
	}
	for _, f := range files {
		put(t, filepath.Join(top, "node_modules/other/lib", f), "module "+f+"\n", 0o644)
	}
	link("node_modules/other/lib", filepath.Join(host, "lib"))
	sw := swap(t, pairs...)

	rounds, leaked, whole := raceRounds(), 0, 0
	var first string
	for i := range rounds {
		into := filepath.Join(base, "dst", strconv.Itoa(i))
		if err := os.MkdirAll(into, 0o700); err != nil {
			t.Fatal(err)
		}
		cp, err := copyTree(top, into, "node_modules", nil)
		if err == nil {
			whole++
		}
		var bad []string
		for _, p := range cp.paths {
			if filepath.Base(p) == "secret" {
				bad = append(bad, "path "+p)
			}
		}
		_ = filepath.WalkDir(into, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Name() == "secret" {
				bad = append(bad, "made "+p)
			}
			if d.Type().IsRegular() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "hub-test-secret") {
					bad = append(bad, "content of "+p)
				}
			}
			return nil
		})
		if len(bad) > 0 {
			leaked++
			if first == "" {
				first = strings.Join(bad, ", ")
			}
		}
		_ = os.RemoveAll(into)
	}
	sw.halt()
	t.Logf("%d copies complete, %d refused, %d swaps", whole, rounds-whole, sw.swaps.Load())
	if leaked > 0 {
		t.Fatalf("host files copied in %d of %d rounds; first: %s", leaked, rounds, first)
	}
	// Left alone, the tree copies whole.
	into := filepath.Join(base, "dst", "still")
	if err := os.MkdirAll(into, 0o700); err != nil {
		t.Fatal(err)
	}
	if cp, err := copyTree(top, into, "node_modules", nil); err != nil || len(cp.paths) != (len(pkgs)+1)*len(files) {
		t.Fatalf("copy of the still tree: %d paths, %v", len(cp.paths), err)
	}
}

// TestCopyTreeFifoSwappedIn: a fifo swapped in for a file (continuously) is
// never opened in a way that waits for a writer, nor read: every copy ends
// promptly, and a file copied holds the file's content.
func TestCopyTreeFifoSwappedIn(t *testing.T) {
	base := t.TempDir()
	top := filepath.Join(base, "wt")
	put(t, filepath.Join(top, "node_modules/dep/index.js"), "the file\n", 0o644)
	put(t, filepath.Join(top, "node_modules/dep/other.js"), "other\n", 0o644)
	if err := unix.Mkfifo(filepath.Join(top, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := swap(t, [2]string{filepath.Join(top, "node_modules/dep/index.js"), filepath.Join(top, "fifo")})
	done := make(chan string, 1)
	go func() {
		whole := 0
		for i := range 200 {
			into := filepath.Join(base, "dst", strconv.Itoa(i))
			if err := os.MkdirAll(into, 0o700); err != nil {
				done <- err.Error()
				return
			}
			if _, err := copyTree(top, into, "node_modules", nil); err == nil {
				whole++
			}
			fi, err := os.Lstat(filepath.Join(into, "node_modules/dep/index.js"))
			if err == nil && !fi.Mode().IsRegular() {
				done <- "the copy has a " + fi.Mode().String() + " for index.js"
				return
			}
			if b, err := os.ReadFile(filepath.Join(into, "node_modules/dep/index.js")); err == nil && string(b) != "the file\n" {
				done <- "the copy of index.js holds " + strconv.Quote(string(b))
				return
			}
		}
		done <- "" + strconv.Itoa(whole) + " whole"
	}()
	select {
	case got := <-done:
		if !strings.HasSuffix(got, " whole") {
			t.Fatal(got)
		}
		t.Logf("%s, %d swaps", got, sw.swaps.Load())
	case <-time.After(30 * time.Second):
		// A copy waits on the fifo: free it (a writer opens it) so the
		// test can end, and fail.
		sw.halt()
		if f, err := os.OpenFile(filepath.Join(top, "fifo"), os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		if f, err := os.OpenFile(filepath.Join(top, "node_modules/dep/index.js"), os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("copyTree blocked on a fifo")
	}
}

// TestMakeWritableSwappedFolder: a folder of the tree swapped for a link
// to a read-only folder of the host (and back, continuously) while
// makeWritable runs: the host folder's mode is never changed.
func TestMakeWritableSwappedFolder(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	put(t, filepath.Join(root, "mod/sub/f.go"), "package sub\n", 0o444)
	put(t, filepath.Join(outside, "sub/f.go"), "host\n", 0o444)
	symlink(t, outside, filepath.Join(root, "stash"))
	// Held open, to make the tree's folders read-only again each round
	// whatever their names are then.
	var fds []int
	for _, d := range []string{"mod/sub", "mod"} {
		fd, err := unix.Open(filepath.Join(root, d), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
	}
	for _, d := range []string{"sub", "."} {
		chmod(t, filepath.Join(outside, d), 0o555)
	}
	t.Cleanup(func() {
		os.Chmod(outside, 0o755)
		os.Chmod(filepath.Join(outside, "sub"), 0o755)
	})
	sw := swap(t, [2]string{filepath.Join(root, "mod"), filepath.Join(root, "stash")})
	for range raceRounds() {
		for _, fd := range fds {
			if err := unix.Fchmod(fd, 0o555); err != nil {
				t.Fatal(err)
			}
		}
		_ = makeWritable(root)
		for _, d := range []string{"sub", "."} {
			if fi, err := os.Lstat(filepath.Join(outside, d)); err != nil || fi.Mode().Perm() != 0o555 {
				sw.halt()
				t.Fatalf("the host folder %s is now %v (%v)", d, fi.Mode(), err)
			}
		}
	}
	sw.halt()
	t.Logf("%d swaps", sw.swaps.Load())
}

// raceRounds is how many rounds a race test runs: 300, or 30 in make
// check's fast lane (-short), where a race is less likely to be caught.
func raceRounds() int {
	if testing.Short() {
		return 30
	}
	return 300
}
