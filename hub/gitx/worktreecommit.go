package gitx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WorkTreeCommit makes a commit of what the work tree at dir holds now —
// tracked files as they are and untracked files that are not ignored —
// with HEAD as its parent (none before the first commit), as who, without
// touching HEAD, the index or any ref: it stages into an index of its own.
// The objects go into the repository, reachable from nothing (git gc prunes
// them in time). `hub step` narrates the user's work from it, uncommitted
// changes and all.
func WorkTreeCommit(ctx context.Context, dir, msg string, who Identity) (string, error) {
	top, err := runGit(ctx, dir, readOnly, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	idx, err := os.MkdirTemp("", "hub-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(idx)
	o := runOpts{env: []string{"GIT_INDEX_FILE=" + filepath.Join(idx, "index"),
		"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email,
		"GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email}}
	at := strings.TrimSpace(string(top))
	head, err := headOrUnborn(ctx, at)
	if err != nil {
		return "", err
	}
	if head != "" {
		if _, err := runGit(ctx, at, o, "read-tree", head); err != nil {
			return "", err
		}
	}
	if _, err := runGit(ctx, at, o, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	tree, err := runGit(ctx, at, o, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree))}
	if head != "" {
		args = append(args, "-p", head)
	}
	o.stdin = strings.NewReader(msg)
	out, err := runGit(ctx, at, o, args...)
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	if len(sha) < 40 {
		return "", fmt.Errorf("git commit-tree gave %q", sha)
	}
	return sha, nil
}
