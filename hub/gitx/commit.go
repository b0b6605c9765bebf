package gitx

import (
	"context"
	"errors"
	"strings"
)

// Identity is who a commit is made as.
type Identity struct{ Name, Email string }

// HubIdentity signs the commits hub makes itself (and merges into a
// checkout that has no identity of its own).
var HubIdentity = Identity{Name: "hub", Email: "hub@localhost"}

// CommitAll stages everything in the work tree at dir (`git add -A`) and, if
// that staged anything, commits it with message msg as who (author and
// committer), without running hooks. It needs no git configuration at all.
// It returns the HEAD commit afterwards and whether it made a commit; with
// nothing to commit that is (HEAD, false, nil), or ("", false, nil) in a
// repository without commits.
func CommitAll(ctx context.Context, dir, msg string, who Identity) (sha string, committed bool, err error) {
	o := runOpts{
		config: []string{"-c", "user.name=" + who.Name, "-c", "user.email=" + who.Email},
		env: []string{
			"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email,
			"GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email,
		},
	}
	if _, err := runGit(ctx, dir, o, "add", "-A"); err != nil {
		return "", false, err
	}
	// Exit code 1: the index differs from HEAD (or from nothing, before the first commit).
	_, err = runGit(ctx, dir, o, "diff", "--cached", "--quiet", "--no-ext-diff", "--ignore-submodules=none")
	switch {
	case err == nil:
		sha, err := headOrUnborn(ctx, dir)
		return sha, false, err
	case exitCode(err) != 1:
		return "", false, err
	}
	o.stdin = strings.NewReader(msg)
	if _, err := runGit(ctx, dir, o, "commit", "--quiet", "--no-verify", "--cleanup=whitespace", "-F", "-"); err != nil {
		return "", false, err
	}
	sha, err = Head(ctx, dir)
	return sha, true, err
}

// Head returns the commit SHA of HEAD in dir.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := runGit(ctx, dir, readOnly, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// headOrUnborn is Head, with "" for a HEAD that has no commit yet.
func headOrUnborn(ctx context.Context, dir string) (string, error) {
	out, err := runGit(ctx, dir, readOnly, "rev-parse", "--verify", "--quiet", "HEAD")
	if e := (*Error)(nil); err != nil && !(errors.As(err, &e) && e.ExitCode == 1 && e.Stderr == "") {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
