package gitx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// readOpts is hubOpts for commands that only read: no optional locks, so
// nothing is written (not even hub's index) while a worker may be at work.
func (c *Checkout) readOpts() runOpts {
	o := c.hubOpts()
	o.env = append(o.env, "GIT_OPTIONAL_LOCKS=0")
	return o
}

// Changes lists the files of the work tree that differ from the commit
// base — committed or not, untracked files included, ignored ones left
// out — as hub sees them: through hub's index, never the checkout's own git
// dir. Added and Deleted are not counted.
func (c *Checkout) Changes(ctx context.Context, base string) ([]FileChange, error) {
	if err := checkRev("base", base); err != nil {
		return nil, err
	}
	// A submodule counts as changed when its HEAD moved, never by its
	// files: git would run `git status` inside its checkout, with the
	// submodule's config (the worker's to set).
	args := append([]string{"diff"}, diffSafe...)
	ns, err := runGit(ctx, c.Dir, c.readOpts(), append(args, "-z", "-M", "--name-status", "--ignore-submodules=dirty", base, "--")...)
	if err != nil {
		return nil, err
	}
	files, err := mergeDiff(ns, nil)
	if err != nil {
		return nil, err
	}
	others, err := c.untracked(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range others {
		files = append(files, FileChange{Path: p, Change: "added"})
	}
	slices.SortFunc(files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// untracked lists the files of the work tree hub's index does not hold,
// ignored ones left out, as Commit would stage them: the files inside a
// repository the worker made one by one; a submodule it added, by its
// folder.
func (c *Checkout) untracked(ctx context.Context) ([]string, error) {
	o := c.readOpts()
	paths, nested, err := c.others(ctx, o)
	if err != nil || len(nested) == 0 {
		return paths, err
	}
	submodules := c.gitmodulesPaths()
	var asFiles []string
	for _, d := range nested {
		if submodules[d] {
			paths = append(paths, strings.TrimSuffix(d, "/"))
		} else {
			asFiles = append(asFiles, d)
		}
	}
	files, _, err := c.nestedFiles(ctx, o, asFiles)
	if err != nil {
		return nil, err
	}
	return append(paths, files...), nil
}

// Dirty reports whether the work tree differs from the branch's tip: a
// change made after hub's last commit (by the user, or a process that
// outlived the worker), or one hub's commit could not take. A detached
// checkout is compared with rev. A submodule is dirty when its HEAD moved,
// or when its own checkout holds changes: git is never run in there (it
// would run with the submodule's config, which the worker may have
// written, filters and all); go-git reads it in-process, running nothing.
func (c *Checkout) Dirty(ctx context.Context, rev string) (bool, error) {
	if rev == "" {
		if c.Branch == "" {
			return false, errors.New("dirty: a detached checkout needs a commit to compare with")
		}
		rev = "refs/heads/" + c.Branch
	}
	if err := checkRev("revision", rev); err != nil {
		return false, err
	}
	_, err := runGit(ctx, c.Dir, c.readOpts(), "diff-index", "--quiet", "--ignore-submodules=dirty", rev, "--")
	switch {
	case exitCode(err) == 1:
		return true, nil
	case err != nil:
		return false, err
	}
	if dirty, err := c.submodulesDirty(ctx, rev); dirty || err != nil {
		return dirty, err
	}
	others, err := c.untracked(ctx)
	return len(others) > 0, err
}

// submodulesDirty reports whether a submodule of rev checked out in the
// work tree has changes of its own (modified, staged or untracked files),
// read with go-git so that nothing of the submodule's config runs.
func (c *Checkout) submodulesDirty(ctx context.Context, rev string) (bool, error) {
	out, err := runGit(ctx, c.Dir, c.readOpts(), "ls-tree", "-r", "-z", "--full-tree", rev)
	if err != nil {
		return false, err
	}
	for _, e := range splitNUL(out) {
		meta, path, ok := strings.Cut(string(e), "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		dir := filepath.Join(c.Dir, filepath.FromSlash(path))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			continue // not checked out: nothing in it to lose
		}
		repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if err != nil {
			return true, nil // unreadable: it may hold work, say so
		}
		wt, err := repo.Worktree()
		if err != nil {
			return true, nil
		}
		st, err := wt.Status()
		if err != nil || !st.IsClean() {
			return true, nil
		}
	}
	return false, nil
}

// HeadOnBranch reports whether the checkout's HEAD names its branch (read
// as data, the way the worker left it), and otherwise what it found.
func (c *Checkout) HeadOnBranch() (bool, string) {
	_, _, what := c.workerHead()
	return what == "", what
}

// Remove removes the checkout: a linked worktree through `git worktree
// remove --force` (the caller decided it may go; it holds the repository's
// lock), a private one with its git dir; hub's index goes too. A checkout
// already gone is only pruned.
func (c *Checkout) Remove(ctx context.Context) error {
	var err error
	if c.Private {
		err = errors.Join(os.RemoveAll(c.Dir), os.RemoveAll(c.GitDir))
	} else {
		// git reads the worktree's own files to remove it: put back what a
		// worker may have broken, so git removes this worktree and no other.
		if _, statErr := os.Lstat(c.Dir); statErr == nil {
			_ = c.writeGitFile()
			if _, e := os.Stat(c.GitDir); e == nil {
				_ = atomicfile.Replace(c.GitDir+"/gitdir", []byte(c.Dir+"/.git\n"), 0o644)
				_ = atomicfile.Replace(c.GitDir+"/commondir", []byte("../..\n"), 0o644)
			}
		}
		err = RemoveWorktree(ctx, c.Repo, c.Dir, true)
		if err != nil {
			// A worktree git no longer knows: remove the files, then the entry.
			if rmErr := os.RemoveAll(c.Dir); rmErr == nil {
				err = pruneWorktrees(ctx, c.Repo)
			}
		}
	}
	if rmErr := os.Remove(c.Index); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	if err != nil {
		return fmt.Errorf("remove checkout %s: %w", c.Dir, err)
	}
	return nil
}

// Untouched reports whether the worker left the checkout as hub made it at
// base: files as in base, HEAD on the branch, the branch (its private one
// too) still at base. A run that fails untouched may be tried again on
// another engine.
func (c *Checkout) Untouched(ctx context.Context, base string) bool {
	if on, _ := c.HeadOnBranch(); !on && c.Branch != "" {
		return false
	}
	if c.Branch != "" {
		ref := "refs/heads/" + c.Branch
		if tip, err := c.revParse(ctx, ref); err != nil || tip != base {
			return false
		}
		if c.Private {
			if tip, err := c.privateRef(ref); err != nil || tip != base {
				return false
			}
		}
	}
	dirty, err := c.Dirty(ctx, base)
	return err == nil && !dirty
}
