package gitx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// AddWorktree makes a worktree of r at path (which must not exist; its parent
// is created) checked out at base. With a branch name it creates that branch
// at base (and fails if the branch exists); with "" the worktree is detached.
// On failure it leaves nothing behind: no directory, no worktree entry, no
// new branch.
func AddWorktree(ctx context.Context, r *Repo, path, branch, base string) error {
	if err := checkRev("base", base); err != nil {
		return err
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("add worktree: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("add worktree: %s already exists; pass a path that does not exist", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("add worktree: %w", err)
	}
	args := []string{"worktree", "add", "--quiet"}
	if branch != "" {
		if err := checkRev("branch", branch); err != nil {
			return err
		}
		// No look for the branch first: git refuses an existing one
		// itself, and a look is one more git process on the way to a
		// running worker.
		args = append(args, "-b", branch)
	} else {
		args = append(args, "--detach")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("add worktree: %w", err)
	}
	args = append(args, "--", path, base)
	// The whole tree, in a sparse checkout too: git would copy the sparse
	// patterns of the worktree it runs in and check out only those files.
	if _, err := runGit(ctx, r.Top, runOpts{config: wholeTree}, args...); err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && strings.Contains(e.Stderr, "already exists") {
			// The branch, or the path made after we looked: not ours to
			// remove.
			_ = pruneWorktrees(context.WithoutCancel(ctx), r)
			if branch != "" && strings.Contains(e.Stderr, "a branch named") {
				return fmt.Errorf("add worktree: branch %q already exists in %s; pick another branch name or delete that branch", branch, r.Top)
			}
			return err
		}
		undoAddWorktree(context.WithoutCancel(ctx), r, path, branch)
		return branchInTheWay(r, branch, err)
	}
	return nil
}

// refInTheWay matches git's refusal of a ref whose folder is another ref
// (or that is the folder of others).
var refInTheWay = regexp.MustCompile(`'refs/heads/([^']+)' exists; cannot create 'refs/heads/`)

// branchInTheWay turns git's refusal to create branch because another
// branch is in its way into an ErrBranchConflict that says what to do;
// other errors are returned as they are.
func branchInTheWay(r *Repo, branch string, err error) error {
	e := (*Error)(nil)
	if branch == "" || !errors.As(err, &e) {
		return err
	}
	m := refInTheWay.FindStringSubmatch(e.Stderr)
	if m == nil {
		return err
	}
	return &hintError{fmt.Sprintf("cannot create branch %s in %s: branch %s is in its way (git cannot hold a branch and branches under its name at once); "+
		"rename that branch, for example `git -C %s branch -m %s %s-old`", branch, r.Top, m[1], ShellQuote(r.Top), m[1], m[1]), ErrBranchConflict, err}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./@%+=:,-]+$`)

// ShellQuote quotes s as a word of a shell command the user may copy.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// undoAddWorktree removes what a failed `git worktree add` may have left: the
// directory (which did not exist before), its worktree entry and the branch
// (which did not exist before either).
func undoAddWorktree(ctx context.Context, r *Repo, path, branch string) {
	_ = os.RemoveAll(path)
	_ = pruneWorktrees(ctx, r)
	if branch != "" {
		_ = DeleteBranch(ctx, r, branch)
	}
}

// RemoveWorktree removes the worktree at path (`git worktree remove`, which
// refuses a worktree with changes unless force) and prunes stale worktree
// entries. A path that is already gone is only pruned.
func RemoveWorktree(ctx context.Context, r *Repo, path string, force bool) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return pruneWorktrees(ctx, r)
	}
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	if _, err := runGit(ctx, r.Top, runOpts{}, append(args, "--", path)...); err != nil {
		return err
	}
	return pruneWorktrees(ctx, r)
}

func pruneWorktrees(ctx context.Context, r *Repo) error {
	_, err := runGit(ctx, r.Top, runOpts{}, "worktree", "prune")
	return err
}

// DeleteBranch deletes refs/heads/<branch> (`git branch -D`); a branch that
// does not exist is not an error.
func DeleteBranch(ctx context.Context, r *Repo, branch string) error {
	exists, err := BranchExists(ctx, r, branch)
	if err != nil || !exists {
		return err
	}
	_, err = runGit(ctx, r.Top, runOpts{}, "branch", "-D", "--", branch)
	return err
}

// BranchExists reports whether refs/heads/<branch> exists in r.
func BranchExists(ctx context.Context, r *Repo, branch string) (bool, error) {
	if err := checkRev("branch", branch); err != nil {
		return false, err
	}
	_, err := runGit(ctx, r.Top, readOnly, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	if err == nil {
		return true, nil
	}
	if e := (*Error)(nil); errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "" {
		return false, nil
	}
	return false, err
}

// checkRev refuses a revision or branch name git could take for an option.
func checkRev(what, rev string) error {
	switch {
	case rev == "":
		return fmt.Errorf("no %s given; pass a branch, tag or commit", what)
	case strings.HasPrefix(rev, "-"):
		return fmt.Errorf("%s %q starts with '-'; pass a branch, tag or commit", what, rev)
	case strings.ContainsAny(rev, "\x00\n"):
		return fmt.Errorf("%s %q contains a NUL or newline; pass a branch, tag or commit", what, rev)
	}
	return nil
}
