package gitx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Repo is a validated git checkout with a work tree, in a repository with at
// least one commit (its HEAD may be on a branch that has none yet: see
// Resolve).
type Repo struct {
	Top       string // absolute top level of the work tree (symlinks resolved)
	GitDir    string // absolute .git dir of this work tree
	CommonDir string // absolute common dir (== GitDir for the main work tree)
}

// Open validates path in-process, without starting git: path must be an
// existing directory inside a git work tree (the top or any directory below
// it, including in a linked worktree) of a repository that has a commit.
// Its HEAD may be unborn (`git checkout --orphan`) when some other ref names
// a commit: a job can start from a base given explicitly, and Resolve of
// HEAD says what is wrong. The errors are ErrNotRepo, ErrBare and
// ErrNoCommits, with messages that say what to do.
func Open(path string) (*Repo, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &hintError{fmt.Sprintf("%s is not a git repository (it does not exist); pass the top of a git checkout", path), ErrNotRepo, err}
	case err != nil:
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	case !fi.IsDir():
		return nil, &hintError{fmt.Sprintf("%s is not a git repository (it is not a directory); pass the top of a git checkout", path), ErrNotRepo, nil}
	}
	dir, err := realPath(path)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	notRepo := &hintError{fmt.Sprintf("%s is not a git repository; pass the top of a git checkout", path), ErrNotRepo, nil}
	bare := &hintError{fmt.Sprintf("%s is a bare repository; pass a checkout with a work tree", path), ErrBare, nil}

	repo, err := openGoGit(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if insideGitDir(dir) {
			return nil, bare
		}
		return nil, notRepo
	}
	if errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) || errors.Is(err, git.ErrUnknownExtension) ||
		errors.Is(err, git.ErrUnsupportedRepositoryFormatVersion) {
		return nil, &hintError{fmt.Sprintf("%s uses a repository format hub cannot read (%v)", path, err), ErrUnsupported, err}
	}
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, bare
	}
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	r := &Repo{Top: filepath.Clean(wt.Filesystem.Root())}
	if r.GitDir, r.CommonDir, err = gitDirs(r.Top); err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	// core.bare in the common config speaks for the main work tree only: a
	// linked worktree of a bare repository is a fine checkout.
	if cfg, err := repo.Config(); err == nil && cfg.Core.IsBare && r.GitDir == r.CommonDir {
		return nil, bare
	}
	if _, err := repo.Head(); errors.Is(err, plumbing.ErrReferenceNotFound) {
		if !hasCommitRef(repo) {
			return nil, &hintError{fmt.Sprintf("%s has no commits yet; commit something first, hub starts jobs from a commit", path), ErrNoCommits, nil}
		}
	} else if err != nil {
		return nil, fmt.Errorf("open repository %s: read HEAD: %w", path, err)
	}
	return r, nil
}

// hasCommitRef reports whether any ref but HEAD names an object: the
// repository has commits even though HEAD is on a branch without one.
func hasCommitRef(repo *git.Repository) bool {
	refs, err := repo.References()
	if err != nil {
		return false
	}
	found := false
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && strings.HasPrefix(ref.Name().String(), "refs/") {
			found = true
			return storer.ErrStop
		}
		return nil
	})
	return found
}

// openGoGit opens the repository containing dir with go-git, looking upward
// for .git and following a linked worktree's commondir.
//
// go-git refuses every repository extension it does not implement, also
// those that change nothing it reads here (refs, objects, HEAD, core.bare):
// worktreeConfig, which `git sparse-checkout` turns on, only adds a config
// file per worktree. Such a repository is opened again with those
// extensions hidden from go-git; any other extension still refuses.
func openGoGit(dir string) (*git.Repository, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err == nil || !(errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) || errors.Is(err, git.ErrUnknownExtension)) {
		return repo, err
	}
	top := workTreeAbove(dir)
	if top == "" {
		return nil, err
	}
	gitDir, commonDir, derr := gitDirs(top)
	if derr != nil {
		return nil, err
	}
	var common billy.Filesystem
	if commonDir != gitDir {
		common = osfs.New(commonDir)
	}
	st := filesystem.NewStorage(dotgit.NewRepositoryFilesystem(osfs.New(gitDir), common), cache.NewObjectLRUDefault())
	repo, oerr := git.Open(extensionsHidden{st}, osfs.New(top))
	if oerr != nil {
		return nil, oerr
	}
	return repo, nil
}

// workTreeAbove is dir or its nearest parent that holds a .git, as go-git
// looks for it; "" when there is none.
func workTreeAbove(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// ignoredExtensions are the repository extensions (lower case, as git
// compares them) that change nothing hub reads in-process.
var ignoredExtensions = map[string]bool{"worktreeconfig": true}

// extensionsHidden is a go-git storage whose config leaves out the
// extensions of ignoredExtensions, so go-git opens the repository to read
// it. hub never writes through go-git.
type extensionsHidden struct{ *filesystem.Storage }

func (s extensionsHidden) Config() (*config.Config, error) {
	cfg, err := s.Storage.Config()
	if err != nil || cfg.Raw == nil || !cfg.Raw.HasSection("extensions") {
		return cfg, err
	}
	sec := cfg.Raw.Section("extensions")
	keep := sec.Options[:0:0]
	for _, o := range sec.Options {
		if !ignoredExtensions[strings.ToLower(o.Key)] {
			keep = append(keep, o)
		}
	}
	sec.Options = keep
	if len(keep) == 0 {
		cfg.Raw.RemoveSection("extensions")
	}
	return cfg, nil
}

// insideGitDir reports whether dir or one of its parents looks like a git
// directory (HEAD, objects/ and refs/), as a bare repository does. go-git
// only looks for .git, so it reports a bare repository as no repository.
func insideGitDir(dir string) bool {
	for {
		if isGitDir(dir) {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

func isGitDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// gitDirs finds the git dir of the work tree at top (.git, or where a .git
// file points) and its common dir (where a commondir file points, else the
// git dir itself), both absolute with symlinks resolved.
func gitDirs(top string) (gitDir, commonDir string, err error) {
	dot := filepath.Join(top, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return "", "", err
	}
	gitDir = dot
	if !fi.IsDir() {
		b, err := os.ReadFile(dot)
		if err != nil {
			return "", "", err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return "", "", fmt.Errorf("%s has no gitdir: line", dot)
		}
		gitDir = resolveFrom(top, strings.TrimSpace(p))
	}
	if gitDir, err = realPath(gitDir); err != nil {
		return "", "", err
	}
	commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			commonDir = resolveFrom(gitDir, p)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if commonDir, err = realPath(commonDir); err != nil {
		return "", "", err
	}
	return gitDir, commonDir, nil
}

func resolveFrom(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

var fullHex = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

// shortHex matches an abbreviated commit SHA.
var shortHex = regexp.MustCompile(`^[0-9a-fA-F]{4,39}$`)

// Resolve resolves rev ("" means HEAD) to the full SHA of a commit,
// in-process: branches, tags (annotated ones peeled to their commit), short
// and full SHAs, and suffixes such as HEAD~1 or main^2. A rev that names no
// commit is an ErrUnknownRevision; one that names a tree or blob is an error
// too.
func (r *Repo) Resolve(rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	repo, err := openGoGit(r.Top)
	if err != nil {
		return "", fmt.Errorf("resolve %q in %s: %w", rev, r.Top, err)
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err == nil && shortHex.MatchString(rev) {
		// go-git picks one of several commits a short SHA may name; git
		// refuses an ambiguous one. Ask git, on this rare path only.
		out, gerr := Git(context.Background(), r.Top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
		if gerr != nil {
			return "", &hintError{fmt.Sprintf("revision %q in %s is ambiguous or unknown to git; pass more of the SHA", rev, r.Top), ErrUnknownRevision, gerr}
		}
		return strings.TrimSpace(string(out)), nil
	}
	if err == nil {
		return h.String(), nil
	}
	if rev == "HEAD" {
		if err := unbornHead(repo, r.Top); err != nil {
			return "", err
		}
	}
	if h, t, ok := peel(repo, rev); ok {
		if t == plumbing.CommitObject { // a tag of a tag, which go-git does not peel
			return h.String(), nil
		}
		return "", fmt.Errorf("revision %q in %s is a %s, not a commit; pass a branch, tag or commit", rev, r.Top, t)
	}
	return "", &hintError{fmt.Sprintf("unknown revision %q in %s; pass a branch, tag or commit that exists", rev, r.Top), ErrUnknownRevision, err}
}

// unbornHead is the error for a HEAD on a branch without commits (an
// orphan branch, in a repository that has commits elsewhere), naming a
// branch to pass as the base instead; nil when HEAD is not unborn.
func unbornHead(repo *git.Repository, top string) error {
	if _, err := repo.Head(); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil
	}
	branch := "HEAD"
	if ref, err := repo.Storer.Reference(plumbing.HEAD); err == nil && ref.Type() == plumbing.SymbolicReference {
		branch = ref.Target().Short()
	}
	var names []string
	if refs, err := repo.Branches(); err == nil {
		_ = refs.ForEach(func(ref *plumbing.Reference) error {
			names = append(names, ref.Name().Short())
			return nil
		})
	}
	example := ""
	for _, want := range []string{"main", "master"} {
		if slices.Contains(names, want) {
			example = want
			break
		}
	}
	if example == "" && len(names) > 0 {
		slices.Sort(names)
		example = names[0]
	}
	msg := fmt.Sprintf("%s is on branch %s, which has no commits yet; pass a base to start from", top, branch)
	if example != "" {
		msg += " (such as " + example + ")"
	}
	msg += ", or commit something on " + branch + " first"
	return &hintError{msg, ErrNoCommits, nil}
}

// peel finds the object rev names when rev is a full SHA or a ref, peeling
// tags, so that a rev naming a tree or blob gets a better message than
// "unknown" and a tag of a tag still finds its commit.
func peel(repo *git.Repository, rev string) (plumbing.Hash, plumbing.ObjectType, bool) {
	var h plumbing.Hash
	switch {
	case fullHex.MatchString(rev):
		h = plumbing.NewHash(rev)
	default:
		found := false
		for _, name := range []string{rev, "refs/" + rev, "refs/tags/" + rev, "refs/heads/" + rev, "refs/remotes/" + rev, "refs/remotes/" + rev + "/HEAD"} {
			if ref, err := repo.Reference(plumbing.ReferenceName(name), true); err == nil {
				h, found = ref.Hash(), true
				break
			}
		}
		if !found {
			return h, plumbing.InvalidObject, false
		}
	}
	for range 10 { // a tag of a tag of ...
		obj, err := repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return h, plumbing.InvalidObject, false
		}
		if obj.Type() != plumbing.TagObject {
			return h, obj.Type(), true
		}
		tag, err := repo.TagObject(h)
		if err != nil {
			return h, plumbing.InvalidObject, false
		}
		h = tag.Target
	}
	return h, plumbing.InvalidObject, false
}

// BranchOf names the local branch rev stands for: the branch HEAD is on for
// "" or HEAD, the branch itself for a branch name (short or refs/heads/…),
// and "" for anything else (a tag, a commit, a detached HEAD). It reads
// in-process.
func (r *Repo) BranchOf(rev string) string {
	repo, err := openGoGit(r.Top)
	if err != nil {
		return ""
	}
	if rev == "" || rev == "HEAD" {
		ref, err := repo.Storer.Reference(plumbing.HEAD)
		if err != nil || ref.Type() != plumbing.SymbolicReference || !ref.Target().IsBranch() {
			return ""
		}
		return ref.Target().Short()
	}
	name := plumbing.ReferenceName(rev)
	if !name.IsBranch() {
		name = plumbing.NewBranchReferenceName(rev)
	}
	if _, err := repo.Storer.Reference(name); err != nil {
		return ""
	}
	return name.Short()
}
