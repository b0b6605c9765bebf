// Package gitx is hub's small layer over git: every write (worktrees,
// branches, commits) goes through the git CLI; fast read-only lookups
// (opening a repo, resolving a revision) go through go-git in-process. It
// must never run the user's hooks or fsmonitor.
package gitx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/gofrs/flock"
)

// Sentinel errors, checked with errors.Is.
var (
	ErrNotRepo         = errors.New("not a git repository")
	ErrBare            = errors.New("bare repository")
	ErrNoCommits       = errors.New("no commits")
	ErrUnknownRevision = errors.New("unknown revision")
)

// Repo is an opened work tree.
type Repo struct {
	Top       string // absolute top level of the work tree (symlinks resolved)
	GitDir    string // absolute .git dir of this work tree
	CommonDir string // absolute common dir (== GitDir for the main work tree)
	repo      *git.Repository
}

// Open validates path in-process: a directory inside a non-bare git work
// tree that has at least one commit.
func Open(path string) (*Repo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s does not exist: %w", path, ErrNotRepo)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: %w", path, ErrNotRepo)
	}
	abs, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.Abs(abs); err != nil {
		return nil, err
	}
	top, gitDir, err := findTop(abs)
	if err != nil {
		if isBare(abs) {
			return nil, fmt.Errorf("%s is a bare repository; pass a checkout with a work tree: %w", path, ErrBare)
		}
		return nil, fmt.Errorf("%s is not a git repository; pass the top of a git checkout: %w", path, ErrNotRepo)
	}
	r, err := git.PlainOpenWithOptions(top, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, ErrNotRepo)
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	if _, err := r.Head(); err != nil {
		return nil, fmt.Errorf("%s has no commits yet; commit something first, hub starts jobs from a commit: %w", path, ErrNoCommits)
	}
	return &Repo{Top: top, GitDir: gitDir, CommonDir: common, repo: r}, nil
}

// findTop walks up from dir to the directory holding .git (a dir, or a
// file pointing at a linked worktree's git dir).
func findTop(dir string) (top, gitDir string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return d, p, nil
			}
			b, err := os.ReadFile(p)
			if err == nil && bytes.HasPrefix(b, []byte("gitdir:")) {
				g := strings.TrimSpace(string(b[len("gitdir:"):]))
				if !filepath.IsAbs(g) {
					g = filepath.Join(d, g)
				}
				return d, filepath.Clean(g), nil
			}
		}
		if filepath.Dir(d) == d {
			return "", "", ErrNotRepo
		}
	}
}

func isBare(dir string) bool {
	_, e1 := os.Stat(filepath.Join(dir, "HEAD"))
	_, e2 := os.Stat(filepath.Join(dir, "objects"))
	_, e3 := os.Stat(filepath.Join(dir, "refs"))
	return e1 == nil && e2 == nil && e3 == nil
}

// Resolve resolves rev ("" means HEAD) to a full commit SHA, in-process.
func (r *Repo) Resolve(rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return "", fmt.Errorf("unknown revision %q in %s; pass a branch, tag or commit that exists: %w", rev, r.Top, ErrUnknownRevision)
	}
	// Peel annotated tags to their commit.
	if _, err := r.repo.CommitObject(*h); err != nil {
		tag, terr := r.repo.TagObject(*h)
		if terr != nil {
			return "", fmt.Errorf("revision %q in %s is not a commit: %w", rev, r.Top, ErrUnknownRevision)
		}
		c, err := tag.Commit()
		if err != nil {
			return "", fmt.Errorf("tag %q in %s does not point at a commit: %w", rev, r.Top, ErrUnknownRevision)
		}
		return c.Hash.String(), nil
	}
	return h.String(), nil
}

// Error is a failed git command.
type Error struct {
	Args     []string
	Stderr   string
	ExitCode int
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), e.Stderr)
}

// safety flags: hub's own git never runs the user's hooks, fsmonitor or signing.
var safety = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgsign=false"}

// Git runs git in dir and returns stdout.
func Git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitEnv(ctx, dir, nil, args...)
}

func gitEnv(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, safety...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.Bytes(), &Error{Args: args, Stderr: msg, ExitCode: code}
	}
	return out.Bytes(), nil
}

// LockRepo takes an exclusive cross-process lock for the repo, kept under
// lockDir (never inside the user's repo).
func LockRepo(ctx context.Context, lockDir string, r *Repo) (func(), error) {
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(r.CommonDir))
	l := flock.New(filepath.Join(lockDir, hex.EncodeToString(sum[:])[:16]+".lock"))
	ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("lock repo %s: %w", r.Top, err)
	}
	if !ok {
		return nil, fmt.Errorf("lock repo %s: not acquired", r.Top)
	}
	return func() { _ = l.Unlock() }, nil
}

// AddWorktree adds a worktree at path from base: on a new branch, or
// detached when branch is "". On failure nothing is left behind.
func AddWorktree(ctx context.Context, r *Repo, path, branch, base string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("worktree path %s already exists", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	args := []string{"worktree", "add", "--quiet"}
	if branch != "" {
		args = append(args, "-b", branch, path, base)
	} else {
		args = append(args, "--detach", path, base)
	}
	if _, err := Git(ctx, r.Top, args...); err != nil {
		_ = os.RemoveAll(path)
		_, _ = Git(context.WithoutCancel(ctx), r.Top, "worktree", "prune")
		return err
	}
	return nil
}

// RemoveWorktree removes the worktree at path (already gone: just prunes).
func RemoveWorktree(ctx context.Context, r *Repo, path string, force bool) error {
	if _, err := os.Stat(path); err == nil {
		args := []string{"worktree", "remove"}
		if force {
			args = append(args, "--force")
		}
		if _, err := Git(ctx, r.Top, append(args, path)...); err != nil {
			return err
		}
	}
	_, err := Git(ctx, r.Top, "worktree", "prune")
	return err
}

// DeleteBranch deletes branch; an absent branch is fine.
func DeleteBranch(ctx context.Context, r *Repo, branch string) error {
	ok, err := BranchExists(ctx, r, branch)
	if err != nil || !ok {
		return err
	}
	_, err = Git(ctx, r.Top, "branch", "-D", branch)
	return err
}

// BranchExists reports whether refs/heads/<branch> exists.
func BranchExists(ctx context.Context, r *Repo, branch string) (bool, error) {
	_, err := Git(ctx, r.Top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return false, nil
	}
	return err == nil, err
}
