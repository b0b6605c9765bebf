package deps

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// put writes the file p (and its folders), with mode (the umask aside).
func put(t testing.TB, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func chmod(t testing.TB, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestCopyTreeAsItIs: a tree is copied as it is: folders with their modes
// (writable by their owner), files with theirs, links relinked, tools'
// caches left out; each path made comes with the stamp of what was read.
func TestCopyTreeAsItIs(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("HUB_HOME", t.TempDir())
	base := t.TempDir()
	top := filepath.Join(base, "wt")
	outside := filepath.Join(base, "outside")
	put(t, filepath.Join(outside, "x.js"), "outside\n", 0o644)
	nm := filepath.Join(top, "node_modules")
	put(t, filepath.Join(nm, "dep/index.js"), "module.exports = 1;\n", 0o644)
	put(t, filepath.Join(nm, "dep/bin/cli"), "#!/bin/sh\necho hi\n", 0o755)
	put(t, filepath.Join(nm, "dep/private.txt"), "mine\n", 0o600)
	put(t, filepath.Join(nm, "dep/empty"), "", 0o644)
	put(t, filepath.Join(nm, "ro/file.js"), "read only\n", 0o444)
	put(t, filepath.Join(nm, "ro/sub/deep.js"), "deep\n", 0o644)
	put(t, filepath.Join(nm, "priv/p.js"), "p\n", 0o644)
	if err := os.MkdirAll(filepath.Join(nm, "empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../dep/bin/cli", filepath.Join(nm, ".bin/cli"))                  // relative, inside: kept
	symlink(t, filepath.Join(nm, "dep"), filepath.Join(nm, "abs"))               // absolute, inside: rewritten
	symlink(t, filepath.Join(outside, "x.js"), filepath.Join(nm, "out"))         // absolute, outside: kept
	symlink(t, "../../outside/x.js", filepath.Join(nm, "upout"))                 // relative, outside: named absolutely
	symlink(t, "nowhere", filepath.Join(nm, "dangling"))                         // relative, dangling: kept
	put(t, filepath.Join(nm, ".cache/nyc/a.json"), "{}\n", 0o644)                // a tool's cache: left out
	put(t, filepath.Join(nm, "dep/node_modules/.vite/deps.json"), "{}\n", 0o644) // so is a nested one
	put(t, filepath.Join(nm, "dep/.cache/kept.js"), "k\n", 0o644)                // not under node_modules
	chmod(t, filepath.Join(nm, "ro/sub"), 0o555)
	chmod(t, filepath.Join(nm, "ro"), 0o555)
	chmod(t, filepath.Join(nm, "priv"), 0o750)
	t.Cleanup(func() {
		_ = os.Chmod(filepath.Join(nm, "ro"), 0o755)
		_ = os.Chmod(filepath.Join(nm, "ro/sub"), 0o755)
	})

	into := filepath.Join(base, "job")
	if err := os.Mkdir(into, 0o700); err != nil {
		t.Fatal(err)
	}
	cp, err := copyTree(top, into, "node_modules", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node_modules/.bin/cli", "node_modules/abs", "node_modules/dangling",
		"node_modules/dep/.cache/kept.js", "node_modules/dep/bin/cli", "node_modules/dep/empty",
		"node_modules/dep/index.js", "node_modules/dep/private.txt", "node_modules/out",
		"node_modules/priv/p.js", "node_modules/ro/file.js", "node_modules/ro/sub/deep.js", "node_modules/upout",
	}
	if diff := cmp.Diff(want, cp.paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if !cp.absInside {
		t.Error("absInside is false; node_modules/abs names the tree absolutely")
	}
	modes := map[string]fs.FileMode{}
	links := map[string]string{}
	_ = filepath.WalkDir(into, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		r, _ := filepath.Rel(into, p)
		fi, _ := d.Info()
		modes[filepath.ToSlash(r)] = fi.Mode()
		if d.Type()&fs.ModeSymlink != 0 {
			links[filepath.ToSlash(r)], _ = os.Readlink(p)
		}
		return nil
	})
	wantModes := map[string]fs.FileMode{
		".":                               fs.ModeDir | 0o700,
		"node_modules":                    fs.ModeDir | 0o755,
		"node_modules/.bin":               fs.ModeDir | 0o755,
		"node_modules/dep":                fs.ModeDir | 0o755,
		"node_modules/dep/.cache":         fs.ModeDir | 0o755,
		"node_modules/dep/bin":            fs.ModeDir | 0o755,
		"node_modules/dep/node_modules":   fs.ModeDir | 0o755,
		"node_modules/empty-dir":          fs.ModeDir | 0o755,
		"node_modules/priv":               fs.ModeDir | 0o750,
		"node_modules/ro":                 fs.ModeDir | 0o755, // 0555, writable by its owner
		"node_modules/ro/sub":             fs.ModeDir | 0o755,
		"node_modules/.bin/cli":           fs.ModeSymlink | 0o777,
		"node_modules/abs":                fs.ModeSymlink | 0o777,
		"node_modules/dangling":           fs.ModeSymlink | 0o777,
		"node_modules/out":                fs.ModeSymlink | 0o777,
		"node_modules/upout":              fs.ModeSymlink | 0o777,
		"node_modules/dep/.cache/kept.js": 0o644,
		"node_modules/dep/bin/cli":        0o755,
		"node_modules/dep/empty":          0o644,
		"node_modules/dep/index.js":       0o644,
		"node_modules/dep/private.txt":    0o600,
		"node_modules/priv/p.js":          0o644,
		"node_modules/ro/file.js":         0o644, // 0444, writable by its owner
		"node_modules/ro/sub/deep.js":     0o644,
	}
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	wantLinks := map[string]string{
		"node_modules/.bin/cli": "../dep/bin/cli",
		"node_modules/abs":      filepath.Join(into, "node_modules/dep"),
		"node_modules/dangling": "nowhere",
		"node_modules/out":      filepath.Join(outside, "x.js"),
		"node_modules/upout":    filepath.Join(outside, "x.js"),
	}
	if diff := cmp.Diff(wantLinks, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	for _, r := range cp.paths {
		src, dst := filepath.Join(top, r), filepath.Join(into, r)
		fi, err := os.Lstat(src)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := cp.stamps[r]; !ok || got != stampOf(fi) {
			t.Errorf("stamp of %s = %+v, %v; want %+v", r, got, ok, stampOf(fi))
		}
		if fi.Mode().IsRegular() {
			a, _ := os.ReadFile(src)
			b, _ := os.ReadFile(dst)
			if string(a) != string(b) {
				t.Errorf("%s holds %q, want %q", r, b, a)
			}
		}
	}
	if len(cp.stamps) != len(cp.paths) {
		t.Errorf("%d stamps for %d paths", len(cp.stamps), len(cp.paths))
	}

	// A second copy into the same place finds the folder there: an error.
	if _, err := copyTree(top, into, "node_modules", nil); err == nil {
		t.Error("a copy over an existing folder succeeded")
	}
}

// TestCopyTreeNested: a tree deeper in the checkout (a workspace's
// node_modules) goes to the same place in the copy; a tree that is a link
// is copied as the link.
func TestCopyTreeNested(t *testing.T) {
	base := t.TempDir()
	top, into := filepath.Join(base, "wt"), filepath.Join(base, "job")
	put(t, filepath.Join(top, "packages/a/node_modules/dep/index.js"), "a\n", 0o644)
	put(t, filepath.Join(top, "shared/node_modules/dep/index.js"), "s\n", 0o644)
	symlink(t, "../../shared/node_modules", filepath.Join(top, "packages/b/node_modules"))
	for _, d := range []string{"packages/a", "packages/b"} {
		if err := os.MkdirAll(filepath.Join(into, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := copyTree(top, into, "packages/a/node_modules", nil)
	if err != nil || !slices.Equal(cp.paths, []string{"packages/a/node_modules/dep/index.js"}) {
		t.Fatalf("copyTree = %v, %v", cp.paths, err)
	}
	if b, err := os.ReadFile(filepath.Join(into, "packages/a/node_modules/dep/index.js")); err != nil || string(b) != "a\n" {
		t.Errorf("the copy holds %q, %v", b, err)
	}
	cp, err = copyTree(top, into, "packages/b/node_modules", nil)
	if err != nil || !slices.Equal(cp.paths, []string{"packages/b/node_modules"}) {
		t.Fatalf("copyTree of a link = %v, %v", cp.paths, err)
	}
	if to, err := os.Readlink(filepath.Join(into, "packages/b/node_modules")); err != nil || to != "../../shared/node_modules" {
		t.Errorf("the link copied points at %q, %v", to, err)
	}
	if !unchanged(top, []string{"packages/a/node_modules"}, map[string]stamp{"packages/a/node_modules/dep/index.js": mustStamp(t, filepath.Join(top, "packages/a/node_modules/dep/index.js"))}) {
		t.Error("unchanged: a nested tree left alone counts as changed")
	}
}

func mustStamp(t *testing.T, p string) stamp {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return stampOf(fi)
}

// TestCopyTreeRelocates: a small file naming where the tree was installed
// names where its copy is; other files, and large ones, are copied as
// they are.
func TestCopyTreeRelocates(t *testing.T) {
	base := t.TempDir()
	top, into := filepath.Join(base, "first"), filepath.Join(base, "second")
	venv := filepath.Join(top, ".venv")
	put(t, filepath.Join(venv, "bin/pip"), "#!"+venv+"/bin/python\nimport pip\n", 0o755)
	put(t, filepath.Join(venv, "pyvenv.cfg"), "home = /usr/bin\ncommand = python -m venv "+venv+"\n", 0o644)
	put(t, filepath.Join(venv, "lib/plain.py"), "print('hi')\n", 0o644)
	big := strings.Repeat("x", maxRelocate) + venv
	put(t, filepath.Join(venv, "lib/big.so"), big, 0o755)
	if err := os.Mkdir(into, 0o700); err != nil {
		t.Fatal(err)
	}
	cp, err := copyTree(top, into, ".venv", &relocation{from: top, to: into})
	if err != nil || len(cp.paths) != 4 {
		t.Fatalf("copyTree = %v, %v", cp.paths, err)
	}
	to := filepath.Join(into, ".venv")
	for name, want := range map[string]string{
		"bin/pip":      "#!" + to + "/bin/python\nimport pip\n",
		"pyvenv.cfg":   "home = /usr/bin\ncommand = python -m venv " + to + "\n",
		"lib/plain.py": "print('hi')\n",
		"lib/big.so":   big,
	} {
		b, err := os.ReadFile(filepath.Join(to, name))
		if err != nil || string(b) != want {
			t.Errorf("%s holds %.80q, %v; want %.80q", name, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(to, "bin/pip")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/pip relocated: %v, %v; want mode 0755", fi.Mode(), err)
	}
}

// TestUnchanged: unchanged holds for a tree left alone (a tool's cache
// written aside) and not once a file is added, removed, written, its
// mode changed, or a folder swapped for a link to a copy of itself.
// (It compares sizes, modes and mtimes: a rewrite of the same size whose
// mtime is put back is not seen.)
func TestUnchanged(t *testing.T) {
	top := t.TempDir()
	nm := filepath.Join(top, "node_modules")
	put(t, filepath.Join(nm, "dep/index.js"), "x\n", 0o644)
	put(t, filepath.Join(nm, "dep/lib/a.js"), "a\n", 0o644)
	symlink(t, "../dep/index.js", filepath.Join(nm, ".bin/dep"))
	cp, err := copyTree(top, t.TempDir(), "node_modules", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		change, undo  func()
		wantUnchanged bool
	}{
		{"left alone", func() {}, func() {}, true},
		{"a tool's cache written", func() { put(t, filepath.Join(nm, ".cache/x"), "x", 0o644) },
			func() { os.RemoveAll(filepath.Join(nm, ".cache")) }, true},
		{"a file added", func() { put(t, filepath.Join(nm, "dep/extra.js"), "x", 0o644) },
			func() { os.Remove(filepath.Join(nm, "dep/extra.js")) }, false},
		{"an empty folder added", func() { os.Mkdir(filepath.Join(nm, "new"), 0o755) },
			func() { os.Remove(filepath.Join(nm, "new")) }, true}, // folders are not held against it
		{"a file removed", func() { os.Rename(filepath.Join(nm, "dep/lib/a.js"), filepath.Join(top, "a.js")) },
			func() { os.Rename(filepath.Join(top, "a.js"), filepath.Join(nm, "dep/lib/a.js")) }, false},
		{"a file written", func() {
			future := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(nm, "dep/index.js"), future, future)
		}, func() {
			st := cp.stamps["node_modules/dep/index.js"]
			os.Chtimes(filepath.Join(nm, "dep/index.js"), time.Unix(0, st.mtime), time.Unix(0, st.mtime))
		}, false},
		{"a mode changed", func() { os.Chmod(filepath.Join(nm, "dep/index.js"), 0o755) },
			func() { os.Chmod(filepath.Join(nm, "dep/index.js"), 0o644) }, false},
		{"a folder swapped for a link to itself", func() {
			os.Rename(filepath.Join(nm, "dep/lib"), filepath.Join(top, "lib"))
			os.Symlink(filepath.Join(top, "lib"), filepath.Join(nm, "dep/lib"))
		}, func() {
			os.Remove(filepath.Join(nm, "dep/lib"))
			os.Rename(filepath.Join(top, "lib"), filepath.Join(nm, "dep/lib"))
		}, false},
	} {
		tc.change()
		if got := unchanged(top, []string{"node_modules"}, cp.stamps); got != tc.wantUnchanged {
			t.Errorf("%s: unchanged = %v, want %v", tc.name, got, tc.wantUnchanged)
		}
		tc.undo()
		if !unchanged(top, []string{"node_modules"}, cp.stamps) {
			t.Fatalf("%s, undone: counts as changed", tc.name)
		}
	}
	if unchanged(top, []string{"node_modules", "missing"}, cp.stamps) {
		t.Error("unchanged holds with a tree missing")
	}
}

// synthTree writes a node_modules of packages×folders×files small files
// (and a .bin link per package) under top.
func synthTree(tb testing.TB, top string, packages, folders, files int) int {
	tb.Helper()
	n := 0
	for p := range packages {
		pkg := filepath.Join(top, "node_modules", fmt.Sprintf("pkg%03d", p))
		for d := range folders {
			dir := filepath.Join(pkg, fmt.Sprintf("dir%02d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				tb.Fatal(err)
			}
			for f := range files {
				body := strings.Repeat(fmt.Sprintf("module.exports = %d;\n", n), 5+(n*37)%200)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.js", f)), []byte(body), 0o644); err != nil {
					tb.Fatal(err)
				}
				n++
			}
		}
		bin := filepath.Join(top, "node_modules", ".bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", filepath.Base(pkg), "dir00", "f00.js"), filepath.Join(bin, filepath.Base(pkg))); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkCopyTree copies a node_modules of 5,000 small files in 500
// folders (and 50 links).
func BenchmarkCopyTree(b *testing.B) {
	top := b.TempDir()
	want := synthTree(b, top, 50, 10, 10)
	dst := b.TempDir()
	for i := 0; i < b.N; i++ {
		into := filepath.Join(dst, fmt.Sprint(i))
		if err := os.Mkdir(into, 0o700); err != nil {
			b.Fatal(err)
		}
		cp, err := copyTree(top, into, "node_modules", nil)
		if err != nil || len(cp.paths) != want {
			b.Fatalf("copied %d of %d: %v", len(cp.paths), want, err)
		}
		b.StopTimer()
		if err := os.RemoveAll(into); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
