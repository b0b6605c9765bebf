package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var hubIdentity = Identity{Name: "hub bot", Email: "hub@localhost"}

// TestRoundTrip makes a job's worktree, changes it the ways an agent can
// (edit, add, rename, delete, binary, mode change, symlink, file turned
// into a symlink, odd file names), commits and reads the result back.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{
		"a.txt":     "a\n",
		"old.txt":   strings.Repeat("a line that stays the same\n", 20),
		"gone.txt":  "bye\n",
		"run.sh":    "echo hi\n",
		"becomes":   "a file\n",
		"keep/k.go": "package keep\n",
	})
	r := mustOpen(t, repo)
	base, err := r.Resolve("")
	if err != nil {
		t.Fatal(err)
	}

	// Hooks that would fail the checkout or leave a mark must not run.
	marker := filepath.Join(t.TempDir(), "hook-ran")
	writeFile(t, filepath.Join(repo, ".git", "hooks", "post-checkout"), "#!/bin/sh\ntouch '"+marker+"'\nexit 1\n", 0o755)

	wt := filepath.Join(t.TempDir(), "hub home", "worktrees", "job-1")
	if err := AddWorktree(ctx, r, wt, "hub/job-1", base); err != nil {
		t.Fatal(err)
	}
	if exists(marker) {
		t.Error("post-checkout hook ran during AddWorktree")
	}
	if got := gitT(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "hub/job-1" {
		t.Errorf("worktree is on %q, want hub/job-1", got)
	}
	if ok, err := BranchExists(ctx, r, "hub/job-1"); err != nil || !ok {
		t.Errorf("BranchExists(hub/job-1) = %v, %v; want true", ok, err)
	}
	if got, err := Head(ctx, wt); err != nil || got != base {
		t.Errorf("Head(worktree) = %q, %v; want %q", got, err, base)
	}

	// An agent's own commit first.
	writeFile(t, filepath.Join(wt, "a.txt"), "a\nmore\n", 0o644)
	agent := commitFixture(t, wt, "agent: extend a")

	// Then changes it left uncommitted.
	if err := os.Rename(filepath.Join(wt, "old.txt"), filepath.Join(wt, "new.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wt, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "blob.bin"), "\x00\x01\x02\x00\xff", 0o644)
	if err := os.Chmod(filepath.Join(wt, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wt, "becomes")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep/k.go", filepath.Join(wt, "becomes")); err != nil {
		t.Fatal(err)
	}
	odd := "we ird\tname ü.txt"
	writeFile(t, filepath.Join(wt, odd), "1\n2\n", 0o644)

	if d, err := Dirty(ctx, wt); err != nil || !d {
		t.Errorf("Dirty before commit = %v, %v; want true", d, err)
	}
	msg := "hub: work left uncommitted by job 1\n\n# not a comment\n\nHub-Job: job-1\nHub-Salvage: true\n"
	head, committed, err := CommitAll(ctx, wt, msg, hubIdentity)
	if err != nil || !committed {
		t.Fatalf("CommitAll = %q, %v, %v; want a commit", head, committed, err)
	}
	if got := gitT(t, wt, "rev-parse", "HEAD"); got != head {
		t.Errorf("CommitAll returned %s, HEAD is %s", head, got)
	}
	if got := gitT(t, wt, "log", "-1", "--format=%B"); got != strings.TrimSpace(msg) {
		t.Errorf("commit message %q, want %q", got, msg)
	}
	if d, err := Dirty(ctx, wt); err != nil || d {
		t.Errorf("Dirty after CommitAll = %v, %v; want false", d, err)
	}
	again, committed, err := CommitAll(ctx, wt, "nothing", hubIdentity)
	if err != nil || committed || again != head {
		t.Errorf("CommitAll with nothing to commit = %q, %v, %v; want %q, false, nil", again, committed, err, head)
	}

	// The results are read from the main checkout, as hub does.
	files, err := DiffFiles(ctx, repo, base, head)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []FileChange{
		{Path: "a.txt", Change: "modified", Added: 1},
		{Path: "becomes", Change: "type_changed", Added: 1, Deleted: 1},
		{Path: "blob.bin", Change: "added", Added: -1, Deleted: -1},
		{Path: "gone.txt", Change: "deleted", Deleted: 1},
		{Path: "link", Change: "added", Added: 1},
		{Path: "new.txt", OldPath: "old.txt", Change: "renamed"},
		{Path: "run.sh", Change: "modified"},
		{Path: odd, Change: "added", Added: 2},
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("DiffFiles (-want +got):\n%s", diff)
	}

	commits, err := Log(ctx, repo, base, head)
	if err != nil {
		t.Fatal(err)
	}
	wantCommits := []Commit{
		{SHA: agent, Subject: "agent: extend a", Author: "fixture <fixture@localhost>"},
		{SHA: head, Subject: "hub: work left uncommitted by job 1", Author: "hub bot <hub@localhost>",
			Trailers: map[string]string{"Hub-Job": "job-1", "Hub-Salvage": "true"}},
	}
	if diff := cmp.Diff(wantCommits, commits); diff != "" {
		t.Errorf("Log (-want +got):\n%s", diff)
	}
	if got := gitT(t, repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", head); got != "hub bot <hub@localhost>|hub bot <hub@localhost>" {
		t.Errorf("author|committer = %q", got)
	}
	if got, err := Log(ctx, repo, head, head); err != nil || len(got) != 0 {
		t.Errorf("Log(head..head) = %v, %v; want none", got, err)
	}

	// The patch rebuilds head's tree on base, binary, modes and links included.
	patch, err := Patch(ctx, repo, base, head)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), "GIT binary patch") || !strings.Contains(string(patch), "rename from old.txt") {
		t.Errorf("patch lacks the binary file or the rename:\n%s", patch)
	}
	check := filepath.Join(t.TempDir(), "check")
	if err := AddWorktree(ctx, r, check, "", base); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, check, "rev-parse", "--abbrev-ref", "HEAD"); got != "HEAD" {
		t.Errorf("worktree without a branch is on %q, want detached", got)
	}
	gitRaw(t, check, string(patch), "apply", "--index", "-")
	if got, want := gitT(t, check, "write-tree"), gitT(t, repo, "rev-parse", head+"^{tree}"); got != want {
		t.Errorf("patch applied on base gives tree %s, head has %s", got, want)
	}
	if err := RemoveWorktree(ctx, r, check, true); err != nil {
		t.Fatal(err)
	}

	// Cleanup: worktree, then branch; each twice.
	if err := RemoveWorktree(ctx, r, wt, false); err != nil {
		t.Fatal(err)
	}
	if exists(wt) {
		t.Error("worktree dir still there after RemoveWorktree")
	}
	if err := RemoveWorktree(ctx, r, wt, false); err != nil {
		t.Errorf("RemoveWorktree of a removed worktree: %v", err)
	}
	if got := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", got)
	}
	if ok, _ := BranchExists(ctx, r, "hub/job-1"); !ok {
		t.Error("the branch went with the worktree")
	}
	for range 2 {
		if err := DeleteBranch(ctx, r, "hub/job-1"); err != nil {
			t.Fatal(err)
		}
		if ok, err := BranchExists(ctx, r, "hub/job-1"); err != nil || ok {
			t.Errorf("BranchExists after DeleteBranch = %v, %v", ok, err)
		}
	}
}

func TestAddWorktreeFailure(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, t.TempDir(), nil)
	r := mustOpen(t, repo)
	base := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "branch", "hub/taken")
	home := t.TempDir()
	occupied := filepath.Join(home, "occupied")
	writeFile(t, filepath.Join(occupied, "mine.txt"), "not yours\n", 0o644)

	for _, tc := range []struct {
		name, path, branch, base string
		branchAfter              bool // whether the branch exists afterwards
	}{
		{name: "existing branch", path: filepath.Join(home, "wt1"), branch: "hub/taken", base: base, branchAfter: true},
		{name: "unknown base", path: filepath.Join(home, "wt2"), branch: "hub/new", base: "no-such-rev"},
		{name: "unknown base detached", path: filepath.Join(home, "wt3"), base: strings.Repeat("0", 40)},
		{name: "invalid branch name", path: filepath.Join(home, "wt4"), branch: "hub/bad..name", base: base},
		{name: "path exists", path: occupied, branch: "hub/other", base: base},
		{name: "option-like base", path: filepath.Join(home, "wt5"), base: "--orphan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AddWorktree(ctx, r, tc.path, tc.branch, tc.base)
			if err == nil {
				t.Fatal("AddWorktree succeeded")
			}
			t.Log(err)
			if tc.name == "existing branch" && !strings.Contains(err.Error(), `branch "hub/taken" already exists in`) {
				t.Errorf("error %q does not say the branch exists", err)
			}
			if tc.path != occupied && exists(tc.path) {
				t.Errorf("failed AddWorktree left %s", tc.path)
			}
			if got := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
				t.Errorf("failed AddWorktree left a worktree entry:\n%s", got)
			}
			if tc.branch != "" {
				if ok, _ := BranchExists(ctx, r, tc.branch); ok != tc.branchAfter {
					t.Errorf("branch %s exists = %v, want %v", tc.branch, ok, tc.branchAfter)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(occupied, "mine.txt")); err != nil || string(b) != "not yours\n" {
		t.Errorf("AddWorktree touched an existing path: %q, %v", b, err)
	}
}

func TestRemoveWorktreeDirty(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, t.TempDir(), nil)
	r := mustOpen(t, repo)
	wt := filepath.Join(t.TempDir(), "wt")
	if err := AddWorktree(ctx, r, wt, "hub/dirty", "HEAD"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "untracked.txt"), "x\n", 0o644)
	if err := RemoveWorktree(ctx, r, wt, false); err == nil {
		t.Fatal("RemoveWorktree without force removed a dirty worktree")
	}
	if !exists(filepath.Join(wt, "untracked.txt")) {
		t.Fatal("refused RemoveWorktree still lost the file")
	}
	if err := RemoveWorktree(ctx, r, wt, true); err != nil {
		t.Fatal(err)
	}
	if exists(wt) {
		t.Error("forced RemoveWorktree left the dir")
	}
	if err := DeleteBranch(ctx, r, "hub/dirty"); err != nil {
		t.Fatal(err)
	}
}
