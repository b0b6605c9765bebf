package gitx

import (
	"context"
	"strings"
)

// IsAncestor reports whether commit a is reachable from commit b (a equal
// to b counts), in the repository at dir. It only reads.
func IsAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	for _, rev := range []string{a, b} {
		if err := checkRev("commit", rev); err != nil {
			return false, err
		}
	}
	_, err := runGit(ctx, dir, readOnly, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, err
}

// BranchesContaining lists the local branches (short names, such as main
// or hub/abc) whose history contains commit rev, sorted by name. It only
// reads.
func BranchesContaining(ctx context.Context, dir, rev string) ([]string, error) {
	if err := checkRev("commit", rev); err != nil {
		return nil, err
	}
	out, err := runGit(ctx, dir, readOnly, "for-each-ref", "--format=%(refname)", "--sort=refname",
		"--contains", rev, "refs/heads/")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "refs/heads/"); ok && name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// Refs maps every ref of the repository at dir to the object it names.
func Refs(ctx context.Context, dir string) (map[string]string, error) {
	out, err := runGit(ctx, dir, readOnly, "for-each-ref", "--format=%(refname) %(objectname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, sha, ok := strings.Cut(l, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}
