package gitx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Scratch is an object store of hub's own beside a repository's: what hub
// writes only to look ahead (snapshots of work trees in progress, the
// trees git merge-tree writes) goes there and never into the user's
// repository. The user's objects are read through it as an alternate.
// Remove it when done; its objects are worth nothing after.
type Scratch struct {
	Repo *Repo
	Dir  string // holds objects/ (and temporary indexes)
	// Extra are more object directories to read (a private checkout's own).
	Extra []string
}

// opts is how git reads and writes through the scratch store.
func (s *Scratch) opts() runOpts {
	alt := append([]string{filepath.Join(s.Repo.CommonDir, "objects")}, s.Extra...)
	return runOpts{env: []string{
		"GIT_DIR=" + s.Repo.CommonDir,
		"GIT_OBJECT_DIRECTORY=" + filepath.Join(s.Dir, "objects"),
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + strings.Join(alt, string(os.PathListSeparator)),
		"GIT_OPTIONAL_LOCKS=0",
	}}
}

func (s *Scratch) make() error {
	for _, d := range []string{"objects/info", "objects/pack"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the scratch store.
func (s *Scratch) Remove() error { return os.RemoveAll(s.Dir) }

// snapshotWho signs snapshot commits, at a fixed date, so the same work
// tree on the same base is the same commit: a caller can key what it
// learnt of a snapshot by its id.
var snapshotWho = []string{
	"GIT_AUTHOR_NAME=hub", "GIT_AUTHOR_EMAIL=hub@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=hub", "GIT_COMMITTER_EMAIL=hub@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// Snapshot records checkout c's work tree as it is now — committed or not,
// untracked files in, ignored ones out, staged as Commit would stage them —
// as a commit on base, written to the scratch store. index is the scratch
// store's own index of c, kept from one snapshot to the next so that only
// the files that changed since are read again (made from hub's index the
// first time). Nothing of the checkout changes: hub's index is read, never
// written, and no ref moves.
func (s *Scratch) Snapshot(ctx context.Context, c *Checkout, base, index string) (string, error) {
	commit, _, err := s.snapshot(ctx, c, base, index, "hub: snapshot of a work tree in progress\n", snapshotWho)
	return commit, err
}

// Checkpoint is Snapshot as a commit to keep: signed by hub at the time it
// is taken, with msg as its message. It returns the commit and its tree.
func (s *Scratch) Checkpoint(ctx context.Context, c *Checkout, base, index, msg string) (commit, tree string, err error) {
	return s.snapshot(ctx, c, base, index, msg, []string{"GIT_AUTHOR_NAME=hub", "GIT_AUTHOR_EMAIL=hub@localhost",
		"GIT_COMMITTER_NAME=hub", "GIT_COMMITTER_EMAIL=hub@localhost"})
}

// Push pushes commit, which may be in the scratch store, to ref of remote
// (a URL or path), moving it whatever it held.
func (s *Scratch) Push(ctx context.Context, remote, commit, ref string) error {
	if err := checkRev("commit", commit); err != nil {
		return err
	}
	_, err := runGit(ctx, s.Repo.Top, s.opts(), "push", "--quiet", "--force", "--no-verify", remote, commit+":"+ref)
	return err
}

func (s *Scratch) snapshot(ctx context.Context, c *Checkout, base, index, msg string, who []string) (commit, tree string, err error) {
	if err := checkRev("base", base); err != nil {
		return "", "", err
	}
	if err := s.make(); err != nil {
		return "", "", err
	}
	sc := *s
	if c.Private {
		sc.Extra = append(slices.Clone(s.Extra), filepath.Join(c.GitDir, "objects"))
	}
	o := sc.opts()
	h := c.hubOpts()
	o.config = h.config
	o.env = append(o.env, "GIT_WORK_TREE="+c.Dir, "GIT_INDEX_FILE="+index, "GIT_CEILING_DIRECTORIES="+filepath.Dir(c.Dir))
	if _, err := os.Stat(index); errors.Is(err, os.ErrNotExist) {
		if err := copyIndex(c.Index, index); err != nil {
			return "", "", err
		}
		if _, err := os.Stat(index); err != nil {
			if _, err := runGit(ctx, c.Dir, o, "read-tree", base); err != nil {
				return "", "", err
			}
		}
	}
	if _, _, _, err := c.stage(ctx, o, nil); err != nil {
		return "", "", err
	}
	out, err := runGit(ctx, c.Dir, o, "write-tree")
	if err != nil {
		return "", "", err
	}
	tree = strings.TrimSpace(string(out))
	o.env = append(o.env, who...)
	o.stdin = strings.NewReader(msg)
	out, err = runGit(ctx, c.Dir, o, "commit-tree", tree, "-p", base)
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(out)), tree, nil
}

// copyIndex copies hub's index of a checkout to a scratch index, with
// its time (see copyFile); nothing when there is none.
func copyIndex(from, to string) error {
	if err := copyFile(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Size is the bytes the scratch store holds.
func (s *Scratch) Size() int64 {
	var n int64
	_ = filepath.WalkDir(s.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Conflicts reports the paths merging theirs into ours would leave in
// conflict (none: the merge is clean), reading both through the scratch
// store and writing the merged trees there.
func (s *Scratch) Conflicts(ctx context.Context, ours, theirs string) ([]string, error) {
	if err := s.make(); err != nil {
		return nil, err
	}
	_, files, err := mergeTree(ctx, s.Repo.Top, s.opts(), ours, theirs)
	return files, err
}

// Touched lists the paths that differ between commits a and b (renames as
// a deletion and an addition), read through the scratch store.
func (s *Scratch) Touched(ctx context.Context, a, b string) ([]string, error) {
	if err := s.make(); err != nil {
		return nil, err
	}
	return touched(ctx, s.Repo.Top, s.opts(), a, b)
}

// Touched lists the paths that differ between commits a and b of the
// repository at dir (renames as a deletion and an addition).
func Touched(ctx context.Context, dir, a, b string) ([]string, error) {
	return touched(ctx, dir, readOnly, a, b)
}

func touched(ctx context.Context, dir string, o runOpts, a, b string) ([]string, error) {
	if err := checkRevs(a, b); err != nil {
		return nil, err
	}
	if a == b {
		return nil, nil
	}
	out, err := runGit(ctx, dir, o, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-ext-diff", a, b, "--")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range splitNUL(out) {
		paths = append(paths, string(p))
	}
	return paths, nil
}

// Count counts the commits reachable from b and not from a.
func Count(ctx context.Context, dir, a, b string) (int, error) {
	if err := checkRevs(a, b); err != nil {
		return 0, err
	}
	out, err := runGit(ctx, dir, readOnly, "rev-list", "--count", a+".."+b, "--")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ch := range strings.TrimSpace(string(out)) {
		n = n*10 + int(ch-'0')
	}
	return n, nil
}

// mergeTree merges theirs into ours in memory (git merge-tree
// --write-tree): the merged tree's id, and the paths in conflict (none
// when the merge is clean; the tree then holds conflict markers).
func mergeTree(ctx context.Context, dir string, o runOpts, ours, theirs string) (string, []string, error) {
	out, err := runGit(ctx, dir, o, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs)
	switch {
	case err == nil:
		return strings.TrimSpace(string(out)), nil, nil
	case exitCode(err) != 1:
		return "", nil, err
	}
	// The tree's id, then one conflicted path per line.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var files []string
	for _, l := range lines[1:] {
		if l != "" && !slices.Contains(files, l) {
			files = append(files, l)
		}
	}
	return lines[0], files, nil
}

// Overlap reports whether two sets of changed paths could conflict: a path
// in both, or one a folder of the other (a file on one side where the
// other made a folder).
func Overlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	set := make(map[string]bool, len(a))
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		if set[p] {
			return true
		}
	}
	// A file against a folder: rare, checked only when no path matched.
	for _, p := range b {
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			if set[p[:i]] {
				return true
			}
		}
	}
	for _, p := range a {
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			if slices.Contains(b, p[:i]) {
				return true
			}
		}
	}
	return false
}

func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
