package gitx

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Integrate makes, without a checkout and without moving any ref, the
// commit that lands theirs on ours: a merge commit of the two (squash
// false), or one commit on ours with theirs' whole change (squash true).
// On a conflict it returns the conflicted paths and no commit. The commit
// is signed with the repository's identity, or fallback when it has none.
func Integrate(ctx context.Context, r *Repo, ours, theirs string, squash bool, msg string, fallback Identity) (string, []string, error) {
	if err := checkRevs(ours, theirs); err != nil {
		return "", nil, err
	}
	tree, files, err := mergeTree(ctx, r.Top, runOpts{}, ours, theirs)
	if err != nil || len(files) > 0 {
		return "", files, err
	}
	args := []string{"commit-tree", tree, "-p", ours}
	if !squash {
		args = append(args, "-p", theirs)
	}
	o := runOpts{stdin: strings.NewReader(msg)}
	if name, _ := runGit(ctx, r.Top, readOnly, "config", "user.name"); strings.TrimSpace(string(name)) == "" {
		o.config = []string{"-c", "user.name=" + fallback.Name, "-c", "user.email=" + fallback.Email}
	}
	out, err := runGit(ctx, r.Top, o, args...)
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(string(out)), nil, nil
}

// MoveBranch points branch at commit, only if it still points at old
// (git update-ref's compare-and-swap): a branch that moved under hub is
// an error and stays where it is.
func MoveBranch(ctx context.Context, r *Repo, branch, commit, old, why string) error {
	if err := checkRev("branch", branch); err != nil {
		return err
	}
	if err := checkRevs(commit, old); err != nil {
		return err
	}
	_, err := runGit(ctx, r.Top, runOpts{}, "update-ref", "-m", why, "refs/heads/"+branch, commit, old)
	return err
}

// CheckedOut lists the work trees of r (its main one and every linked one)
// that have branch checked out.
func CheckedOut(ctx context.Context, r *Repo, branch string) ([]string, error) {
	out, err := runGit(ctx, r.Top, readOnly, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var dirs []string
	var cur string
	for _, f := range splitNUL(out) {
		line := string(f)
		switch {
		case strings.HasPrefix(line, "worktree "):
			cur = strings.TrimPrefix(line, "worktree ")
		case line == "branch refs/heads/"+branch && cur != "":
			dirs = append(dirs, cur)
		}
	}
	return dirs, nil
}

// FastForward moves the branch checked out at dir, and its files, to
// commit, which must descend from its HEAD (git merge --ff-only, hooks
// off). git refuses, and changes nothing, when a file of the checkout
// would be overwritten.
func FastForward(ctx context.Context, dir, commit string) error {
	if err := checkRev("commit", commit); err != nil {
		return err
	}
	if _, err := runGit(ctx, dir, runOpts{}, "merge", "--ff-only", "--no-verify", "--quiet", commit); err != nil {
		return fmt.Errorf("fast-forward %s: %w", dir, err)
	}
	return nil
}

// ErrHasMerges: a branch with merge commits cannot be replayed commit by
// commit; land it with a merge.
var ErrHasMerges = errors.New("the branch has merge commits")

// Replay replays the commits of onto..head, oldest first, onto onto (a
// rebase that moves no ref), in a scratch work tree at dir that it makes
// and removes: git 2.39's merge-tree cannot replay a commit on another
// without a checkout. Each keeps its author and message; the committer is
// the repository's identity, or fallback when it has none; hooks are off.
// It returns the last replayed commit, or the paths in conflict at the
// first commit that does not apply (and no commit).
func Replay(ctx context.Context, r *Repo, dir, onto, head string, fallback Identity) (string, []string, error) {
	if err := checkRevs(onto, head); err != nil {
		return "", nil, err
	}
	if merges, err := HasMerges(ctx, r, onto, head); err != nil {
		return "", nil, err
	} else if merges {
		return "", nil, ErrHasMerges
	}
	// One left by a replay that died half-way goes first.
	if err := RemoveWorktree(ctx, r, dir, true); err != nil {
		return "", nil, err
	}
	if err := AddWorktree(ctx, r, dir, "", onto); err != nil {
		return "", nil, err
	}
	defer func() { _ = RemoveWorktree(context.WithoutCancel(ctx), r, dir, true) }()
	var o runOpts
	if name, _ := runGit(ctx, r.Top, readOnly, "config", "user.name"); strings.TrimSpace(string(name)) == "" {
		o.config = []string{"-c", "user.name=" + fallback.Name, "-c", "user.email=" + fallback.Email}
	}
	if _, err := runGit(ctx, dir, o, "cherry-pick", "--allow-empty", "--keep-redundant-commits", onto+".."+head); err != nil {
		out, _ := runGit(ctx, dir, readOnly, "diff", "--name-only", "-z", "--diff-filter=U")
		var files []string
		for _, p := range splitNUL(out) {
			files = append(files, string(p))
		}
		_, _ = runGit(ctx, dir, o, "cherry-pick", "--abort")
		if len(files) > 0 {
			return "", files, nil
		}
		return "", nil, err
	}
	tip, err := Head(ctx, dir)
	return tip, nil, err
}

// HasMerges reports whether onto..head holds a merge commit.
func HasMerges(ctx context.Context, r *Repo, onto, head string) (bool, error) {
	if err := checkRevs(onto, head); err != nil {
		return false, err
	}
	out, err := runGit(ctx, r.Top, readOnly, "rev-list", "--merges", "-n1", onto+".."+head, "--")
	return strings.TrimSpace(string(out)) != "", err
}
