package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("New accepted a missing root")
	}
	put(t, filepath.Join(dir, "file"), "x")
	if _, err := New(filepath.Join(dir, "file"), nil); err == nil {
		t.Error("New accepted a file as root")
	}
	if err := os.Symlink(dir, filepath.Join(dir, "..", filepath.Base(dir)+"-alias")); err != nil {
		t.Fatal(err)
	}
	w, err := New(filepath.Join(dir, "..", filepath.Base(dir)+"-alias"), nil)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if w.Root() != real {
		t.Errorf("Root() = %q, want the resolved %q", w.Root(), real)
	}
}

func TestResolve(t *testing.T) {
	f := newFixture(t, nil)
	r := f.root
	if err := os.Symlink("loop", filepath.Join(r, "loop")); err != nil {
		t.Fatal(err)
	}
	rootAlias := filepath.Join(filepath.Dir(r), "wt-alias")
	if err := os.Symlink(r, rootAlias); err != nil {
		t.Fatal(err)
	}
	ok := []struct{ in, want string }{
		{"", r},
		{".", r},
		{"sub/a.txt", r + "/sub/a.txt"},
		{r + "/sub/a.txt", r + "/sub/a.txt"}, // absolute, inside
		{rootAlias + "/sub/a.txt", r + "/sub/a.txt"},      // absolute through an alias of the root
		{"alias/a.txt", r + "/sub/a.txt"},                 // symlinked directory inside
		{"alias.txt", r + "/sub/a.txt"},                   // symlinked file inside
		{"sub/./../sub//a.txt", r + "/sub/a.txt"},         // cleaned
		{"new/dir/file.go", r + "/new/dir/file.go"},       // to be created
		{"alias/new/file.go", r + "/sub/new/file.go"},     // to be created through a link inside
		{"lngit/config", r + "/.git/config"},              // Resolve itself allows .git
		{"../wt/sub/a.txt", r + "/sub/a.txt"},             // climbs out and back in
		{"sub/../../wt/sub/a.txt", r + "/sub/a.txt"},      // the same
		{r + "/../wt/sub/../sub/a.txt", r + "/sub/a.txt"}, // absolute, cleaned
		{"lnrel/../sub/a.txt", r + "/sub/a.txt"},          // ".." is lexical: lnrel/.. is the root
		{"sub/a.txt/", r + "/sub/a.txt"},                  // a trailing slash is cleaned
	}
	for _, c := range ok {
		got, err := f.w.Resolve(c.in)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, want string }{
		{"../outside/secret.txt", "is outside the worktree; use a path relative to the worktree root"},
		{"..", "outside the worktree"},
		{"sub/../../x", "outside the worktree"},
		{"/etc/passwd", "outside the worktree"},
		{"/", "outside the worktree"},
		{f.outside + "/secret.txt", "outside the worktree"},
		{"lnfile", "leads outside the worktree through a symlink"},
		{"lndir/secret.txt", "leads outside the worktree through a symlink"},
		{"lnrel/secret.txt", "leads outside the worktree through a symlink"},
		{"lndir", "leads outside the worktree through a symlink"},
		{"dangle", "leads outside the worktree through a symlink"},
		{"lndir/new/deeper.txt", "leads outside the worktree through a symlink"},
		{rootAlias + "/lndir/secret.txt", "outside the worktree"},
		{"a\x00b", "NUL byte"},
		{"sub/a.txt/x", "not a directory"},
		{"loop", "too many levels of symbolic links"},
	}
	for _, c := range bad {
		got, err := f.w.Resolve(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%q) = %q, %v; want an error with %q", c.in, got, err, c.want)
		}
	}
}

// TestEscapesRefused tries to get out of the worktree with every tool that
// takes a path, each attempt its own case, and checks nothing outside (nor
// .git) was read, written or created.
func TestEscapesRefused(t *testing.T) {
	const outsideMsg = "outside the worktree"
	const gitMsg = "inside .git"
	type attempt struct {
		name string
		tool string
		args func(f *fixture) obj
		want string
	}
	path := func(p string) func(*fixture) obj { return func(*fixture) obj { return obj{"path": p} } }
	write := func(p string) func(*fixture) obj {
		return func(*fixture) obj { return obj{"path": p, "content": "pwned\n"} }
	}
	edit := func(p string) func(*fixture) obj {
		return func(*fixture) obj { return obj{"path": p, "old_text": "TOP", "new_text": "pwned"} }
	}
	grep := func(p string) func(*fixture) obj {
		return func(*fixture) obj { return obj{"pattern": "SECRET|core|root", "path": p} }
	}
	cases := []attempt{
		{"read ../outside", "read_file", path("../outside/secret.txt"), outsideMsg},
		{"read /etc/passwd", "read_file", path("/etc/passwd"), outsideMsg},
		{"read absolute outside", "read_file", func(f *fixture) obj { return obj{"path": f.outside + "/secret.txt"} }, outsideMsg},
		{"read symlink to file outside", "read_file", path("lnfile"), outsideMsg},
		{"read through symlink to dir outside", "read_file", path("lndir/secret.txt"), outsideMsg},
		{"read through relative symlink to dir outside", "read_file", path("lnrel/secret.txt"), outsideMsg},
		{"read sub/../../x", "read_file", path("sub/../../outside/secret.txt"), outsideMsg},

		{"write ../outside", "write_file", write("../outside/new.txt"), outsideMsg},
		{"write absolute outside", "write_file", func(f *fixture) obj { return obj{"path": f.outside + "/new.txt", "content": "pwned"} }, outsideMsg},
		{"write symlink to file outside", "write_file", write("lnfile"), outsideMsg},
		{"write through symlink to dir outside", "write_file", write("lndir/new.txt"), outsideMsg},
		{"write through symlink to dir outside, new subdir", "write_file", write("lndir/d/new.txt"), outsideMsg},
		{"write dangling symlink outside", "write_file", write("dangle"), outsideMsg},
		{"write sub/../../x", "write_file", write("sub/../../x"), outsideMsg},
		{"write .git/config", "write_file", write(".git/config"), gitMsg},
		{"write .git/hooks/new", "write_file", write(".git/hooks/pre-commit"), gitMsg},
		{"write .git itself", "write_file", write(".git"), gitMsg},
		{"write through symlink to .git", "write_file", write("lngit/config"), gitMsg},
		{"write nested .git", "write_file", write("sub/.git/config"), gitMsg},
		{"write the root", "write_file", write("."), "worktree root"},

		{"edit ../outside", "edit_file", edit("../outside/secret.txt"), outsideMsg},
		{"edit absolute outside", "edit_file", func(f *fixture) obj {
			return obj{"path": f.outside + "/secret.txt", "old_text": "TOP", "new_text": "pwned"}
		}, outsideMsg},
		{"edit symlink to file outside", "edit_file", edit("lnfile"), outsideMsg},
		{"edit through symlink to dir outside", "edit_file", edit("lndir/secret.txt"), outsideMsg},
		{"edit sub/../../x", "edit_file", edit("sub/../../outside/secret.txt"), outsideMsg},
		{"edit .git/config", "edit_file", func(*fixture) obj { return obj{"path": ".git/config", "old_text": "core", "new_text": "x"} }, gitMsg},
		{"edit through symlink to .git", "edit_file", func(*fixture) obj { return obj{"path": "lngit/config", "old_text": "core", "new_text": "x"} }, gitMsg},

		{"list ../outside", "list_dir", path("../outside"), outsideMsg},
		{"list /etc", "list_dir", path("/etc"), outsideMsg},
		{"list symlink to dir outside", "list_dir", path("lndir"), outsideMsg},
		{"list relative symlink to dir outside", "list_dir", path("lnrel"), outsideMsg},
		{"list sub/../..", "list_dir", path("sub/../.."), outsideMsg},

		{"grep ../outside", "grep", grep("../outside"), outsideMsg},
		{"grep /etc/passwd", "grep", grep("/etc/passwd"), outsideMsg},
		{"grep symlink to file outside", "grep", grep("lnfile"), outsideMsg},
		{"grep symlink to dir outside", "grep", grep("lndir"), outsideMsg},
		{"grep sub/../../x", "grep", grep("sub/../../outside"), outsideMsg},

		{"glob ../*", "glob", func(*fixture) obj { return obj{"pattern": "../outside/*"} }, "climbs out"},
		{"glob absolute outside", "glob", func(f *fixture) obj { return obj{"pattern": f.outside + "/*"} }, outsideMsg},
		{"glob through symlink to dir outside", "glob", func(*fixture) obj { return obj{"pattern": "lndir/sub/*.txt"} }, outsideMsg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			out, err := call(t, f.w, c.tool, c.args(f))
			if err == nil {
				t.Fatalf("not refused; got %q", out)
			}
			wantErr(t, err, c.want)
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error leaks the secret: %v", err)
			}
			if got := get(t, filepath.Join(f.outside, "secret.txt")); got != secret {
				t.Errorf("the file outside changed: %q", got)
			}
			if got := get(t, filepath.Join(f.root, ".git", "config")); got != "[core]\n" {
				t.Errorf(".git/config changed: %q", got)
			}
			for _, p := range []string{
				filepath.Join(f.outside, "new.txt"),
				filepath.Join(f.outside, "d"),
				filepath.Join(filepath.Dir(f.root), "x"),
				filepath.Join(f.root, ".git", "hooks"),
				filepath.Join(f.root, "sub", ".git"),
			} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was created", p)
				}
			}
			ents, _ := os.ReadDir(f.outside)
			if len(ents) != 1 {
				t.Errorf("the directory outside holds %d entries, want 1", len(ents))
			}
		})
	}
}

// TestWalksStayInside: listing, globbing and grepping the whole worktree
// neither descend into symlinks to outside nor read through them.
func TestWalksStayInside(t *testing.T) {
	f := newFixture(t, nil)
	out := mustCall(t, f.w, "grep", obj{"pattern": "SECRET"})
	if strings.Contains(out, "SECRET") || out != "no matches" {
		t.Errorf("grep over the worktree: %q", out)
	}
	out = mustCall(t, f.w, "list_dir", obj{"depth": 5})
	if strings.Contains(out, "\n  secret.txt") {
		t.Errorf("list_dir went through a symlink to outside:\n%s", out)
	}
	if !strings.Contains(out, "lndir -> "+f.outside) || strings.Contains(out, "config") {
		t.Errorf("list_dir output:\n%s", out)
	}
	out = mustCall(t, f.w, "glob", obj{"pattern": "**/*.txt"})
	if out != "alias.txt\nsub/a.txt" {
		t.Errorf("glob **/*.txt = %q", out)
	}
}

// TestSymlinksInsideWork: links that stay in the worktree are followed by
// every tool, and writing through one changes its target, not the link.
func TestSymlinksInsideWork(t *testing.T) {
	f := newFixture(t, nil)
	if out := mustCall(t, f.w, "read_file", obj{"path": "alias.txt"}); out != "   1| alpha" {
		t.Errorf("read alias.txt = %q", out)
	}
	if out := mustCall(t, f.w, "read_file", obj{"path": "alias/a.txt"}); out != "   1| alpha" {
		t.Errorf("read alias/a.txt = %q", out)
	}
	if out := mustCall(t, f.w, "read_file", obj{"path": f.root + "/sub/a.txt"}); out != "   1| alpha" {
		t.Errorf("read by absolute path = %q", out)
	}
	mustCall(t, f.w, "edit_file", obj{"path": "alias/a.txt", "old_text": "alpha", "new_text": "beta"})
	mustCall(t, f.w, "write_file", obj{"path": "alias.txt", "content": "gamma\n"})
	if got := get(t, filepath.Join(f.root, "sub", "a.txt")); got != "gamma\n" {
		t.Errorf("sub/a.txt = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(f.root, "alias.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("alias.txt is no longer a symlink: %v %v", fi, err)
	}
	mustCall(t, f.w, "write_file", obj{"path": "alias/new.txt", "content": "new\n"})
	if got := get(t, filepath.Join(f.root, "sub", "new.txt")); got != "new\n" {
		t.Errorf("sub/new.txt = %q", got)
	}
	if out := mustCall(t, f.w, "list_dir", obj{"path": "alias"}); out != "a.txt\nnew.txt" {
		t.Errorf("list alias = %q", out)
	}
	if out := mustCall(t, f.w, "grep", obj{"pattern": "gamma", "path": "alias"}); out != "sub/a.txt:1: gamma" {
		t.Errorf("grep in alias = %q", out)
	}
	if out := mustCall(t, f.w, "grep", obj{"pattern": "gamma", "path": "alias.txt"}); out != "sub/a.txt:1: gamma" {
		t.Errorf("grep alias.txt = %q", out)
	}
	// Reading .git is allowed; only writing is refused.
	if out := mustCall(t, f.w, "read_file", obj{"path": ".git/config"}); out != "   1| [core]" {
		t.Errorf("read .git/config = %q", out)
	}
}
