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
)

// RepairNested is the Repair.What of a git repository the worker made
// inside its checkout, whose files hub committed as plain files.
const RepairNested = "nested repository"

// RepairSparse is the Repair.What of a checkout the worker made sparse,
// whose files outside its patterns hub kept on the branch.
const RepairSparse = "sparse checkout"

// A folder of the work tree that holds a .git of its own (`git init sub`,
// a clone) and that hub's index does not know is a repository the worker
// made. git would take it for a submodule: `git add` records a gitlink
// (a commit id the branch's repository does not have) when it has a
// commit checked out, and fails outright when it has none. hub commits
// its files instead, as files of the job's branch, without its .git, the
// outer repository's ignore rules applied, and so for repositories inside
// it. Only git's own reading of the folder decides what is a repository:
// nothing of its .git is read by hub, and no git runs in it, so its
// config, hooks and filters never run. A submodule in the base tree (a
// gitlink in hub's index) stays a submodule; so does one the worker added
// with `git submodule add` (.gitmodules names it), which git records as
// it always does.

// others lists the files of the work tree that hub's index does not hold,
// ignored ones left out: files, and apart from them the folders git takes
// for repositories of their own (slash-terminated, as git lists them).
func (c *Checkout) others(ctx context.Context, o runOpts) (files, nested []string, err error) {
	out, err := runGit(ctx, c.Dir, o, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, nil, err
	}
	for _, p := range splitNUL(out) {
		if s := string(p); strings.HasSuffix(s, "/") {
			nested = append(nested, s)
		} else {
			files = append(files, s)
		}
	}
	return files, nested, nil
}

// nestedFiles lists the files inside the nested repositories dirs as hub
// commits them: every regular file and symlink (never followed) below
// each, none inside a .git, none the outer repository ignores. inner maps
// each of dirs to the repositories found inside it.
func (c *Checkout) nestedFiles(ctx context.Context, o runOpts, dirs []string) (files []string, inner map[string][]string, err error) {
	inner = map[string][]string{}
	for _, d := range dirs {
		root, err := c.inTree(d)
		if err != nil {
			return nil, nil, err
		}
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return err
				}
				return nil // a folder git could not read either: git add skips it too
			}
			rel, rerr := filepath.Rel(c.Dir, p)
			if rerr != nil {
				return rerr
			}
			rel = filepath.ToSlash(rel)
			switch {
			case strings.EqualFold(e.Name(), ".git"):
				if dir := strings.TrimSuffix(rel, e.Name()); dir != d {
					inner[d] = append(inner[d], dir)
				}
				if e.IsDir() {
					return filepath.SkipDir
				}
			case e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0:
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("read the repository the worker made at %s: %w", d, err)
		}
	}
	if len(files) == 0 {
		return nil, inner, nil
	}
	// check-ignore reads each path as a pathspec, with no magic but its
	// own: "./" keeps a name such as ":(icase)x" that name, and hub's
	// environment says nothing of pathspecs.
	var in strings.Builder
	for _, f := range files {
		in.WriteString("./" + f + "\x00")
	}
	ig := o
	ig.env = append(slices.Clone(o.env), pathspecEnv...)
	ig.stdin = strings.NewReader(in.String())
	out, err := runGit(ctx, c.Dir, ig, "check-ignore", "--no-index", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none is ignored
		return nil, nil, err
	}
	ignored := map[string]bool{}
	for _, p := range splitNUL(out) {
		ignored[strings.TrimPrefix(string(p), "./")] = true
	}
	files = slices.DeleteFunc(files, func(p string) bool { return ignored[p] })
	return files, inner, nil
}

// inTree is the absolute path of the folder rel (slash-separated, as git
// lists it) of the work tree, checked to be a folder reached through no
// symlink, so that nothing outside the work tree is read for it.
func (c *Checkout) inTree(rel string) (string, error) {
	p := c.Dir
	for _, part := range strings.Split(strings.TrimSuffix(rel, "/"), "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("%q is not a folder of the worktree", rel)
		}
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a folder of the worktree (%s)", rel, fi.Mode().Type())
		}
	}
	return p, nil
}

// gitmodulesPaths reads the paths the work tree's .gitmodules names, as
// data (a regular file, never through a symlink); none when there is none.
func (c *Checkout) gitmodulesPaths() map[string]bool {
	s, err := readSmall(filepath.Join(c.Dir, ".gitmodules"), 1<<20)
	if err != nil {
		return nil
	}
	paths := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		paths[strings.TrimSuffix(v, "/")+"/"] = true
	}
	return paths
}

// pathspecEnv makes git read pathspec magic (":(exclude,literal)…")
// whatever hub's own environment says of pathspecs.
var pathspecEnv = []string{"GIT_LITERAL_PATHSPECS=0", "GIT_GLOB_PATHSPECS=0", "GIT_NOGLOB_PATHSPECS=0", "GIT_ICASE_PATHSPECS=0"}

// tree is what stage finds in the work tree and hub's index.
type tree struct {
	nested   []string // repositories the worker made, not in the index (slash-terminated)
	gitlinks []string // the index's submodules
	checked  []string // those of them with a checkout (a .git) in the work tree
}

// survey lists, in one git, hub's index (for its submodules) and the
// files it does not hold (for the repositories the worker made).
func (c *Checkout) survey(ctx context.Context, o runOpts) (tree, error) {
	var t tree
	out, err := runGit(ctx, c.Dir, o, "ls-files", "-z", "-t", "-s", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return t, err
	}
	for _, e := range splitNUL(out) {
		tag, rest, _ := strings.Cut(string(e), " ")
		if tag == "?" {
			if strings.HasSuffix(rest, "/") {
				t.nested = append(t.nested, rest)
			}
			continue
		}
		meta, path, ok := strings.Cut(rest, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		if len(t.gitlinks) == 0 || t.gitlinks[len(t.gitlinks)-1] != path { // one line per stage
			t.gitlinks = append(t.gitlinks, path)
			if _, err := os.Lstat(filepath.Join(c.Dir, filepath.FromSlash(path), ".git")); err == nil {
				t.checked = append(t.checked, path)
			}
		}
	}
	return t, nil
}

// stage stages the whole work tree into hub's index, as `git add -A`
// does, but for what git would read through a git dir of the worker's:
//   - the repositories the worker made are staged as plain files (see
//     above), and reported;
//   - a submodule with a checkout in the work tree (of the base tree, or
//     one the worker added: .gitmodules names it) is staged as the commit
//     its HEAD names, which git reads as data. git add would run `git
//     status` inside it to see whether its files changed, with the
//     submodule's config, whose filters are the worker's to set: hub
//     never looks inside a submodule's checkout.
//
// It returns the index's submodules (for filesInSubmodules), what it did
// about each nested repository, and an *UncommittableError for folders it
// could not stage (they stay in the work tree), after staging the rest.
//
// The paths in skip (files too big to commit) are left out: git never
// reads them, so not even a loose object of theirs is written.
func (c *Checkout) stage(ctx context.Context, o runOpts, skip []string) (gitlinks []string, reps []Repair, unstaged error, err error) {
	t, err := c.survey(ctx, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(t.nested) == 0 && len(t.checked) == 0 && len(skip) == 0 {
		_, err := runGit(ctx, c.Dir, o, "add", "-A")
		return t.gitlinks, nil, nil, err
	}
	var asFiles, added []string
	submodules := map[string]bool{}
	if len(t.nested) > 0 {
		submodules = c.gitmodulesPaths()
	}
	for _, d := range t.nested {
		if submodules[d] {
			added = append(added, strings.TrimSuffix(d, "/"))
		} else {
			asFiles = append(asFiles, d)
		}
	}
	spec := []string{"."}
	for _, d := range slices.Concat(asFiles, added, t.checked, skip) {
		spec = append(spec, ":(exclude,literal)"+strings.TrimSuffix(d, "/"))
	}
	ao := o
	ao.env = append(slices.Clone(o.env), pathspecEnv...)
	ao.stdin = strings.NewReader(strings.Join(spec, "\x00") + "\x00")
	if _, err := runGit(ctx, c.Dir, ao, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return nil, nil, nil, err
	}
	// A submodule of the index: its HEAD's commit (none: left as it is).
	if len(t.checked) > 0 {
		uo := o
		uo.stdin = strings.NewReader(strings.Join(t.checked, "\x00") + "\x00")
		if _, err := runGit(ctx, c.Dir, uo, "update-index", "-z", "--stdin"); err != nil {
			return nil, nil, nil, err
		}
	}
	// A submodule the worker added: its HEAD's commit, or refused.
	var refused []string
	for _, d := range added {
		if _, err := runGit(ctx, c.Dir, o, "update-index", "--add", "--", d); err != nil {
			refused = append(refused, d+"/")
		}
	}
	files, inner, err := c.nestedFiles(ctx, o, asFiles)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(files) > 0 {
		uo := o
		uo.stdin = strings.NewReader(strings.Join(files, "\x00") + "\x00")
		if _, err := runGit(ctx, c.Dir, uo, "update-index", "--add", "--replace", "-z", "--stdin"); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, d := range asFiles {
		n := 0
		for _, f := range files {
			if strings.HasPrefix(f, d) {
				n++
			}
		}
		found := d + " is a git repository the worker made"
		if in := inner[d]; len(in) > 0 {
			found += ", with " + strings.Join(in, ", ") + " inside it"
		}
		done := fmt.Sprintf("committed its files as plain files (%d); its .git is not on the branch", n)
		if n == 0 {
			done = "found no files in it to commit; its .git is not on the branch"
		}
		reps = append(reps, Repair{What: RepairNested, Found: found, Done: done})
	}
	if len(refused) > 0 {
		unstaged = &UncommittableError{Folders: refused}
	}
	return t.gitlinks, reps, unstaged, nil
}

// UncommittableError names folders of the work tree hub could not commit:
// submodules the worker added (.gitmodules names them) with no commit
// checked out, which can be on the branch neither as a submodule (there
// is no commit to record) nor as files (.gitmodules says they are a
// submodule). Their files stay in the worktree.
type UncommittableError struct{ Folders []string }

func (e *UncommittableError) Error() string {
	return fmt.Sprintf("%s: a submodule the worker added (.gitmodules names it) with no commit checked out, so hub can commit it neither as a submodule nor as files; "+
		"its files stay in the worktree (commit in it, or take it out of .gitmodules)", strings.Join(e.Folders, ", "))
}

// keepSparse keeps on the branch the files a sparse checkout of the
// worker's left out of the work tree. hub's checkout holds the whole tree,
// but the worker may make it sparse (`git sparse-checkout set`): its git
// then removes the files outside its patterns and marks them skip-worktree
// in its own index, and hub's index, which knows nothing of it, would
// stage them as deleted. Files the worker's index marks so and that are
// absent are marked skip-worktree in hub's index too, which git add then
// leaves as they are. Only a checkout with sparse patterns in its git dir
// is looked at; its index is read as data, from a copy.
func (c *Checkout) keepSparse(ctx context.Context, o runOpts) *Repair {
	if _, err := os.Lstat(filepath.Join(c.GitDir, "info", "sparse-checkout")); err != nil {
		return nil
	}
	tmp := c.Index + ".worker"
	if err := copyFile(filepath.Join(c.GitDir, "index"), tmp); err != nil {
		return nil
	}
	defer os.Remove(tmp)
	wo := o
	wo.env = append(slices.Clone(o.env), "GIT_INDEX_FILE="+tmp)
	out, err := runGit(ctx, c.Dir, wo, "ls-files", "-t", "-z")
	if err != nil {
		return nil
	}
	var absent []string
	for _, e := range splitNUL(out) {
		tag, p, ok := strings.Cut(string(e), " ")
		if !ok || tag != "S" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(c.Dir, filepath.FromSlash(p))); errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, p)
		}
	}
	if len(absent) == 0 {
		return nil
	}
	// Those hub's index holds (update-index refuses a path it has not).
	out, err = runGit(ctx, c.Dir, o, "ls-files", "-z")
	if err != nil {
		return nil
	}
	inHub := map[string]bool{}
	for _, p := range splitNUL(out) {
		inHub[string(p)] = true
	}
	held := slices.DeleteFunc(absent, func(p string) bool { return !inHub[p] })
	if len(held) == 0 {
		return nil
	}
	uo := o
	uo.stdin = strings.NewReader(strings.Join(held, "\x00") + "\x00")
	if _, err := runGit(ctx, c.Dir, uo, "update-index", "--skip-worktree", "-z", "--stdin"); err != nil {
		return nil
	}
	found := fmt.Sprintf("the worker made its worktree sparse: %d files of the tree are not in it", len(held))
	done := "kept them on the branch as they were (not deleted)"
	if len(held) == 1 {
		found = "the worker made its worktree sparse: 1 file of the tree is not in it"
		done = "kept it on the branch as it was (not deleted)"
	}
	return &Repair{What: RepairSparse, Found: found, Done: done}
}
