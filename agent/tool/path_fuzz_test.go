package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve resolves arbitrary paths in a real worktree holding files,
// symlinks inside and out, and one more symlink, "fz", whose target is
// fuzzed too (a worker can make any symlink it likes). Resolve must never
// panic, and a path it accepts must be the root or under it, with no
// symlink left on its existing part, so that it really is in the worktree;
// rel must name the same path from the root. resolveWrite, on top, must
// never accept the root itself or a path in .git.
func FuzzResolve(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root := filepath.Join(base, "wt")
	outside := filepath.Join(base, "wt-out") // shares the root's name as a prefix
	for _, d := range []string{filepath.Join(root, ".git"), filepath.Join(root, "sub", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(root, "a.txt"), filepath.Join(root, "sub", "b.txt"), filepath.Join(outside, "secret")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"out":      outside,                      // a directory outside, absolute
		"outrel":   "../wt-out/secret",           // a file outside, relative
		"in":       "sub",                        // a directory inside
		"sub/up":   "..",                         // the root, from below
		"sub/back": "../../wt/sub/deep",          // out by name and back in
		"dangling": "../wt-out/new",              // a file to be created outside
		"gitlink":  ".git",                       // .git by another name
		"loop":     "loop",                       // a loop
		"etc":      "/etc",                       // the system
		"chain":    "in/up/out",                  // inside, then outside
		"a.dir":    filepath.Join(root, "a.txt"), // a file, absolute
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			f.Fatal(err)
		}
	}
	w, err := New(root, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{
		{"", ""}, {"a.txt", ""}, {"sub/../a.txt", "sub"}, {"../wt-out/secret", ""}, {root + "/../wt-out/secret", ""},
		{"out/secret", ""}, {"outrel", ""}, {"in/b.txt", ""}, {"sub/up/sub/up/a.txt", ""}, {"sub/back/x", ""},
		{"dangling", ""}, {"gitlink/config", ""}, {".git/x", ""}, {"loop", ""}, {"etc/passwd", ""}, {"chain/secret", ""},
		{"a.dir/x", ""}, {"fz/x", "missing/../out"}, {"fz", "sub/../../wt-out/new"}, {"fz/b.txt", "in"},
		{"fz", "/" + root[1:] + "/a.txt"}, {"x\x00y", ""}, {"/", ""}, {"//" + root + "//a.txt/", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, target string) {
		fz := filepath.Join(root, "fz")
		if target != "" && !strings.ContainsRune(target, 0) {
			if err := os.Symlink(target, fz); err != nil {
				t.Skip(err) // too long, say
			}
			defer os.Remove(fz)
		}
		abs, rel, err := w.resolve(path)
		if err == nil {
			checkInside(t, root, path, target, abs, rel)
		}
		abs, rel, err = w.resolveWrite(path)
		if err == nil {
			checkInside(t, root, path, target, abs, rel)
			if rel == "." || inGit(rel) {
				t.Fatalf("resolveWrite(%q) with fz -> %q = %q: the root or in .git", path, target, rel)
			}
		}
	})
}

func checkInside(t *testing.T, root, path, target, abs, rel string) {
	t.Helper()
	if abs != root && !strings.HasPrefix(abs, root+"/") {
		t.Fatalf("resolve(%q) with fz -> %q = %q, outside the root %q", path, target, abs, root)
	}
	if filepath.Join(root, rel) != abs || !filepath.IsLocal(rel) && rel != "." {
		t.Fatalf("resolve(%q) with fz -> %q = %q, rel %q, which does not name it", path, target, abs, rel)
	}
	// The longest existing prefix must hold no symlink: it is where the
	// path really is.
	p := abs
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("resolve(%q) with fz -> %q = %q, where %q cannot be read: %v", path, target, abs, p, err)
		}
		p = filepath.Dir(p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatalf("resolve(%q) with fz -> %q = %q: %v", path, target, abs, err)
	}
	if real != p {
		t.Fatalf("resolve(%q) with fz -> %q = %q, which goes through a symlink: %q is really %q", path, target, abs, p, real)
	}
}
