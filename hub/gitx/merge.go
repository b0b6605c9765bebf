package gitx

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrDetached: the checkout is on a detached HEAD; there is no branch to merge into.
	ErrDetached = errors.New("detached HEAD")
	// ErrConflict: the merge would conflict; nothing was changed.
	ErrConflict = errors.New("merge conflict")
)

// ConflictError lists the paths a merge would leave in conflict.
type ConflictError struct {
	Branch, Into string
	Files        []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merging %s into %s would conflict in %s", e.Branch, e.Into, strings.Join(e.Files, ", "))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// CurrentBranch returns the short name of the branch checked out at dir, or
// ErrDetached.
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := runGit(ctx, dir, readOnly, "symbolic-ref", "--quiet", "--short", "HEAD")
	if exitCode(err) == 1 {
		return "", ErrDetached
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// MergeConflicts reports the paths that merging theirs into ours would leave
// in conflict, without touching any work tree, index or ref (git
// merge-tree). None means the merge is clean.
func MergeConflicts(ctx context.Context, dir, ours, theirs string) ([]string, error) {
	_, files, err := mergeTree(ctx, dir, readOnly, ours, theirs)
	return files, err
}

// Merge merges branch into the branch checked out at dir with a merge
// commit (message msg), without hooks. It checks first, in-memory, that the
// merge is clean: on a conflict it returns a *ConflictError and changes
// nothing. When the checkout has no identity of its own, the commit is made
// as fallback. It returns the new HEAD, and whether branch was already
// merged (then nothing changed).
func Merge(ctx context.Context, dir, branch, msg string, fallback Identity) (head string, already bool, err error) {
	if err := checkRev("branch", branch); err != nil {
		return "", false, err
	}
	into, err := CurrentBranch(ctx, dir)
	if err != nil {
		return "", false, err
	}
	if ok, err := IsAncestor(ctx, dir, branch, "HEAD"); err != nil {
		return "", false, err
	} else if ok {
		head, err := Head(ctx, dir)
		return head, true, err
	}
	files, err := MergeConflicts(ctx, dir, "HEAD", branch)
	if err != nil {
		return "", false, err
	}
	if len(files) > 0 {
		return "", false, &ConflictError{Branch: branch, Into: into, Files: files}
	}
	var o runOpts
	if name, _ := runGit(ctx, dir, readOnly, "config", "user.name"); strings.TrimSpace(string(name)) == "" {
		o.config = []string{"-c", "user.name=" + fallback.Name, "-c", "user.email=" + fallback.Email}
	}
	if _, err := runGit(ctx, dir, o, "merge", "--no-ff", "--no-edit", "--no-verify", "-m", msg, branch); err != nil {
		// A clean merge-tree can still fail here: an untracked file in the way.
		_, _ = runGit(ctx, dir, runOpts{}, "merge", "--abort")
		return "", false, err
	}
	head, err = Head(ctx, dir)
	return head, false, err
}
