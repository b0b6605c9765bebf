package gitx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
)

// The checks a job's start makes of the repository before anything is
// created, so that a repository hub cannot make a job's checkout or branch
// in is refused at once with what to do, rather than failing later in
// preparing with git's words.

// CheckBranchRoom reports whether branches named prefix/<name> can be
// created in r: git keeps a branch as a file under refs/heads (or a line of
// packed-refs), so a branch named prefix itself, or one named after any
// folder of prefix, leaves no room for branches below it. prefix is
// slash-separated with no refs/heads/ (hub's is "hub"). The error is an
// ErrBranchConflict that names the branch and says how to move it aside.
// It reads the refs in-process, loose and packed.
func (r *Repo) CheckBranchRoom(prefix string) error {
	repo, err := openGoGit(r.Top)
	if err != nil {
		return fmt.Errorf("read the branches of %s: %w", r.Top, err)
	}
	parts := strings.Split(strings.Trim(prefix, "/"), "/")
	for i := range parts {
		name := strings.Join(parts[:i+1], "/")
		if _, err := repo.Storer.Reference(plumbing.NewBranchReferenceName(name)); err == nil {
			return &hintError{fmt.Sprintf("%s has a branch named %q, which leaves no room for hub's job branches (%s/<id>): "+
				"git cannot hold a branch %s and branches under %s/ at once", r.Top, name, strings.Trim(prefix, "/"), name, name), ErrBranchConflict, nil}
		} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return fmt.Errorf("read branch %s of %s: %w", name, r.Top, err)
		}
	}
	return nil
}

// Writes says what of the repository a job will write.
type Writes struct {
	// Branch, when set, is the folder of the branches a job creates (hub's
	// is "hub", for hub/<id>): a write job, which also writes commits.
	Branch string
	// Worktree: a linked worktree is registered (the checkout of a job
	// whose worker runs unsandboxed).
	Worktree bool
}

// CheckWritable reports whether hub can write what w says into r's common
// dir: its objects/ (each loose-object folder and pack/ as well), refs/
// and logs/ for a branch, worktrees/ for a linked worktree. A folder that
// does not exist yet counts as its nearest existing parent, which git
// writes it into. It asks the kernel (access(2), as hub's user), so a
// read-only mount fails as well as a folder owned by someone else; nothing
// is written. The error is an ErrNotWritable that names the folder.
func (r *Repo) CheckWritable(w Writes) error {
	var dirs []string
	var what []string
	if w.Branch != "" {
		b := strings.Trim(w.Branch, "/")
		dirs = append(dirs, "objects", "objects/pack", "refs/heads/"+b, "logs/refs/heads/"+b)
		what = append(what, "commits", "branch")
	}
	if w.Worktree {
		dirs = append(dirs, "worktrees")
		what = append(what, "worktree entry")
	}
	purpose := strings.Join(what, " and ")
	if len(what) == 3 {
		purpose = "commits, branch and worktree entry"
	}
	seen := map[string]bool{}
	check := func(rel string) error {
		dir := nearestDir(r.CommonDir, filepath.Join(r.CommonDir, filepath.FromSlash(rel)))
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		if err := writable(dir); err != nil {
			return notWritable(r, dir, purpose, err)
		}
		return nil
	}
	for _, d := range dirs {
		if err := check(d); err != nil {
			return err
		}
	}
	if w.Branch == "" {
		return nil
	}
	// A commit's objects go into objects/<first two hex digits>/.
	ents, err := os.ReadDir(filepath.Join(r.CommonDir, "objects"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return notWritable(r, filepath.Join(r.CommonDir, "objects"), purpose, err)
	}
	for _, e := range ents {
		if e.IsDir() && looseDir.MatchString(e.Name()) {
			if err := check("objects/" + e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// nearestDir is dir, or its nearest parent that exists, no higher than top.
func nearestDir(top, dir string) string {
	for dir != top && len(dir) > len(top) {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		} else if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return dir // not a folder, or unreadable: writable says why
		}
		dir = filepath.Dir(dir)
	}
	return top
}

func notWritable(r *Repo, dir, purpose string, err error) error {
	why := err.Error()
	switch {
	case errors.Is(err, syscall.EROFS):
		why = "it is on a read-only file system"
	case errors.Is(err, syscall.EACCES), errors.Is(err, fs.ErrPermission):
		why = "permission denied: hub runs as you, and you cannot write there"
	}
	return &hintError{fmt.Sprintf("%s is not writable (%s); hub writes each job's %s into the repository's git dir %s",
		dir, why, purpose, r.CommonDir), ErrNotWritable, err}
}
