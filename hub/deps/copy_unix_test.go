//go:build unix

package deps

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyTreeLeavesOutOtherKinds: a fifo and a socket in a tree are left
// out (the fifo never opened: the copy does not wait for a writer).
func TestCopyTreeLeavesOutOtherKinds(t *testing.T) {
	top := t.TempDir()
	put(t, filepath.Join(top, "node_modules/dep/index.js"), "x\n", 0o644)
	if err := unix.Mkfifo(filepath.Join(top, "node_modules/dep/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(top, "node_modules/dep/sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	into := t.TempDir()
	cp, err := copyTree(top, into, "node_modules", nil)
	if err != nil || !slices.Equal(cp.paths, []string{"node_modules/dep/index.js"}) {
		t.Fatalf("copyTree = %v, %v", cp.paths, err)
	}
	for _, name := range []string{"fifo", "sock"} {
		if _, err := os.Lstat(filepath.Join(into, "node_modules/dep", name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s copied: %v", name, err)
		}
	}
	// unchanged holds them against the tree, as it always has: a tree with
	// a fifo in it is never kept.
	if unchanged(top, []string{"node_modules"}, cp.stamps) {
		t.Error("unchanged ignores a fifo")
	}
}

// TestCopyTreeNeverThroughALink: a link where a folder of the path to the
// tree is expected, in the source or in the copy, fails the copy, and
// nothing is read or written through it.
func TestCopyTreeNeverThroughALink(t *testing.T) {
	base := t.TempDir()
	top, into, outside := filepath.Join(base, "wt"), filepath.Join(base, "job"), filepath.Join(base, "outside")
	put(t, filepath.Join(top, "packages/a/node_modules/dep/index.js"), "a\n", 0o644)
	put(t, filepath.Join(outside, "node_modules/dep/host.js"), "host\n", 0o644)
	if err := os.MkdirAll(filepath.Join(into, "packages"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The copy's packages/a is a link out.
	symlink(t, filepath.Join(base, "empty"), filepath.Join(into, "packages/a"))
	if err := os.Mkdir(filepath.Join(base, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := copyTree(top, into, "packages/a/node_modules", nil); err == nil {
		t.Error("copied through a link in the destination")
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "empty")); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	// The source's packages/b is a link out.
	symlink(t, outside, filepath.Join(top, "packages/b"))
	if err := os.MkdirAll(filepath.Join(into, "packages/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if cp, err := copyTree(top, into, "packages/b/node_modules", nil); err == nil || len(cp.paths) != 0 {
		t.Errorf("copied through a link in the source: %v, %v", cp.paths, err)
	}
	if unchanged(top, []string{"packages/b/node_modules"}, map[string]stamp{}) {
		t.Error("unchanged read through a link")
	}
}

// TestStampOfStat: the stamp copyTree takes from an fstat is the one
// os.Lstat gives, for every kind of file.
func TestStampOfStat(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "file"), "x\n", 0o644)
	put(t, filepath.Join(dir, "setid"), "x\n", 0o755)
	chmod(t, filepath.Join(dir, "setid"), 0o755|fs.ModeSetuid|fs.ModeSetgid)
	if err := os.Mkdir(filepath.Join(dir, "sticky"), 0o755); err != nil {
		t.Fatal(err)
	}
	chmod(t, filepath.Join(dir, "sticky"), 0o1777|fs.ModeSticky)
	symlink(t, "file", filepath.Join(dir, "link"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, name := range []string{"file", "setid", "sticky", "link", "fifo"} {
		var st unix.Stat_t
		if err := fstatat(fd, name, &st); err != nil {
			t.Fatal(err)
		}
		if got, want := stampOfStat(&st), mustStamp(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s: stampOfStat = %+v, want %+v", name, got, want)
		}
	}
}

// TestMakeWritable: the folders of a tree become writable by their
// owner (its read-only files too), so the tree can be removed; a folder a
// link in it points at is left as it is.
func TestMakeWritable(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	put(t, filepath.Join(root, "mod/a/f.go"), "package a\n", 0o444)
	put(t, filepath.Join(root, "mod/b/g.go"), "package b\n", 0o444)
	put(t, filepath.Join(root, "locked/h"), "h\n", 0o644)
	put(t, filepath.Join(outside, "sub/secret"), "s\n", 0o444)
	symlink(t, outside, filepath.Join(root, "mod/out"))
	symlink(t, filepath.Join(outside, "sub/secret"), filepath.Join(root, "mod/a/secret"))
	for _, d := range []string{"mod/a", "mod/b", "mod", "."} {
		chmod(t, filepath.Join(root, d), 0o555)
	}
	chmod(t, filepath.Join(root, "locked"), 0o000)
	chmod(t, filepath.Join(outside, "sub"), 0o555)
	chmod(t, outside, 0o555)
	t.Cleanup(func() {
		os.Chmod(outside, 0o755)
		os.Chmod(filepath.Join(outside, "sub"), 0o755)
	})

	// A link as the root: nothing to change, and nothing changed.
	symlink(t, outside, filepath.Join(base, "link"))
	if err := makeWritable(filepath.Join(base, "link")); err != nil {
		t.Errorf("makeWritable(a link) = %v", err)
	}
	if err := makeWritable(root); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{
		".": fs.ModeDir | 0o755, "mod": fs.ModeDir | 0o755, "mod/a": fs.ModeDir | 0o755, "mod/b": fs.ModeDir | 0o755,
		"locked": fs.ModeDir | 0o700, "mod/a/f.go": 0o644, "mod/b/g.go": 0o644, "locked/h": 0o644,
		"../outside": fs.ModeDir | 0o555, "../outside/sub": fs.ModeDir | 0o555, "../outside/sub/secret": 0o444,
	} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, want)
		}
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "sub/secret")); err != nil {
		t.Errorf("the outside folder lost its file: %v", err)
	}
	if err := makeWritable(filepath.Join(base, "gone")); err != nil {
		t.Errorf("makeWritable(nothing) = %v", err)
	}
}
