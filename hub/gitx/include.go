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

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// IncludeFile is the file at the top of the user's checkout that lists,
// in gitignore syntax, gitignored files to copy from the user's checkout
// into each new job checkout (the convention Claude Code, Conductor and
// Codex share): a gitignored .env, config/local.json. It is read from the
// user's work tree, committed or not.
const IncludeFile = ".worktreeinclude"

// maxIncludeFile bounds the size of .worktreeinclude hub reads.
const maxIncludeFile = 1 << 20

// IncludeSkip is a file .worktreeinclude matched that hub did not copy, and why.
type IncludeSkip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// IncludePlan is what .worktreeinclude selects in the user's checkout:
// untracked files its patterns match that the standard rules ignore.
type IncludePlan struct {
	Top     string   // the user's checkout the files are copied from
	Paths   []string // slash-separated, relative to Top, sorted
	Skipped []IncludeSkip
}

// IncludeResult is what CopyIncluded did.
type IncludeResult struct {
	Copied  []string // slash-separated paths, relative to the checkout's top
	Skipped []IncludeSkip
}

// includeLine is one pattern of .worktreeinclude.
type includeLine struct {
	n       int    // line number, from 1
	pattern string // as written (trailing spaces trimmed)
}

// readInclude reads r's .worktreeinclude: its bytes and its patterns;
// nil, nil when there is none.
func (r *Repo) readInclude() ([]byte, []includeLine, error) {
	p := filepath.Join(r.Top, IncludeFile)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	s, err := readSmall(p, maxIncludeFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s cannot be read: %w; make it a regular file of gitignore patterns (or remove it)", p, err)
	}
	var lines []includeLine
	for i, l := range strings.Split(s, "\n") {
		l = strings.TrimSuffix(l, "\r")
		for strings.HasSuffix(l, " ") && !strings.HasSuffix(l, "\\ ") {
			l = strings.TrimSuffix(l, " ")
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, includeLine{n: i + 1, pattern: l})
	}
	return []byte(s), lines, nil
}

// CheckInclude refuses a .worktreeinclude hub will not use, with what to
// fix: a pattern that points outside the repository (a ".." component,
// an absolute path) or that names a file tracked in one of revs (the
// user's HEAD, the job's base). In-process: no git runs. No
// .worktreeinclude is fine.
func (r *Repo) CheckInclude(revs ...string) error {
	_, lines, err := r.readInclude()
	if err != nil || len(lines) == 0 {
		return err
	}
	where := filepath.Join(r.Top, IncludeFile)
	var literal []includeLine
	for _, l := range lines {
		pat := strings.TrimPrefix(l.pattern, "!")
		pat = strings.TrimPrefix(pat, "\\")
		if why := outside(r.Top, pat); why != "" {
			return fmt.Errorf("%s line %d: %q %s; patterns name files by their path from the repository's top (a leading / anchors a pattern there), such as config/local.json",
				where, l.n, l.pattern, why)
		}
		if !strings.HasPrefix(l.pattern, "!") && !strings.ContainsAny(pat, "*?[\\") && !strings.HasSuffix(pat, "/") {
			literal = append(literal, l)
		}
	}
	if len(literal) == 0 {
		return nil
	}
	repo, err := openGoGit(r.Top)
	if err != nil {
		return fmt.Errorf("check %s: %w", where, err)
	}
	for _, rev := range revs {
		if rev == "" {
			continue
		}
		h, err := repo.ResolveRevision(plumbing.Revision(rev))
		if err != nil {
			continue // an unborn HEAD holds nothing
		}
		c, err := repo.CommitObject(*h)
		if err != nil {
			continue
		}
		tree, err := c.Tree()
		if err != nil {
			return fmt.Errorf("check %s: read the tree of %s: %w", where, rev, err)
		}
		for _, l := range literal {
			p := strings.TrimPrefix(strings.TrimPrefix(l.pattern, "\\"), "/")
			e, err := tree.FindEntry(p)
			if err != nil || e.Mode == filemode.Dir {
				continue
			}
			name := rev
			if fullHex.MatchString(rev) {
				name = "commit " + short(rev)
			}
			return fmt.Errorf("%s line %d: %q names %s, a file tracked in %s; tracked files are already in every worktree and .worktreeinclude is for gitignored ones: take that line out",
				where, l.n, l.pattern, p, name)
		}
	}
	return nil
}

// outside says why pattern pat points outside the repository at top, or "".
func outside(top, pat string) string {
	if len(pat) >= 2 && pat[1] == ':' && (len(pat) == 2 || pat[2] == '/' || pat[2] == '\\') {
		return "is an absolute path (a drive), outside the repository"
	}
	if strings.HasPrefix(pat, "~") {
		return "names a home folder, outside the repository"
	}
	for _, part := range strings.Split(pat, "/") {
		if part == ".." {
			return "points outside the repository (a \"..\" component)"
		}
	}
	if !strings.HasPrefix(pat, "/") {
		return ""
	}
	if pat == top || strings.HasPrefix(pat, top+"/") {
		return "is an absolute path (the repository's own); write it relative to the repository's top"
	}
	// A leading / anchors a pattern at the top; one whose first folder is
	// a folder of the file system's root and not of the repository is an
	// absolute path.
	first, _, _ := strings.Cut(strings.TrimPrefix(pat, "/"), "/")
	if first == "" || strings.ContainsAny(first, "*?[\\") {
		return ""
	}
	if _, err := os.Lstat(filepath.Join(top, first)); err == nil {
		return ""
	}
	if _, err := os.Lstat("/" + first); err == nil {
		return "is an absolute path, outside the repository"
	}
	return ""
}

// PlanInclude selects what .worktreeinclude asks to copy into a checkout
// of base: the untracked files of the user's checkout its patterns match
// (git ls-files --others --ignored --exclude-from) that the standard
// rules ignore too (.gitignore, .git/info/exclude, core.excludesFile: git
// check-ignore), less every file tracked in the user's HEAD or in base.
// A .worktreeinclude CheckInclude refuses is an error. No
// .worktreeinclude, or one that matches nothing, is an empty plan.
func PlanInclude(ctx context.Context, r *Repo, base string) (*IncludePlan, error) {
	plan := &IncludePlan{Top: r.Top}
	data, lines, err := r.readInclude()
	if err != nil || len(lines) == 0 {
		return plan, err
	}
	if err := r.CheckInclude("HEAD", base); err != nil {
		return nil, err
	}
	// The patterns checked, not the file again (it may have changed since).
	tmp, err := os.CreateTemp("", "hub-worktreeinclude-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return nil, err
	}
	out, err := runGit(ctx, r.Top, readOnly, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+tmp.Name())
	if err != nil {
		return nil, err
	}
	var cands []string
	for _, p := range splitNUL(out) {
		s := string(p)
		if strings.HasSuffix(s, "/") {
			plan.Skipped = append(plan.Skipped, IncludeSkip{s, "a git repository of its own; hub copies files, not repositories"})
			continue
		}
		cands = append(cands, s)
	}
	if len(cands) == 0 {
		return plan, nil
	}
	// Ignored by the standard rules? check-ignore reads each path as a
	// pathspec: "./" keeps a name such as ":(icase)x" that name.
	var in strings.Builder
	for _, f := range cands {
		in.WriteString("./" + f + "\x00")
	}
	ig := readOnly
	ig.env = append(slices.Clone(readOnly.env), pathspecEnv...)
	ig.stdin = strings.NewReader(in.String())
	out, err = runGit(ctx, r.Top, ig, "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none is ignored
		return nil, err
	}
	ignored := map[string]bool{}
	for _, p := range splitNUL(out) {
		ignored[strings.TrimPrefix(string(p), "./")] = true
	}
	tracked := map[string]string{}
	for _, rev := range []string{base, "HEAD"} {
		what := "the job's base commit"
		if rev == "HEAD" {
			what = "the user's HEAD"
		}
		if rev == "HEAD" {
			if _, err := runGit(ctx, r.Top, readOnly, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
				continue // unborn
			}
		} else if err := checkRev("base", rev); err != nil {
			return nil, err
		}
		out, err := runGit(ctx, r.Top, readOnly, "ls-tree", "-r", "-z", "--name-only", "--full-tree", rev)
		if err != nil {
			return nil, err
		}
		for _, p := range splitNUL(out) {
			if _, ok := tracked[string(p)]; !ok {
				tracked[string(p)] = what
			}
		}
	}
	for _, p := range cands {
		switch {
		case !ignored[p]:
			plan.Skipped = append(plan.Skipped, IncludeSkip{p, "not ignored by .gitignore, .git/info/exclude or core.excludesFile (only gitignored files are copied)"})
		case tracked[p] != "":
			plan.Skipped = append(plan.Skipped, IncludeSkip{p, "tracked in " + tracked[p] + ": the worktree has its own"})
		default:
			plan.Paths = append(plan.Paths, p)
		}
	}
	slices.Sort(plan.Paths)
	return plan, nil
}

// includedList is where hub records the paths it copied into the
// checkout: next to hub's own index, in the job's folder, never in the
// work tree or git dir.
func (c *Checkout) includedList() string { return c.Index + ".included" }

// CopyIncluded copies plan's files from the user's checkout into c's work
// tree, each at the same path, creating folders, and records their paths
// so that Commit never commits them. It never goes through a symlink out
// of either tree: a path with a symlink among its folders (in the user's
// checkout or in c) is skipped; a symlink is recreated, pointing at the
// same file relative to its folder, only when its target resolves inside
// the user's checkout (and not into its git dir); regular files keep
// their mode. Nothing that is already in c is overwritten. Only failing
// to record the paths is an error: a file that cannot be copied is
// skipped, with why.
func (c *Checkout) CopyIncluded(plan *IncludePlan) (IncludeResult, error) {
	res := IncludeResult{}
	if plan == nil || len(plan.Paths) == 0 {
		_ = os.Remove(c.includedList())
		return res, nil
	}
	// Recorded before anything is copied: whatever is in the work tree
	// under these names is never hub's to commit.
	if err := atomicfile.Replace(c.includedList(), []byte(strings.Join(plan.Paths, "\x00")+"\x00"), 0o600); err != nil {
		return res, fmt.Errorf("record the files .worktreeinclude copies: %w", err)
	}
	top := plan.Top
	srcDirs := map[string]string{} // folder → why it is not fit ("" fit)
	dstDirs := map[string]string{}
	for _, rel := range plan.Paths {
		if why := c.copyOne(top, rel, srcDirs, dstDirs); why != "" {
			res.Skipped = append(res.Skipped, IncludeSkip{rel, why})
			continue
		}
		res.Copied = append(res.Copied, rel)
	}
	return res, nil
}

// copyOne copies rel; it returns why it did not ("" when it did).
func (c *Checkout) copyOne(top, rel string, srcDirs, dstDirs map[string]string) string {
	parts := strings.Split(rel, "/")
	if slices.Contains(parts, "..") || slices.Contains(parts, "") || slices.Contains(parts, ".") || strings.EqualFold(parts[0], ".git") {
		return "not a path inside the repository"
	}
	// The user's side: every folder on the path a real folder.
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		why, seen := srcDirs[d]
		if !seen {
			fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(d)))
			switch {
			case err != nil:
				why = "its folder " + d + " is gone"
			case fi.Mode()&fs.ModeSymlink != 0:
				why = "its folder " + d + " is a symlink in your checkout (hub never copies through a symlink)"
			case !fi.IsDir():
				why = d + " is not a folder in your checkout"
			}
			srcDirs[d] = why
		}
		if why != "" {
			return why
		}
	}
	src := filepath.Join(top, filepath.FromSlash(rel))
	fi, err := os.Lstat(src)
	if err != nil {
		return "it is gone from your checkout"
	}
	var target string
	switch {
	case fi.Mode().IsRegular():
	case fi.Mode()&fs.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return "a symlink whose target does not resolve"
		}
		realTop, err := filepath.EvalSymlinks(top)
		if err != nil {
			return err.Error()
		}
		in, err := filepath.Rel(realTop, real)
		if err != nil || in == ".." || strings.HasPrefix(in, "../") || filepath.IsAbs(in) {
			return "a symlink to " + real + ", outside your checkout"
		}
		if first, _, _ := strings.Cut(filepath.ToSlash(in), "/"); strings.EqualFold(first, ".git") || in == "." {
			return "a symlink into the repository's git dir"
		}
		// The same file, named from the link's folder in the new tree.
		linkDir := filepath.Join(realTop, filepath.FromSlash(strings.Join(parts[:len(parts)-1], "/")))
		if target, err = filepath.Rel(linkDir, real); err != nil {
			return err.Error()
		}
	default:
		return "not a regular file or a symlink (" + fi.Mode().Type().String() + ")"
	}
	// The job's side: make the folders, through no symlink.
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		why, seen := dstDirs[d]
		if !seen {
			p := filepath.Join(c.Dir, filepath.FromSlash(d))
			fi, err := os.Lstat(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				if err := os.Mkdir(p, 0o755); err != nil {
					why = "cannot make its folder " + d + ": " + err.Error()
				}
			case err != nil:
				why = err.Error()
			case fi.Mode()&fs.ModeSymlink != 0:
				why = "its folder " + d + " is a symlink in the job's worktree"
			case !fi.IsDir():
				why = d + " is a file in the job's worktree"
			}
			dstDirs[d] = why
		}
		if why != "" {
			return why
		}
	}
	dst := filepath.Join(c.Dir, filepath.FromSlash(rel))
	if target != "" {
		if err := os.Symlink(target, dst); err != nil {
			return "cannot make the symlink: " + err.Error()
		}
		return ""
	}
	if err := CopyNewFile(src, dst, fi.Mode().Perm()); err != nil {
		return "cannot copy it: " + err.Error()
	}
	return ""
}

// CopyNewFile copies the regular file src to dst, which must not exist,
// with mode perm (whatever the umask), through no symlink at either end.
// ReadFrom uses copy_file_range on Linux, which clones on btrfs and XFS.
func CopyNewFile(src, dst string, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
	if err != nil {
		return err
	}
	_, cerr := out.ReadFrom(in)
	if err := errors.Join(cerr, out.Chmod(perm), out.Close()); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// dropIncluded takes the files hub copied into the checkout out of hub's
// index, whatever the worker did to them or to the ignore rules: they are
// the user's local files, never the branch's.
func (c *Checkout) dropIncluded(ctx context.Context, o runOpts) error {
	s, err := readSmall(c.includedList(), 256<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the files .worktreeinclude copied: %w", err)
	}
	if s == "" {
		return nil
	}
	uo := o
	uo.stdin = strings.NewReader(s)
	_, err = runGit(ctx, c.Dir, uo, "update-index", "--force-remove", "-z", "--stdin")
	return err
}

// KeepOut records more paths (slash-separated, from the top) that Commit
// never commits: a tree hub itself put in the work tree, such as the
// dependencies it copied. Call it after CopyIncluded, which starts the list.
func (c *Checkout) KeepOut(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	f, err := os.OpenFile(c.includedList(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(strings.Join(paths, "\x00") + "\x00")
	return errors.Join(werr, f.Close())
}
