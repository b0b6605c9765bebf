package gitx

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hub-agents/hub/internal/atomicfile"
	"github.com/hub-agents/hub/internal/text"
)

// Repair is one part of a checkout's git state that the worker changed,
// what hub found and what it did about it.
type Repair struct{ What, Found, Done string }

// CommitOptions say how Commit records a checkout.
type CommitOptions struct {
	Message string
	Who     Identity
	// Base is the commit the job started from: the branch is put back
	// there if the worker deleted it.
	Base string
	// Scratch is a folder of hub's own (not the worker's) where a private
	// checkout's objects are copied before they are read; it is emptied.
	Scratch string
	// Before are the refs of the user's repository before the run (a
	// linked checkout's worker could move them): commits reachable from
	// them are not the worker's.
	Before map[string]string
	// MaxFileBytes: a file of the work tree larger than this is not
	// committed (0: no bound); Commit then fails with an *OversizeError
	// naming it, after committing the rest, and leaves it where it is.
	MaxFileBytes int64
}

// CommitResult is what Commit did.
type CommitResult struct {
	Head      string // the branch's tip afterwards
	Committed bool   // hub committed files the worker left
	Repairs   []Repair
}

// Commit records what the worker left in the checkout on its branch, from
// hub's own view, whatever the worker did to its git state: for a private
// checkout it first copies the worker's commits into the user's repository
// (checking every object), then it takes the worker's commits onto the
// branch (also those made on a detached HEAD or another branch it made),
// commits the work tree's files with hub's index on top, moves the branch
// (only if nobody else moved it meanwhile), and puts the worker's git state
// back: the .git file, the git dir's HEAD and links, its index. Every
// change it undid is in the result's Repairs. It never commits anywhere but
// the branch.
//
// A git repository the worker made inside the checkout is committed as
// plain files, without its .git (see stage). Files inside a submodule's
// folder that is not checked out cannot be on the branch, nor can a
// submodule the worker added with no commit: Commit then fails with an
// error naming them (a *StrandedError, an *UncommittableError), after
// committing everything else, and leaves them in place.
func (c *Checkout) Commit(ctx context.Context, o CommitOptions) (CommitResult, error) {
	var res CommitResult
	if c.Branch == "" {
		return res, errors.New("commit: a detached checkout has no branch to commit on")
	}
	ref := "refs/heads/" + c.Branch
	tip0, tree0, err := c.refAndTree(ctx, ref)
	if err != nil {
		return res, err
	}
	tip := tip0
	if tip == "" {
		if o.Base == "" {
			return res, fmt.Errorf("commit: branch %s is gone and no base is known to put it back at", c.Branch)
		}
		res.Repairs = append(res.Repairs, Repair{What: "branch", Found: c.Branch + " was deleted", Done: "recreated it at the job's base " + short(o.Base)})
		tip = o.Base
	}
	have := []string{tip}
	if o.Base != "" && o.Base != tip {
		have = append(have, o.Base)
	}
	tip, second, headMoved := c.workerCommits(ctx, o, ref, tip, have, &res)

	// The files, from hub's index: what the work tree holds, on top of tip.
	opts := c.hubOpts()
	tree, big, unstaged, stranded, err := c.stageTree(ctx, opts, o, tip, tip0, &res)
	if err != nil {
		return res, err
	}
	head := tip
	tipTree := tree0
	if tip != tip0 {
		tipTree, _ = c.revParse(ctx, tip+"^{tree}")
	}
	if tree != tipTree || second != "" {
		if head, err = c.commitTree(ctx, opts, o, tree, tip, second); err != nil {
			return res, err
		}
		res.Committed = true
	}
	if head != tip0 {
		// Moves the branch only from where it was read: a branch moved by
		// someone else meanwhile is an error, not a lost commit.
		if _, err := runGit(ctx, c.Repo.Top, runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir}},
			"update-ref", "-m", "hub: "+text.Clip(subject(o.Message), 100), ref, head, tip0); err != nil {
			return res, err
		}
	}
	res.Head = head
	res.Repairs = append(res.Repairs, c.restore(ctx, head, headMoved)...)
	if len(stranded) > 0 {
		unstaged = errors.Join(unstaged, &StrandedError{Paths: stranded})
	}
	if o.MaxFileBytes > 0 && o.Base != "" && tip != o.Base {
		// The worker's own commits: a blob over the bound there is on the
		// branch already; the job must say so.
		inCommits, err := c.oversizeCommitted(ctx, o.Base, tip, o.MaxFileBytes)
		if err == nil {
			big = append(big, inCommits...)
		}
	}
	if len(big) > 0 {
		unstaged = errors.Join(unstaged, &OversizeError{Files: big, Max: o.MaxFileBytes})
	}
	return res, unstaged
}

// workerCommits takes what the worker committed onto the branch's tip:
// in a private checkout its branch and HEAD from its own git dir (their
// objects copied out first); a HEAD off the branch, whose commits become
// the tip when they descend from it, or else the second parent of hub's
// commit. It returns the new tip, that second parent, and whether HEAD was
// off the branch (restore puts it back).
func (c *Checkout) workerCommits(ctx context.Context, o CommitOptions, ref, tip string, have []string, res *CommitResult) (string, string, bool) {
	headRef, headSHA, headWhat := c.workerHead()
	if c.Private {
		// The worker's branch and HEAD in its own git dir: what it committed.
		privTip, _ := c.privateRef(ref)
		var tips []string
		for _, s := range []string{privTip, headSHA} {
			if s != "" && !slices.Contains(tips, s) && !slices.Contains(have, s) {
				tips = append(tips, s)
			}
		}
		if headRef != "" && headRef != ref {
			if s, _ := c.privateRef(headRef); s != "" && !slices.Contains(tips, s) && !slices.Contains(have, s) {
				tips = append(tips, s)
				headSHA = s
			}
		}
		if len(tips) > 0 {
			if err := c.importCommits(ctx, o.Scratch, tips, have); err != nil {
				res.Repairs = append(res.Repairs, Repair{What: "objects", Found: "the worker's commits could not be taken: " + err.Error(),
					Done: "committed its files onto " + c.Branch + " without them"})
				privTip, headSHA = "", ""
			}
		}
		if privTip != "" && privTip != tip {
			tip = privTip // its own branch, moved in its sandbox as it would have been in place
		}
	} else if headRef != "" && headRef != ref {
		headSHA, _ = c.revParse(ctx, headRef)
	}
	if headWhat == "" {
		return tip, "", false
	}
	// A HEAD off the branch: the worker's commits there are taken onto it.
	var second string
	r := Repair{What: "HEAD", Found: headWhat, Done: "put it back on " + c.Branch}
	if headSHA != "" && headSHA != tip {
		if ok, _ := IsAncestor(ctx, c.Repo.Top, headSHA, tip); !ok && c.hasNewCommits(ctx, headSHA, append(slices.Clone(have), tip), o.Before) {
			if ok, _ := IsAncestor(ctx, c.Repo.Top, tip, headSHA); ok {
				tip = headSHA
				r.Done += "; its commits there are on " + c.Branch
			} else {
				second = headSHA
				r.Done += "; its commits there are kept as the second parent of hub's commit"
			}
		}
	}
	res.Repairs = append(res.Repairs, r)
	return tip, second, true
}

// stageTree stages the work tree in hub's index on top of tip and writes
// its tree. hub's index was made at the base (or by hub's last commit,
// which moved the branch): a tip still at the base needs no reset of it.
// It returns the tree, the files over the size bound (left out), what
// could not be staged and the files stranded in submodules.
func (c *Checkout) stageTree(ctx context.Context, opts runOpts, o CommitOptions, tip, tip0 string, res *CommitResult) (tree string, big []OversizeFile, unstaged error, stranded []string, err error) {
	if _, err := os.Stat(c.Index); err != nil {
		if _, err := runGit(ctx, c.Dir, opts, "read-tree", tip); err != nil {
			return "", nil, nil, nil, err
		}
	} else if tip != o.Base || tip != tip0 {
		_, err = runGit(ctx, c.Dir, opts, "read-tree", "-m", tip) // keeps the stat data of what matches
		if err != nil {
			_, err = runGit(ctx, c.Dir, opts, "read-tree", tip)
		}
		if err != nil {
			return "", nil, nil, nil, err
		}
	}
	if r := c.keepSparse(ctx, opts); r != nil {
		res.Repairs = append(res.Repairs, *r)
	}
	if o.MaxFileBytes > 0 {
		if big, err = c.oversize(ctx, opts, o.MaxFileBytes); err != nil {
			return "", nil, nil, nil, err
		}
	}
	var skip []string
	for _, b := range big {
		skip = append(skip, b.Path)
	}
	gitlinks, nested, unstaged, err := c.stage(ctx, opts, skip)
	if err != nil {
		return "", nil, nil, nil, err
	}
	res.Repairs = append(res.Repairs, nested...)
	// What .worktreeinclude copied in is never committed, even un-ignored.
	if err := c.dropIncluded(ctx, opts); err != nil {
		return "", nil, nil, nil, err
	}
	stranded = c.filesInSubmodules(gitlinks)
	out, err := runGit(ctx, c.Dir, opts, "write-tree")
	if err != nil {
		return "", nil, nil, nil, err
	}
	return strings.TrimSpace(string(out)), big, unstaged, stranded, nil
}

// commitTree makes hub's commit of tree on tip (and second, the worker's
// commits off the branch, as its second parent), as o.Who, with o.Message.
func (c *Checkout) commitTree(ctx context.Context, opts runOpts, o CommitOptions, tree, tip, second string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign", tree, "-p", tip}
	if second != "" {
		args = append(args, "-p", second)
	}
	co := opts
	co.env = append(slices.Clone(opts.env),
		"GIT_AUTHOR_NAME="+o.Who.Name, "GIT_AUTHOR_EMAIL="+o.Who.Email,
		"GIT_COMMITTER_NAME="+o.Who.Name, "GIT_COMMITTER_EMAIL="+o.Who.Email)
	co.stdin = strings.NewReader(o.Message)
	out, err := runGit(ctx, c.Dir, co, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// OversizeFile is a file larger than a job may commit.
type OversizeFile struct {
	Path string
	Size int64
	// Committed: it is in a commit the worker made itself (on the branch);
	// else it was left out of hub's commit and stays in the worktree.
	Committed bool
}

// OversizeError names files larger than the bound a job commits.
type OversizeError struct {
	Files []OversizeFile
	Max   int64
}

func (e *OversizeError) Error() string {
	var left, in []string
	for _, f := range e.Files {
		s := fmt.Sprintf("%s (%s)", f.Path, mib(f.Size))
		if f.Committed {
			in = append(in, s)
		} else {
			left = append(left, s)
		}
	}
	var parts []string
	if len(left) > 0 {
		parts = append(parts, fmt.Sprintf("%s over the %s a job may commit (max_file_mb): not committed, left in the worktree", strings.Join(left, ", "), mib(e.Max)))
	}
	if len(in) > 0 {
		parts = append(parts, fmt.Sprintf("the worker's own commits hold %s, over the %s a job may commit (max_file_mb): review them before landing", strings.Join(in, ", "), mib(e.Max)))
	}
	return strings.Join(parts, "; ")
}

func mib(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// oversize lists the files git add would stage (untracked and not
// ignored, or tracked and changed) that are larger than max, at most 20.
func (c *Checkout) oversize(ctx context.Context, o runOpts, max int64) ([]OversizeFile, error) {
	out, err := runGit(ctx, c.Dir, o, "ls-files", "-z", "--others", "--modified", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var big []OversizeFile
	seen := map[string]bool{}
	for _, p := range splitNUL(out) {
		rel := string(p)
		if seen[rel] || len(big) >= 20 {
			continue
		}
		seen[rel] = true
		fi, err := os.Lstat(filepath.Join(c.Dir, filepath.FromSlash(rel)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > max {
			big = append(big, OversizeFile{Path: rel, Size: fi.Size()})
		}
	}
	return big, nil
}

// oversizeCommitted lists the blobs of tip's tree, added or changed since
// base, larger than max, at most 20.
func (c *Checkout) oversizeCommitted(ctx context.Context, base, tip string, max int64) ([]OversizeFile, error) {
	o := runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir}}
	out, err := runGit(ctx, c.Repo.Top, o, "diff-tree", "-r", "-z", "--no-renames", "--diff-filter=AM", base, tip)
	if err != nil {
		return nil, err
	}
	// -z raw: ":mode mode sha sha status\0path\0" pairs.
	fields := splitNUL(out)
	var shas, paths []string
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(string(fields[i]))
		if len(meta) >= 4 && strings.HasPrefix(meta[1], "10") {
			shas, paths = append(shas, meta[3]), append(paths, string(fields[i+1]))
		}
	}
	if len(shas) == 0 {
		return nil, nil
	}
	bo := o
	bo.stdin = strings.NewReader(strings.Join(shas, "\n") + "\n")
	out, err = runGit(ctx, c.Repo.Top, bo, "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return nil, err
	}
	var big []OversizeFile
	for i, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if n, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64); err == nil && n > max && i < len(paths) && len(big) < 20 {
			big = append(big, OversizeFile{Path: paths[i], Size: n, Committed: true})
		}
	}
	return big, nil
}

// StrandedError names files the worker wrote inside submodule folders that
// are not checked out, which no commit of the job's branch can hold.
type StrandedError struct{ Paths []string }

func (e *StrandedError) Error() string {
	return fmt.Sprintf("files inside submodule folders that are not checked out cannot be committed: %s; they stay in the worktree",
		strings.Join(e.Paths, ", "))
}

// filesInSubmodules lists files in the work tree below a submodule of
// hub's index (gitlinks, its paths) whose folder is not a checkout of its
// own: git skips them silently.
func (c *Checkout) filesInSubmodules(gitlinks []string) []string {
	var stranded []string
	for _, path := range gitlinks {
		dir := filepath.Join(c.Dir, filepath.FromSlash(path))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			continue // a checked-out submodule: its own repository holds its files
		}
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || len(stranded) >= 20 {
				return nil
			}
			if rel, err := filepath.Rel(c.Dir, p); err == nil {
				stranded = append(stranded, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	return stranded
}

// refAndTree reads ref's commit and its tree in the user's repository in
// one git, "" for both when the ref is not there.
func (c *Checkout) refAndTree(ctx context.Context, ref string) (sha, tree string, err error) {
	out, err := runGit(ctx, c.Repo.Top, runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir, "GIT_OPTIONAL_LOCKS=0"}},
		"for-each-ref", "--format=%(objectname) %(tree)", "--", ref)
	if err != nil {
		return "", "", err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if s, t, ok := strings.Cut(l, " "); ok && objectID.MatchString(s) {
			return s, t, nil
		}
	}
	return "", "", nil
}

// revParse resolves rev to an object id in the user's repository, "" when
// it names nothing.
func (c *Checkout) revParse(ctx context.Context, rev string) (string, error) {
	if err := checkRev("revision", rev); err != nil {
		return "", err
	}
	out, err := runGit(ctx, c.Repo.Top, runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir, "GIT_OPTIONAL_LOCKS=0"}},
		"rev-parse", "--verify", "--quiet", "--end-of-options", rev)
	if exitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// hasNewCommits reports whether commit x has history that is neither on
// the commits known nor on any ref that existed before the run: the
// worker's own.
func (c *Checkout) hasNewCommits(ctx context.Context, x string, known []string, before map[string]string) bool {
	args := append([]string{"rev-list", "--count", x, "--not"}, known...)
	for _, sha := range before {
		if objectID.MatchString(sha) {
			args = append(args, sha)
		}
	}
	out, err := runGit(ctx, c.Repo.Top, runOpts{env: []string{"GIT_DIR=" + c.Repo.CommonDir, "GIT_OPTIONAL_LOCKS=0"}}, args...)
	return err == nil && strings.TrimSpace(string(out)) != "0"
}

var objectID = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// readSmall reads a small regular file as data: never through a symlink,
// never more than max bytes.
func readSmall(path string, max int64) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("%s is over %d bytes", path, max)
	}
	return string(b), nil
}

// workerHead reads the checkout's HEAD as the worker left it, as data.
// When it is not on the branch it returns the ref or the commit it names
// instead, and what says so ("" when HEAD is on the branch).
func (c *Checkout) workerHead() (ref, sha, what string) {
	want := "refs/heads/" + c.Branch
	s, err := readSmall(filepath.Join(c.GitDir, "HEAD"), 4096)
	if err != nil {
		return "", "", "HEAD was unreadable (" + err.Error() + ")"
	}
	s = strings.TrimSpace(s)
	if r, ok := strings.CutPrefix(s, "ref:"); ok {
		r = strings.TrimSpace(r)
		if r == want {
			return r, "", ""
		}
		if !validRefName(r) {
			return "", "", fmt.Sprintf("HEAD named %q, not a branch", text.Clip(r, 80))
		}
		return r, "", "HEAD was on " + r
	}
	if objectID.MatchString(s) {
		return "", s, "HEAD was detached at " + short(s)
	}
	return "", "", fmt.Sprintf("HEAD held %q", text.Clip(s, 80))
}

// validRefName accepts the ref names hub resolves from a worker's HEAD: a
// branch or another ref under refs/, nothing git could read as an option
// or a path out of refs/.
func validRefName(r string) bool {
	return strings.HasPrefix(r, "refs/") && !strings.Contains(r, "..") && !strings.ContainsAny(r, " ~^:?*[\\\x00\x7f") &&
		!strings.HasSuffix(r, "/") && !strings.HasSuffix(r, ".lock") && len(r) < 1024 && !strings.ContainsFunc(r, func(r rune) bool { return r < ' ' })
}

// privateRef reads ref from a private checkout's git dir as data: its
// loose file, else its line in packed-refs. "" when it is not there.
func (c *Checkout) privateRef(ref string) (string, error) {
	if !validRefName(ref) {
		return "", fmt.Errorf("bad ref name %q", ref)
	}
	if s, err := readSmall(filepath.Join(c.GitDir, filepath.FromSlash(ref)), 256); err == nil {
		s = strings.TrimSpace(s)
		if objectID.MatchString(s) {
			return s, nil
		}
		return "", fmt.Errorf("%s holds %q, not a commit id", ref, text.Clip(s, 80))
	}
	packed, err := readSmall(filepath.Join(c.GitDir, "packed-refs"), 16<<20)
	if err != nil {
		return "", nil
	}
	for _, l := range strings.Split(packed, "\n") {
		if sha, name, ok := strings.Cut(strings.TrimSpace(l), " "); ok && name == ref && objectID.MatchString(sha) {
			return sha, nil
		}
	}
	return "", nil
}

var (
	looseDir  = regexp.MustCompile(`^[0-9a-f]{2}$`)
	looseName = regexp.MustCompile(`^([0-9a-f]{38}|[0-9a-f]{62})$`)
	packName  = regexp.MustCompile(`^pack-[0-9a-f]{40,64}\.(pack|idx)$`)
)

// importCommits copies the objects the commits tips add to the user's
// repository from a private checkout's object store. The store is the
// worker's: hub copies its object files (regular files with object names
// only, nothing of its info/, so no alternates it planted) into scratch,
// packs what tips reach beyond have from there, and unpacks it into the
// user's repository with git checking every object (--strict: content
// and links). It then checks each tip is a commit there.
func (c *Checkout) importCommits(ctx context.Context, scratch string, tips, have []string) error {
	if scratch == "" {
		return errors.New("no folder to copy the worker's objects into")
	}
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	q := filepath.Join(scratch, "objects")
	if err := os.MkdirAll(filepath.Join(q, "pack"), 0o700); err != nil {
		return err
	}
	src := filepath.Join(c.GitDir, "objects")
	ents, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("read the worker's objects: %w", err)
	}
	for _, e := range ents {
		switch {
		case looseDir.MatchString(e.Name()) && e.Type().IsDir():
			files, err := os.ReadDir(filepath.Join(src, e.Name()))
			if err != nil {
				return err
			}
			for _, f := range files {
				if !looseName.MatchString(f.Name()) || !f.Type().IsRegular() {
					continue
				}
				if err := os.MkdirAll(filepath.Join(q, e.Name()), 0o700); err != nil {
					return err
				}
				if err := copyFile(filepath.Join(src, e.Name(), f.Name()), filepath.Join(q, e.Name(), f.Name())); err != nil {
					return err
				}
			}
		case e.Name() == "pack" && e.Type().IsDir():
			files, err := os.ReadDir(filepath.Join(src, "pack"))
			if err != nil {
				return err
			}
			for _, f := range files {
				if packName.MatchString(f.Name()) && f.Type().IsRegular() {
					if err := copyFile(filepath.Join(src, "pack", f.Name()), filepath.Join(q, "pack", f.Name())); err != nil {
						return err
					}
				}
			}
		}
	}
	var revs strings.Builder
	for _, t := range tips {
		if !objectID.MatchString(t) {
			return fmt.Errorf("%q is not an object id", t)
		}
		revs.WriteString(t + "\n")
	}
	for _, h := range have {
		revs.WriteString("^" + h + "\n")
	}
	packPath := filepath.Join(scratch, "import.pack")
	pf, err := os.Create(packPath)
	if err != nil {
		return err
	}
	defer pf.Close()
	user := []string{"GIT_DIR=" + c.Repo.CommonDir}
	if _, err := runGit(ctx, c.Repo.Top, runOpts{env: append(slices.Clone(user), "GIT_ALTERNATE_OBJECT_DIRECTORIES="+q),
		stdin: strings.NewReader(revs.String()), stdout: pf}, "pack-objects", "--revs", "--stdout", "-q"); err != nil {
		return err
	}
	var hdr [12]byte
	if _, err := pf.ReadAt(hdr[:], 0); err != nil || !bytes.Equal(hdr[:4], []byte("PACK")) {
		return fmt.Errorf("git pack-objects wrote no pack (%v)", err)
	}
	if n := binary.BigEndian.Uint32(hdr[8:]); n > 0 {
		if _, err := pf.Seek(0, io.SeekStart); err != nil {
			return err
		}
		// As a fetch does: a few objects loose, many as a pack of their own.
		args := []string{"unpack-objects", "-q", "--strict"}
		if n >= 100 {
			args = []string{"index-pack", "--stdin", "--strict"}
		}
		if _, err := runGit(ctx, c.Repo.Top, runOpts{env: user, stdin: pf}, args...); err != nil {
			return err
		}
	}
	out, err := runGit(ctx, c.Repo.Top, runOpts{env: user, stdin: strings.NewReader(strings.Join(tips, "\n") + "\n")},
		"cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, t := range tips {
		if i >= len(lines) || lines[i] != t+" commit" {
			return fmt.Errorf("%s is not a commit in %s after the copy", short(t), c.Repo.Top)
		}
	}
	return nil
}

// restore puts the worker's git state back as hub made it, the branch at
// head: the .git file; for a linked checkout its git dir's HEAD, commondir
// and gitdir links; for a private one its whole git dir, written anew (the
// objects the worker made are in the user's repository by now); and the
// index, a copy of hub's. headSeen says Commit already reported HEAD.
func (c *Checkout) restore(ctx context.Context, head string, headSeen bool) []Repair {
	var reps []Repair
	note := func(what, found, done string) { reps = append(reps, Repair{What: what, Found: found, Done: done}) }
	if s, err := readSmall(filepath.Join(c.Dir, ".git"), 4096); err != nil {
		note(".git", describeMissing(err), "wrote it anew, naming "+c.GitDir)
	} else if p, ok := strings.CutPrefix(strings.TrimSpace(s), "gitdir:"); !ok || strings.Contains(strings.TrimSpace(p), "\n") ||
		!sameFile(resolveFrom(c.Dir, strings.TrimSpace(p)), c.GitDir) {
		note(".git", fmt.Sprintf("it said %q", text.Clip(strings.TrimSpace(s), 120)), "rewrote it to name "+c.GitDir)
	}
	if err := c.writeGitFile(); err != nil {
		note(".git", "it could not be rewritten", err.Error())
	}
	if c.Private {
		c.config = c.privateConfig(ctx)
		defer func() { c.config = nil }()
		if s, err := readSmall(filepath.Join(c.GitDir, "config"), 1<<20); err != nil || s != string(c.config) {
			note("config", "the worker changed its git config", "wrote hub's anew")
		}
		if ents, _ := os.ReadDir(filepath.Join(c.GitDir, "hooks")); len(ents) > 0 {
			note("hooks", fmt.Sprintf("%d files in its git dir's hooks/", len(ents)), "removed them")
		}
		if s, err := readSmall(filepath.Join(c.GitDir, "objects", "info", "alternates"), 1<<16); err != nil ||
			s != filepath.Join(c.Repo.CommonDir, "objects")+"\n" {
			note("alternates", "the worker changed its objects' alternates", "wrote hub's anew")
		}
		old := c.GitDir + ".old"
		_ = os.RemoveAll(old)
		if err := os.Rename(c.GitDir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			note("git dir", "it could not be moved aside", err.Error())
		}
		if err := c.writePrivateGitDir(ctx, head); err != nil {
			note("git dir", "it could not be written anew", err.Error())
		}
		_ = os.RemoveAll(old)
	} else {
		_ = os.MkdirAll(c.GitDir, 0o755)
		gitFile := filepath.Join(c.Dir, ".git")
		links := []struct {
			name, body, done string
			ok               func(string) bool
		}{
			{"HEAD", "ref: refs/heads/" + c.Branch + "\n", "put it back on " + c.Branch,
				func(s string) bool { return strings.TrimSpace(s) == "ref: refs/heads/"+c.Branch }},
			{"commondir", "../..\n", "pointed it back at " + c.Repo.CommonDir,
				func(s string) bool {
					return sameFile(resolveFrom(c.GitDir, strings.TrimSpace(s)), c.Repo.CommonDir)
				}},
			{"gitdir", gitFile + "\n", "pointed it back at " + gitFile,
				func(s string) bool { return sameFile(strings.TrimSpace(s), gitFile) }},
		}
		for _, l := range links {
			s, err := readSmall(filepath.Join(c.GitDir, l.name), 4096)
			if err == nil && l.ok(s) {
				continue
			}
			if !(l.name == "HEAD" && headSeen) {
				found := fmt.Sprintf("it said %q", text.Clip(strings.TrimSpace(s), 120))
				if err != nil {
					found = describeMissing(err)
				}
				note(l.name, found, l.done)
			}
			if err := atomicfile.Replace(filepath.Join(c.GitDir, l.name), []byte(l.body), 0o644); err != nil {
				note(l.name, "it could not be rewritten", err.Error())
			}
		}
	}
	if err := copyFile(c.Index, filepath.Join(c.GitDir, "index")); err != nil {
		note("index", "the worktree's index could not be replaced", err.Error())
	}
	return reps
}

func describeMissing(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "it was gone"
	}
	return err.Error()
}

func short(sha string) string { return sha[:min(12, len(sha))] }

// subject is a commit message's first line.
func subject(msg string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return l
}
