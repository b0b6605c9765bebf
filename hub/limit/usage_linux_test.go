package limit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/limit"
)

// blocks is an independent count: lstat's blocks of every entry of the
// trees, each inode once, links not followed (filepath.WalkDir does not).
func blocks(t *testing.T, roots ...string) int64 {
	t.Helper()
	seen := map[[2]uint64]bool{}
	var n int64
	for _, r := range roots {
		err := filepath.WalkDir(r, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				return err
			}
			id := [2]uint64{st.Dev, st.Ino}
			if !seen[id] {
				seen[id] = true
				n += st.Blocks * 512
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUsage: Usage counts a file's blocks once however many hard links
// reach it (in one folder or two), and never what a symbolic link points
// to: a link to a big folder of the host counts as the link only.
func TestUsage(t *testing.T) {
	root := t.TempDir()
	job, cache, host := filepath.Join(root, "job"), filepath.Join(root, "cache"), filepath.Join(root, "host")
	writeFile(t, filepath.Join(job, "a", "big"), 1<<20)
	writeFile(t, filepath.Join(job, "b", "small"), 100)
	writeFile(t, filepath.Join(cache, "c"), 4096)
	writeFile(t, filepath.Join(host, "huge"), 8<<20)
	for _, l := range []string{filepath.Join(job, "b", "again"), filepath.Join(cache, "big-too")} {
		if err := os.Link(filepath.Join(job, "a", "big"), l); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{filepath.Join(job, "host"): host, filepath.Join(job, "a", "huge"): filepath.Join(host, "huge")} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	got, err := limit.Usage(job, cache, filepath.Join(root, "absent"))
	if err != nil {
		t.Fatal(err)
	}
	if want := blocks(t, job, cache); got != want {
		t.Errorf("Usage = %d; want %d (lstat's count)", got, want)
	}
	if got < 1<<20 || got >= 2<<20 {
		t.Errorf("Usage = %d: want the 1 MiB file once, and none of the host's 8 MiB", got)
	}
	if one, _ := limit.Usage(job); one > got || one < 1<<20 {
		t.Errorf("Usage(job) = %d, Usage(job, cache) = %d", one, got)
	}
	// A folder given as a symbolic link is refused, not followed.
	link := filepath.Join(root, "link")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	if n, err := limit.Usage(link); err == nil || n != 0 {
		t.Errorf("Usage(a link to the host) = %d, %v; want an error and 0", n, err)
	}
}

// TestUsageSwap: a folder swapped for a symbolic link to the host while
// Usage walks never makes it walk or count the host.
func TestUsageSwap(t *testing.T) {
	root := t.TempDir()
	job, host := filepath.Join(root, "job"), filepath.Join(root, "host")
	for i := range 200 {
		writeFile(t, filepath.Join(job, "d"+strconv.Itoa(i), "f"), 10)
	}
	writeFile(t, filepath.Join(host, "huge"), 16<<20)
	done := make(chan struct{})
	go func() { // swap folders for links to the host and back, as fast as it can
		defer close(done)
		for i := 0; i < 2000; i++ {
			d := filepath.Join(job, "d"+strconv.Itoa(i%200))
			if os.Rename(d, d+".x") == nil && os.Symlink(host, d) == nil {
				os.Remove(d)
				os.Rename(d+".x", d)
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		n, err := limit.Usage(job)
		if err != nil {
			t.Fatal(err)
		}
		if n >= 16<<20 {
			t.Fatalf("Usage = %d: it counted the host's file through a link", n)
		}
	}
}

// BenchmarkUsage25k measures Usage on a tree of 25,000 files in 250
// folders (`go test -run '^$' -bench Usage ./hub/limit`).
func BenchmarkUsage25k(b *testing.B) {
	root := b.TempDir()
	for d := range 250 {
		dir := filepath.Join(root, "d"+strconv.Itoa(d/25), "e"+strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)), []byte("some content\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	start := time.Now()
	n, err := limit.Usage(root)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("first walk (cold-ish): %s, %d bytes", time.Since(start), n)
	b.ResetTimer()
	for b.Loop() {
		if _, err := limit.Usage(root); err != nil {
			b.Fatal(err)
		}
	}
}
