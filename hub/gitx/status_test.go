package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatus(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, t.TempDir(), map[string]string{
		"from.txt":     strings.Repeat("same old line\n", 10),
		"edit.txt":     "1\n",
		"staged.txt":   "1\n",
		"delete.txt":   "x\n",
		".gitignore":   "*.log\nbuild/\n",
		"dir/keep.txt": "k\n",
	})
	if d, err := Dirty(ctx, repo); err != nil || d {
		t.Fatalf("Dirty on a clean checkout = %v, %v", d, err)
	}
	if st, err := Status(ctx, repo); err != nil || st != nil {
		t.Fatalf("Status on a clean checkout = %v, %v", st, err)
	}

	// Ignored files alone do not make a tree dirty.
	writeFile(t, filepath.Join(repo, "debug.log"), "noise\n", 0o644)
	writeFile(t, filepath.Join(repo, "build", "out.bin"), "\x00", 0o644)
	if d, err := Dirty(ctx, repo); err != nil || d {
		t.Fatalf("Dirty with only ignored files = %v, %v", d, err)
	}

	if err := os.Mkdir(filepath.Join(repo, "to dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "mv", "from.txt", "to dir/to ü.txt")
	writeFile(t, filepath.Join(repo, "edit.txt"), "2\n", 0o644)
	writeFile(t, filepath.Join(repo, "staged.txt"), "2\n", 0o644)
	gitT(t, repo, "add", "staged.txt")
	if err := os.Remove(filepath.Join(repo, "delete.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "new", "deep", "a.txt"), "a\n", 0o644)
	writeFile(t, filepath.Join(repo, "new", "b\tc.txt"), "b\n", 0o644)

	got, err := Status(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	want := []StatusEntry{
		{Path: "delete.txt", X: ' ', Y: 'D'},
		{Path: "edit.txt", X: ' ', Y: 'M'},
		{Path: "staged.txt", X: 'M', Y: ' '},
		{Path: "to dir/to ü.txt", OldPath: "from.txt", X: 'R', Y: ' '},
		{Path: "new/b\tc.txt", X: '?', Y: '?'},
		{Path: "new/deep/a.txt", X: '?', Y: '?'},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	if d, err := Dirty(ctx, repo); err != nil || !d {
		t.Errorf("Dirty = %v, %v; want true", d, err)
	}

	// An untracked file alone is dirty too.
	clean := newRepo(t, t.TempDir(), nil)
	writeFile(t, filepath.Join(clean, "sub", "n.txt"), "n\n", 0o644)
	if d, err := Dirty(ctx, clean); err != nil || !d {
		t.Errorf("Dirty with an untracked file = %v, %v; want true", d, err)
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []StatusEntry
		bad  bool
	}{
		{name: "empty", in: ""},
		{name: "rename then modify", in: "R  new\x00old\x00 M x\x00",
			want: []StatusEntry{{Path: "new", OldPath: "old", X: 'R', Y: ' '}, {Path: "x", X: ' ', Y: 'M'}}},
		{name: "copy in the work tree", in: " C b\x00a\x00", want: []StatusEntry{{Path: "b", OldPath: "a", X: ' ', Y: 'C'}}},
		{name: "rename without old path", in: "R  new\x00", bad: true},
		{name: "garbage", in: "XYZ\x00", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Errorf("parseStatus(%q) = %v; want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorktreeChanges: what a worker has changed in its checkout against
// base, committed or not, untracked files included and ignored ones left
// out, on both layouts.
func TestWorktreeChanges(t *testing.T) {
	ctx := context.Background()
	for _, private := range []bool{false, true} {
		f := newCheckout(t, private, map[string]string{"keep.txt": "k\n", "edit.txt": "1\n", "gone.txt": "g\n", ".gitignore": "*.log\n"})
		f.worker(t, `echo c > committed.txt; git add -A; git commit -qm "a worker's commit"
echo 2 > edit.txt; rm gone.txt; mkdir "new dir"; echo n > "new dir/new file.txt"; echo ignored > debug.log`)
		got, err := f.c.Changes(ctx, f.base)
		if err != nil {
			t.Fatal(err)
		}
		want := []FileChange{
			{Path: "committed.txt", Change: "added"},
			{Path: "edit.txt", Change: "modified"},
			{Path: "gone.txt", Change: "deleted"},
			{Path: "new dir/new file.txt", Change: "added"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("private=%v: changes (-want +got):\n%s", private, diff)
		}
		if _, err := f.c.Changes(ctx, "--output=/tmp/x"); err == nil {
			t.Error("an option as base was accepted")
		}
	}
}
