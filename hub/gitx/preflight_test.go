package gitx

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckBranchRoom: a branch named hub, loose or packed, leaves no room
// for hub/<id> and is refused with what to do; branches under hub/ and a
// tag named hub are fine.
func TestCheckBranchRoom(t *testing.T) {
	repo := newRepo(t, t.TempDir(), nil)
	r := mustOpen(t, repo)
	if err := r.CheckBranchRoom("hub"); err != nil {
		t.Fatalf("a repository without a branch hub: %v", err)
	}
	gitT(t, repo, "branch", "hub/earlier")
	gitT(t, repo, "tag", "hub")
	if err := r.CheckBranchRoom("hub"); err != nil {
		t.Fatalf("branches under hub/ and a tag hub: %v", err)
	}
	gitT(t, repo, "branch", "-D", "hub/earlier")
	gitT(t, repo, "branch", "hub")
	want := repo + ` has a branch named "hub", which leaves no room for hub's job branches (hub/<id>): git cannot hold a branch hub and branches under hub/ at once`
	err := r.CheckBranchRoom("hub")
	if !errors.Is(err, ErrBranchConflict) || err.Error() != want {
		t.Fatalf("loose branch hub: %v\nwant %s", err, want)
	}
	gitT(t, repo, "pack-refs", "--all")
	if exists(filepath.Join(repo, ".git", "refs", "heads", "hub")) {
		t.Fatal("pack-refs left refs/heads/hub loose")
	}
	if err := r.CheckBranchRoom("hub"); !errors.Is(err, ErrBranchConflict) {
		t.Fatalf("packed branch hub: %v", err)
	}
	// What git itself says when the branch is made anyway, as hub says it.
	err = AddWorktree(t.Context(), r, filepath.Join(t.TempDir(), "wt"), "hub/j1", gitT(t, repo, "rev-parse", "HEAD"))
	if !errors.Is(err, ErrBranchConflict) || !strings.Contains(err.Error(), "branch hub is in its way") || !strings.Contains(err.Error(), "branch -m hub hub-old") {
		t.Fatalf("AddWorktree with a branch hub: %v", err)
	}
}

// TestOpenSparse: a sparse checkout in cone mode (extensions.worktreeConfig,
// which go-git refuses) opens, resolves and reads in-process, and so does a
// linked worktree of it; an extension hub cannot read is refused as such.
func TestOpenSparse(t *testing.T) {
	base := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(base, "repo"), map[string]string{"in/a.txt": "a\n", "out/b.txt": "b\n", "top.txt": "t\n"})
	gitT(t, repo, "sparse-checkout", "set", "--cone", "in")
	if got := gitT(t, repo, "config", "extensions.worktreeConfig"); got != "true" {
		t.Fatalf("sparse-checkout did not turn on worktreeConfig: %q", got)
	}
	if exists(filepath.Join(repo, "out", "b.txt")) {
		t.Fatal("the checkout is not sparse")
	}
	head := gitT(t, repo, "rev-parse", "HEAD")
	linked := filepath.Join(base, "linked")
	gitT(t, repo, "worktree", "add", "-q", "-b", "side", linked)
	for _, dir := range []string{repo, filepath.Join(repo, "in"), linked} {
		r, err := Open(dir)
		if err != nil {
			t.Fatalf("Open(%s): %v", dir, err)
		}
		if sha, err := r.Resolve(""); err != nil || sha != head {
			t.Errorf("Resolve in %s = %s, %v; want %s", dir, sha, err, head)
		}
		if data, _, ok, err := ReadFile(r, head, "out/b.txt", 100); err != nil || !ok || string(data) != "b\n" {
			t.Errorf("ReadFile out/b.txt in %s = %q, %v, %v", dir, data, ok, err)
		}
		if err := r.CheckBranchRoom("hub"); err != nil {
			t.Errorf("CheckBranchRoom in %s: %v", dir, err)
		}
	}
	gitT(t, repo, "config", "core.repositoryformatversion", "1")
	gitT(t, repo, "config", "extensions.refStorage", "reftable")
	_, err := Open(repo)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "refstorage") {
		t.Errorf("Open with extensions.refStorage: %v; want ErrUnsupported naming it", err)
	}
}

// TestOpenOrphan: a HEAD on an orphan branch in a repository with commits
// opens; Resolve of HEAD says what to pass, and an explicit base resolves.
func TestOpenOrphan(t *testing.T) {
	repo := newRepo(t, t.TempDir(), nil)
	main := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "checkout", "-q", "--orphan", "new")
	r, err := Open(repo)
	if err != nil {
		t.Fatalf("Open on an orphan HEAD: %v", err)
	}
	_, err = r.Resolve("")
	want := repo + " is on branch new, which has no commits yet; pass a base to start from (such as main), or commit something on new first"
	if !errors.Is(err, ErrNoCommits) || err.Error() != want {
		t.Errorf("Resolve(\"\") = %v\nwant %s", err, want)
	}
	if sha, err := r.Resolve("main"); err != nil || sha != main {
		t.Errorf("Resolve(main) = %s, %v; want %s", sha, err, main)
	}
}
