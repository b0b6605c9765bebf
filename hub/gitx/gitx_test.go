package gitx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "gitx-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		os.Setenv(k, "test")
	}
	for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		os.Setenv(k, "test@localhost")
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newRepo(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	write(t, filepath.Join(dir, "sub", "b.txt"), "b\n")
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "one")
	return dir
}

func TestOpen(t *testing.T) {
	repo := newRepo(t, "with spaces ü")
	plain := t.TempDir()
	empty := t.TempDir()
	run(t, empty, "init", "-q")
	bare := filepath.Join(t.TempDir(), "bare.git")
	run(t, repo, "clone", "-q", "--bare", repo, bare)
	linked := filepath.Join(t.TempDir(), "linked")
	run(t, repo, "worktree", "add", "-q", "-b", "side", linked)

	for _, tc := range []struct {
		name, path, top string
		err             error
	}{
		{"repo with spaces and unicode", repo, repo, nil},
		{"subdirectory", filepath.Join(repo, "sub"), repo, nil},
		{"linked worktree", linked, linked, nil},
		{"not a repo", plain, "", ErrNotRepo},
		{"missing", filepath.Join(plain, "nope"), "", ErrNotRepo},
		{"no commits", empty, "", ErrNoCommits},
		{"bare", bare, "", ErrBare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(tc.path)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Open(%s) error %v, want %v", tc.path, err, tc.err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.path) {
					t.Errorf("error %q does not name the path", err)
				}
				return
			}
			want, _ := filepath.EvalSymlinks(tc.top)
			if r.Top != want {
				t.Errorf("Top = %s, want %s", r.Top, want)
			}
		})
	}
	r, err := Open(linked)
	if err != nil {
		t.Fatal(err)
	}
	mainGit, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git"))
	if r.CommonDir != mainGit {
		t.Errorf("linked worktree CommonDir = %s, want %s", r.CommonDir, mainGit)
	}
}

func TestResolve(t *testing.T) {
	repo := newRepo(t, "r")
	first := run(t, repo, "rev-parse", "HEAD")
	write(t, filepath.Join(repo, "c.txt"), "c\n")
	run(t, repo, "add", "-A")
	run(t, repo, "commit", "-q", "-m", "two")
	second := run(t, repo, "rev-parse", "HEAD")
	run(t, repo, "tag", "light", first)
	run(t, repo, "tag", "-a", "-m", "annotated", "heavy", first)
	r, err := Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]string{"": second, "HEAD": second, "main": second, "HEAD~1": first,
		"light": first, "heavy": first, first[:8]: first} {
		got, err := r.Resolve(rev)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", rev, got, err, want)
		}
	}
	if _, err := r.Resolve("no-such"); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("unknown revision: %v", err)
	}
}

func TestWorktreeCommitDiffLog(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, "r")
	write(t, filepath.Join(repo, "old.txt"), strings.Repeat("line\n", 20))
	write(t, filepath.Join(repo, "gone.txt"), "bye\n")
	write(t, filepath.Join(repo, "run.sh"), "echo\n")
	run(t, repo, "add", "-A")
	run(t, repo, "commit", "-q", "-m", "more")
	r, err := Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := r.Resolve("")
	wt := filepath.Join(t.TempDir(), "wt")
	if err := AddWorktree(ctx, r, wt, "hub/x", base); err != nil {
		t.Fatal(err)
	}
	// A failing add (the branch exists) leaves nothing behind.
	wt2 := filepath.Join(t.TempDir(), "wt2")
	if err := AddWorktree(ctx, r, wt2, "hub/x", base); err == nil {
		t.Fatal("AddWorktree on an existing branch succeeded")
	}
	if _, err := os.Stat(wt2); err == nil {
		t.Error("failed AddWorktree left its directory")
	}

	if err := os.Rename(filepath.Join(wt, "old.txt"), filepath.Join(wt, "new.txt")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(wt, "gone.txt"))
	write(t, filepath.Join(wt, "a.txt"), "a\nmore\n")
	os.WriteFile(filepath.Join(wt, "blob.bin"), []byte{0, 1, 2, 0, 255}, 0o644)
	os.Chmod(filepath.Join(wt, "run.sh"), 0o755)
	os.Symlink("a.txt", filepath.Join(wt, "link"))

	st, err := Status(ctx, wt)
	if err != nil || len(st) == 0 {
		t.Fatalf("Status: %v %v", st, err)
	}
	head, made, err := CommitAll(ctx, wt, "work\n\nHub-Job: x\nHub-Salvage: true\n", Identity{Name: "hub", Email: "hub@localhost"})
	if err != nil || !made {
		t.Fatalf("CommitAll: %v %v", made, err)
	}
	if d, _ := Dirty(ctx, wt); d {
		t.Error("worktree still dirty after CommitAll")
	}
	if again, made, err := CommitAll(ctx, wt, "nothing", Identity{Name: "hub", Email: "hub@localhost"}); err != nil || made || again != head {
		t.Errorf("CommitAll with nothing to commit: %s %v %v", again, made, err)
	}
	files, err := DiffFiles(ctx, repo, base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "a.txt", Change: "modified", Added: 1},
		{Path: "blob.bin", Change: "added", Added: -1, Deleted: -1},
		{Path: "gone.txt", Change: "deleted", Deleted: 1},
		{Path: "link", Change: "added", Added: 1},
		{Path: "new.txt", OldPath: "old.txt", Change: "renamed"},
		{Path: "run.sh", Change: "modified"},
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("DiffFiles (-want +got):\n%s", diff)
	}
	log, err := Log(ctx, repo, base, head)
	if err != nil || len(log) != 1 {
		t.Fatalf("Log: %+v %v", log, err)
	}
	if log[0].SHA != head || log[0].Subject != "work" || log[0].Author != "hub <hub@localhost>" ||
		log[0].Trailers["Hub-Job"] != "x" || log[0].Trailers["Hub-Salvage"] != "true" {
		t.Errorf("Log: %+v", log[0])
	}
	patch, err := Patch(ctx, repo, base, head)
	if err != nil || !strings.Contains(string(patch), "GIT binary patch") {
		t.Errorf("Patch lacks the binary file: %v", err)
	}
	if err := RemoveWorktree(ctx, r, wt, false); err != nil {
		t.Fatal(err)
	}
	if err := RemoveWorktree(ctx, r, wt, false); err != nil {
		t.Errorf("removing a removed worktree: %v", err)
	}
	if ok, _ := BranchExists(ctx, r, "hub/x"); !ok {
		t.Error("branch gone with the worktree")
	}
	if err := DeleteBranch(ctx, r, "hub/x"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := BranchExists(ctx, r, "hub/x"); ok {
		t.Error("branch still there")
	}
	if err := DeleteBranch(ctx, r, "hub/x"); err != nil {
		t.Errorf("deleting an absent branch: %v", err)
	}
}

func TestHooksDoNotRun(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, "r")
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, filepath.Join(repo, ".git", "hooks", "pre-commit"), "#!/bin/sh\ntouch "+marker+"\nexit 1\n")
	os.Chmod(filepath.Join(repo, ".git", "hooks", "pre-commit"), 0o755)
	write(t, filepath.Join(repo, "x.txt"), "x\n")
	if _, made, err := CommitAll(ctx, repo, "x", Identity{Name: "hub", Email: "hub@localhost"}); err != nil || !made {
		t.Fatalf("CommitAll: %v %v", made, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the repo's pre-commit hook ran")
	}
}

func TestLockRepo(t *testing.T) {
	repo := newRepo(t, "r")
	r, err := Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	locks := t.TempDir()
	unlock, err := LockRepo(context.Background(), locks, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := LockRepo(ctx, locks, r); err == nil {
		t.Fatal("second LockRepo got the lock while the first held it")
	}
	unlock()
	unlock2, err := LockRepo(context.Background(), locks, r)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
	if ents, _ := os.ReadDir(filepath.Join(repo, ".git")); len(ents) == 0 {
		t.Fatal("repo .git empty")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hub.lock")); err == nil {
		t.Error("LockRepo wrote into the user's repo")
	}
}
