package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkTreeCommit: the commit holds the work tree as it is (a modified
// file, a new one, a deleted one; an ignored one left out) on HEAD, and
// HEAD, the index, the refs and the work tree are as they were.
func TestWorkTreeCommit(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{".gitignore": "*.log\n", "keep.txt": "keep\n", "gone.txt": "gone\n"})
	write := func(name, body string) { t.Helper(); writeFile(t, filepath.Join(dir, name), body, 0o644) }
	git := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(gitT(t, dir, args...))
	}
	head := git(t, dir, "rev-parse", "HEAD")
	write("keep.txt", "changed\n")
	write("new.txt", "new\n")
	write("debug.log", "noise\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "keep.txt") // a staged change, as the user left it
	refs, status := git(t, dir, "for-each-ref"), git(t, dir, "status", "--porcelain")

	sha, err := WorkTreeCommit(ctx, filepath.Join(dir, "."), "hub step snapshot", HubIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if p := git(t, dir, "rev-parse", sha+"^"); p != head {
		t.Errorf("parent %s, want HEAD %s", p, head)
	}
	if got := git(t, dir, "show", sha+":keep.txt"); got != "changed" {
		t.Errorf("keep.txt = %q", got)
	}
	if got := git(t, dir, "show", sha+":new.txt"); got != "new" {
		t.Errorf("new.txt = %q", got)
	}
	files := git(t, dir, "ls-tree", "--name-only", sha)
	if strings.Contains(files, "gone.txt") || strings.Contains(files, "debug.log") {
		t.Errorf("the commit holds %q", files)
	}
	if git(t, dir, "rev-parse", "HEAD") != head || git(t, dir, "for-each-ref") != refs || git(t, dir, "status", "--porcelain") != status {
		t.Errorf("the repository changed: HEAD, refs or status")
	}
}
