package gitx

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMergedWork builds main, a job branch merged into main, one left
// unmerged and one with no commits, and checks what IsAncestor and
// BranchesContaining say about each tip.
func TestMergedWork(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, filepath.Join(t.TempDir(), "repo"), nil)
	base := gitT(t, repo, "rev-parse", "HEAD")

	gitT(t, repo, "branch", "hub/merged")
	gitT(t, repo, "branch", "hub/unmerged")
	gitT(t, repo, "branch", "hub/empty")
	gitT(t, repo, "switch", "-q", "hub/merged")
	writeFile(t, filepath.Join(repo, "m.txt"), "m\n", 0o644)
	merged := commitFixture(t, repo, "merged work")
	gitT(t, repo, "switch", "-q", "hub/unmerged")
	writeFile(t, filepath.Join(repo, "u.txt"), "u\n", 0o644)
	unmerged := commitFixture(t, repo, "unmerged work")
	gitT(t, repo, "switch", "-q", "main")
	gitT(t, repo, "merge", "-q", "--no-ff", "--no-edit", "hub/merged")

	for _, tc := range []struct {
		name       string
		tip        string
		beyondBase bool
		containing []string
	}{
		{"merged", merged, true, []string{"hub/merged", "main"}},
		{"unmerged", unmerged, true, []string{"hub/unmerged"}},
		{"no commits", base, false, []string{"hub/empty", "hub/merged", "hub/unmerged", "main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			anc, err := IsAncestor(ctx, repo, tc.tip, base)
			if err != nil || anc == tc.beyondBase {
				t.Errorf("IsAncestor(tip, base) = %v, %v; want %v", anc, err, !tc.beyondBase)
			}
			got, err := BranchesContaining(ctx, repo, tc.tip)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.containing, got); diff != "" {
				t.Errorf("BranchesContaining (-want +got):\n%s", diff)
			}
		})
	}

	if ok, err := IsAncestor(ctx, repo, base, merged); err != nil || !ok {
		t.Errorf("IsAncestor(base, merged) = %v, %v; want true", ok, err)
	}
	if _, err := IsAncestor(ctx, repo, "0123456789012345678901234567890123456789", base); err == nil {
		t.Error("IsAncestor of a commit that does not exist: no error")
	}
	if _, err := BranchesContaining(ctx, repo, "--all"); err == nil {
		t.Error("BranchesContaining took an option for a commit")
	}
}
