package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// A Checkout is a checkout hub made for a job, described by the paths hub
// chose when it made it. A worker can rewrite everything inside its
// checkout — the .git file, the git dir's HEAD, index, config and links —
// so hub never reads those back to find its way: every git command hub runs
// on a checkout names the user's repository (GIT_DIR, the common dir), the
// work tree and hub's own index explicitly, and the worker's git state is
// put back from this description after a run.
//
// Two layouts:
//   - linked (Private false): a `git worktree` of the user's repository,
//     its git dir <common>/worktrees/<name>; for workers that run as the
//     user (isolation worktree), who see the user's refs.
//   - private (Private true): a git dir of its own that borrows the user's
//     objects read-only (objects/info/alternates) and holds one ref, the
//     job's branch; for sandboxed workers, who can then be given the
//     user's object store read-only and nothing else of the repository.
//     What the worker committed there is copied into the user's
//     repository by Import, checked object by object.
type Checkout struct {
	Repo   *Repo  // the user's repository
	Dir    string // the work tree (absolute)
	GitDir string // the git dir Dir's .git names, as hub made it
	// Index is hub's own index of Dir, outside Dir and GitDir, so no
	// index the worker wrote decides what hub commits.
	Index string
	// Branch is the job's branch (hub/<id>); "" for a detached checkout.
	Branch  string
	Private bool

	config []byte // a private git dir's config while restore writes it
}

// CheckoutOptions say what MakeCheckout makes.
type CheckoutOptions struct {
	Dir    string // the work tree; must not exist (its parent is created)
	Index  string // hub's index of it; its folder must exist
	Branch string // a branch to create at Base, or "" for a detached checkout
	Base   string // the commit to check out (a full SHA)
	// PrivateGitDir, when set, makes a private checkout with its git dir
	// there (which must not exist); empty makes a linked worktree.
	PrivateGitDir string
}

// LinkedGitDir is the git dir `git worktree add` makes for a worktree at
// dir: <common>/worktrees/<base name of dir>. MakeCheckout refuses a
// worktree git named otherwise, so the path is known without reading the
// worktree.
func LinkedGitDir(r *Repo, dir string) string {
	return filepath.Join(r.CommonDir, "worktrees", filepath.Base(dir))
}

// MakeCheckout makes a checkout of r at o.Base. A linked checkout is made
// with `git worktree add` (the caller holds the repository's lock); a
// private one writes its git dir itself and checks the files out with
// hub's index. Either way hub's index of the new checkout is written
// before any worker runs in it. On failure it leaves nothing behind: no
// directory, git dir, worktree entry or new branch.
func MakeCheckout(ctx context.Context, r *Repo, o CheckoutOptions) (*Checkout, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	if !fullHex.MatchString(o.Base) && !sha256Hex.MatchString(o.Base) {
		return nil, fmt.Errorf("make checkout: base %q is not a full commit id", o.Base)
	}
	c := &Checkout{Repo: r, Dir: dir, Index: o.Index, Branch: o.Branch, Private: o.PrivateGitDir != ""}
	if !c.Private {
		c.GitDir = LinkedGitDir(r, dir)
		if _, err := os.Lstat(c.GitDir); err == nil {
			return nil, fmt.Errorf("make checkout: %s already exists (a stale worktree entry?); run `git worktree prune` in %s", c.GitDir, r.Top)
		}
		if err := AddWorktree(ctx, r, dir, o.Branch, o.Base); err != nil {
			return nil, err
		}
		undo := func() { undoAddWorktree(context.WithoutCancel(ctx), r, dir, o.Branch) }
		if b, err := os.ReadFile(filepath.Join(c.GitDir, "gitdir")); err != nil || !sameFile(strings.TrimSpace(string(b)), filepath.Join(dir, ".git")) {
			undo()
			return nil, fmt.Errorf("make checkout: git did not make the worktree's git dir at %s; run `git worktree prune` in %s", c.GitDir, r.Top)
		}
		if err := c.notSparse(ctx); err != nil {
			undo()
			return nil, fmt.Errorf("make checkout: %w", err)
		}
		if err := copyFile(filepath.Join(c.GitDir, "index"), c.Index); err != nil {
			undo()
			return nil, fmt.Errorf("make checkout: %w", err)
		}
		return c, nil
	}
	c.GitDir, err = filepath.Abs(o.PrivateGitDir)
	if err != nil {
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	for _, p := range []string{dir, c.GitDir} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("make checkout: %s already exists; pass a path that does not exist", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("make checkout: %w", err)
		}
	}
	if o.Branch != "" {
		if err := checkRev("branch", o.Branch); err != nil {
			return nil, err
		}
		// Create, never move: an empty old value means it must not exist.
		if _, err := runGit(ctx, r.Top, runOpts{}, "update-ref", "-m", "hub: job branch", "refs/heads/"+o.Branch, o.Base, ""); err != nil {
			if ok, _ := BranchExists(ctx, r, o.Branch); ok {
				return nil, fmt.Errorf("make checkout: branch %q already exists in %s; pick another branch name or delete that branch", o.Branch, r.Top)
			}
			return nil, branchInTheWay(r, o.Branch, err)
		}
	}
	undo := func() {
		_ = os.RemoveAll(dir)
		_ = os.RemoveAll(c.GitDir)
		_ = os.Remove(c.Index)
		if o.Branch != "" {
			_ = DeleteBranch(context.WithoutCancel(ctx), r, o.Branch)
		}
	}
	if err := c.writePrivateGitDir(ctx, o.Base); err != nil {
		undo()
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	if err := c.writeGitFile(); err != nil {
		undo()
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	if _, err := runGit(ctx, dir, c.hubOpts(), "read-tree", "--reset", "-u", o.Base); err != nil {
		undo()
		return nil, err
	}
	if err := copyFile(c.Index, filepath.Join(c.GitDir, "index")); err != nil {
		undo()
		return nil, fmt.Errorf("make checkout: %w", err)
	}
	return c, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// notSparse makes a linked checkout a whole one for the worker's own git
// too. In a sparse checkout with per-worktree config (`git sparse-checkout
// set` turns that on), `git worktree add` copies the user's worktree config,
// sparse settings included, into the new worktree's: the files are all
// there (AddWorktree checks out the whole tree), and this tells the
// worker's git so, before it could apply the patterns (a checkout of
// another commit would remove the files outside them).
func (c *Checkout) notSparse(ctx context.Context) error {
	cfg := filepath.Join(c.GitDir, "config.worktree")
	if _, err := os.Lstat(cfg); err != nil {
		return nil
	}
	_ = os.Remove(filepath.Join(c.GitDir, "info", "sparse-checkout"))
	_, err := runGit(ctx, c.Repo.Top, runOpts{}, "config", "--file", cfg, "core.sparseCheckout", "false")
	return err
}

// sameFile reports whether paths a and b name the same existing file
// (through whatever symlinks either path has).
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// hubOpts pins git to hub's view of the checkout: the user's repository's
// common dir as GIT_DIR (never the checkout's .git or git dir, which the
// worker may have rewritten), Dir as the work tree and hub's own index.
// Config then comes only from the system, the user's global file and the
// user's repository; hooks and fsmonitor are off on every command.
//
// hub's view is the whole tree: a sparse checkout's settings (which, with
// GIT_DIR at the common dir, git would take from the user's own main
// worktree) never make hub check out less, or stage less, than the tree.
func (c *Checkout) hubOpts() runOpts {
	return runOpts{config: slices.Clone(wholeTree), env: []string{
		"GIT_DIR=" + c.Repo.CommonDir, "GIT_WORK_TREE=" + c.Dir, "GIT_INDEX_FILE=" + c.Index,
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(c.Dir),
	}}
}

// wholeTree switches a sparse checkout off for one git command: it checks
// out and stages every file of the tree.
var wholeTree = []string{"-c", "core.sparseCheckout=false", "-c", "index.sparse=false"}

// gitFile is the content of Dir/.git as hub writes it.
func (c *Checkout) gitFile() string { return "gitdir: " + c.GitDir + "\n" }

func (c *Checkout) writeGitFile() error {
	return atomicfile.Replace(filepath.Join(c.Dir, ".git"), []byte(c.gitFile()), 0o644)
}

// privateConfig is the whole config of a private git dir: nothing that
// runs a program, no remote; the user's settings that change how files
// are read (file modes, symlinks, case, line ends) and the object format,
// copied from what git reads for the repository.
func (c *Checkout) privateConfig(ctx context.Context) []byte {
	vals := map[string]string{}
	out, _ := runGit(ctx, c.Repo.Top, runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir}}, "config", "-z", "--get-regexp",
		`^(core\.(filemode|symlinks|ignorecase|precomposeunicode|autocrlf|eol)|extensions\.objectformat)$`)
	for _, kv := range splitNUL(out) {
		k, v, _ := strings.Cut(string(kv), "\n")
		if v != "" && !strings.ContainsAny(v, "\n\"\\;#") {
			vals[strings.ToLower(k)] = v // the last one wins, as in git
		}
	}
	var b bytes.Buffer
	format := "0"
	if vals["extensions.objectformat"] != "" {
		format = "1"
	}
	fmt.Fprintf(&b, "[core]\n\trepositoryformatversion = %s\n\tbare = false\n\tlogallrefupdates = true\n", format)
	for _, k := range []string{"filemode", "symlinks", "ignorecase", "precomposeunicode", "autocrlf", "eol"} {
		if v := vals["core."+k]; v != "" {
			fmt.Fprintf(&b, "\t%s = %s\n", k, v)
		}
	}
	if v := vals["extensions.objectformat"]; v != "" {
		fmt.Fprintf(&b, "[extensions]\n\tobjectformat = %s\n", v)
	}
	return b.Bytes()
}

// writePrivateGitDir writes a private git dir from scratch: HEAD on the
// branch (or detached at head), the branch at head, hub's config, the
// user's objects as an alternate, the user's excludes and shallow list.
func (c *Checkout) writePrivateGitDir(ctx context.Context, head string) error {
	g := c.GitDir
	if c.config == nil {
		c.config = c.privateConfig(ctx)
		defer func() { c.config = nil }()
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "info"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"config":                  string(c.config),
		"objects/info/alternates": filepath.Join(c.Repo.CommonDir, "objects") + "\n",
		"HEAD":                    head + "\n",
	}
	if c.Branch != "" {
		files["HEAD"] = "ref: refs/heads/" + c.Branch + "\n"
		files["refs/heads/"+c.Branch] = head + "\n"
	}
	for _, name := range []string{"info/exclude", "shallow"} {
		if b, err := os.ReadFile(filepath.Join(c.Repo.CommonDir, name)); err == nil {
			files[name] = string(b)
		}
	}
	for name, body := range files {
		p := filepath.Join(g, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Replace(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ObjectDirs are the object directories a private checkout's git reads
// besides its own: the user's, then every alternate they name in turn.
// A sandbox makes them readable, and nothing else of the repository.
func (c *Checkout) ObjectDirs() []string {
	var dirs []string
	seen := map[string]bool{}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		dir = filepath.Clean(dir)
		if seen[dir] || depth > 5 { // git's own limit on nested alternates
			return
		}
		seen[dir] = true
		dirs = append(dirs, dir)
		b, err := os.ReadFile(filepath.Join(dir, "info", "alternates"))
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "\"") {
				continue
			}
			walk(resolveFrom(dir, l), depth+1)
		}
	}
	walk(filepath.Join(c.Repo.CommonDir, "objects"), 0)
	return dirs
}

// copyFile copies the regular file src to dst (replacing it), with src's
// modification time, refusing anything but a regular file at src. The time
// matters for an index: git reads an entry as new as its index again
// rather than trusting its stat data (an edit of the same size in the
// second the index was written looks unchanged otherwise), and a copy
// stamped now would trust them all.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat() // before the read: a time older than the data is only safer
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".hub-"+filepath.Base(dst)+"-*")
	if err != nil {
		return err
	}
	_, cerr := io.Copy(tmp, in)
	if err := errors.Join(cerr, tmp.Close(), os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime())); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
