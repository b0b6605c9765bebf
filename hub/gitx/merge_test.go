package gitx

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// TestMergeConflictsListsEachPathOnce: a merge-tree with conflicts in two
// files names both, once each, and touches nothing.
func TestMergeConflictsListsEachPathOnce(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, filepath.Join(t.TempDir(), "r"), map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	gitT(t, dir, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(dir, "a.txt"), "side a\n", 0o644)
	writeFile(t, filepath.Join(dir, "b.txt"), "side b\n", 0o644)
	commitFixture(t, dir, "side")
	gitT(t, dir, "checkout", "-q", "main")
	writeFile(t, filepath.Join(dir, "a.txt"), "main a\n", 0o644)
	writeFile(t, filepath.Join(dir, "b.txt"), "main b\n", 0o644)
	writeFile(t, filepath.Join(dir, "c.txt"), "main c\n", 0o644)
	head := commitFixture(t, dir, "main")

	files, err := MergeConflicts(ctx, dir, "HEAD", "side")
	if err != nil || !slices.Equal(files, []string{"a.txt", "b.txt"}) {
		t.Fatalf("conflicts %v, %v; want [a.txt b.txt]", files, err)
	}
	_, _, err = Merge(ctx, dir, "side", "merge", Identity{Name: "hub", Email: "hub@localhost"})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Into != "main" {
		t.Fatalf("merge: %v, want a ConflictError into main", err)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if s := gitT(t, dir, "status", "--porcelain"); s != "" {
		t.Errorf("the refused merge left %q", s)
	}
}

// TestReadFile: a file, a directory, a missing path and one over the limit.
func TestReadFile(t *testing.T) {
	dir := newRepo(t, filepath.Join(t.TempDir(), "r"), map[string]string{"d/x.txt": "hello\n", "big.txt": "0123456789"})
	r := mustOpen(t, dir)
	head := gitT(t, dir, "rev-parse", "HEAD")
	if data, size, ok, err := ReadFile(r, head, "d/x.txt", 100); err != nil || !ok || string(data) != "hello\n" || size != 6 {
		t.Errorf("d/x.txt: %q %d %v %v", data, size, ok, err)
	}
	for _, p := range []string{"d", "nope.txt", "d/nope"} {
		if _, _, ok, err := ReadFile(r, head, p, 100); ok || err != nil {
			t.Errorf("%s: exists %v, err %v; want absent, no error", p, ok, err)
		}
	}
	if _, size, _, err := ReadFile(r, head, "big.txt", 5); !errors.Is(err, ErrTooBig) || size != 10 {
		t.Errorf("big.txt over the limit: size %d, err %v", size, err)
	}
}
