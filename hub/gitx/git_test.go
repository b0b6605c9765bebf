package gitx

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestGitError(t *testing.T) {
	repo := newRepo(t, t.TempDir(), nil)
	_, err := Git(context.Background(), repo, "rev-parse", "--verify", "no-such")
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("Git error %v (%T) is not an *Error", err, err)
	}
	want := &Error{Args: []string{"rev-parse", "--verify", "no-such"}, Stderr: "fatal: Needed a single revision", ExitCode: 128}
	if diff := cmp.Diff(want, ge, cmpopts.IgnoreUnexported(Error{})); diff != "" {
		t.Errorf("Git error (-want +got):\n%s", diff)
	}
	if got, want := err.Error(), "git rev-parse --verify no-such: fatal: Needed a single revision"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}

	_, err = Git(context.Background(), filepath.Join(repo, "missing"), "status")
	if !errors.As(err, &ge) || ge.ExitCode != -1 {
		t.Errorf("Git in a missing dir = %v; want an *Error with ExitCode -1", err)
	}
}

func TestGitCancel(t *testing.T) {
	repo := newRepo(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The alias runs a shell that outlives git unless the whole group is killed.
	_, err := Git(ctx, repo, "-c", "alias.nap=!sleep 30", "nap")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Git after the deadline = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Git took %v to give up after the deadline", d)
	}
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode != -1 {
		t.Errorf("cancelled Git = %v; want an *Error with ExitCode -1", err)
	}
}

// hub may itself run inside a git hook, where GIT_DIR and GIT_WORK_TREE point
// at the repository whose hook runs. gitx must still work on the dir it is given.
func TestGitIgnoresLocationEnv(t *testing.T) {
	ctx := context.Background()
	mine := newRepo(t, filepath.Join(t.TempDir(), "mine"), nil)
	other := newRepo(t, filepath.Join(t.TempDir(), "other"), nil)
	want := gitT(t, mine, "rev-parse", "HEAD")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	writeFile(t, filepath.Join(mine, "new.txt"), "new\n", 0o644)
	if got, err := Head(ctx, mine); err != nil || got != want {
		t.Errorf("Head = %q, %v; want %q", got, err, want)
	}
	st, err := Status(ctx, mine)
	if diff := cmp.Diff([]StatusEntry{{Path: "new.txt", X: '?', Y: '?'}}, st); err != nil || diff != "" {
		t.Errorf("Status (-want +got), err %v:\n%s", err, diff)
	}
}
