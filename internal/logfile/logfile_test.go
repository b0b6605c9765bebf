package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A log rotates before a write would take it past its cap: the newest
// lines are in the log, the ones before in .1, and older ones are gone.
func TestRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.log")
	if err := os.WriteFile(path, []byte("from before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := func(i int) string { return strings.Repeat(string(rune('a'+i)), 39) + "\n" } // 40 bytes
	for i := range 7 {
		if _, err := l.Write([]byte(line(i))); err != nil {
			t.Fatal(err)
		}
	}
	// 12 + 40 + 40 = 92; the third line rotates: c d, then e f, then g.
	if got, want := read(t, path), line(6); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if got, want := read(t, Old(path)), line(4)+line(5); got != want {
		t.Errorf("old log = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// A write bigger than the cap still lands whole, in a log of its own.
func TestBigWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.log")
	l, err := Open(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write([]byte("small\n"))
	big := bytes.Repeat([]byte("x"), 50)
	if n, err := l.Write(big); n != 50 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if got := read(t, path); got != string(big) {
		t.Errorf("log = %q", got)
	}
	if got := read(t, Old(path)); got != "small\n" {
		t.Errorf("old log = %q", got)
	}
}

// Adopt follows a descriptor its starter pointed at the log (a process's
// stderr): after a rotation, what the process writes there itself lands
// in the new log too. It leaves alone a descriptor that is not the log.
func TestAdopt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shim.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	other, err := os.CreateTemp(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if l, err := Adopt(path, 50, int(other.Fd())); l != nil || err != nil {
		t.Fatalf("Adopt of another file = %v, %v; want nil, nil", l, err)
	}
	l, err := Adopt(path, 45, fd)
	if err != nil || l == nil {
		t.Fatalf("Adopt = %v, %v", l, err)
	}
	defer l.Close()
	l.Write([]byte(strings.Repeat("o", 40) + "\n"))
	l.Write([]byte("rotated\n"))
	if _, err := f.Write([]byte("panic: via the descriptor\n")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "rotated\npanic: via the descriptor\n" {
		t.Errorf("log = %q", got)
	}
	if got := read(t, Old(path)); got != strings.Repeat("o", 40)+"\n" {
		t.Errorf("old log = %q", got)
	}
}
