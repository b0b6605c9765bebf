// Package deps makes a job's worktree ready to build and test without
// configuration: it recognises a project's dependency manager by the
// lockfile at the job's base commit and puts the installed tree that
// lockfile describes into the worktree before the worker starts. Today its
// one source is the user's own checkout, when its lockfile and manifest are
// the base's byte for byte (npm, pnpm, yarn and bun keep the tree in
// node_modules).
//
// It must never put in a tree the base does not pin (a lockfile that
// differs describes another tree), write into the user's checkout, or
// leave a link through which a write in the worktree reaches the user's
// files: files are copied, never hard-linked, and a symlink that points
// into the user's checkout is pointed at the worktree's copy instead.
package deps

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
)

// node is how a Node project is recognised: its lockfiles, each naming its
// manager, in the order they are looked for.
var nodeLocks = []struct{ file, manager string }{
	{"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"}, {"pnpm-lock.yaml", "pnpm"},
	{"yarn.lock", "yarn"}, {"bun.lock", "bun"}, {"bun.lockb", "bun"},
}

// maxManifest bounds the manifests and lockfiles read (a lockfile of a
// large monorepo runs to a few MiB).
const maxManifest = 64 << 20

// Outcome is what Ready did for one dependency tree.
type Outcome struct {
	Manager  string // npm, pnpm, yarn, bun
	Lockfile string // the lockfile that pins the tree, at the base
	Dir      string // the tree, from the top: node_modules
	// Source is where the tree came from ("your checkout"); empty when
	// nothing was put in, and then Skipped says why.
	Source  string
	Skipped string
	Files   int           // files and links copied
	Paths   []string      // what was put in, from the top (for Commit to leave out)
	Took    time.Duration // copying
}

// Line is the journal's sentence for it.
func (o Outcome) Line() string {
	if o.Source == "" {
		return fmt.Sprintf("dependencies: %s (%s, %s) not made ready: %s", o.Dir, o.Manager, o.Lockfile, o.Skipped)
	}
	return fmt.Sprintf("dependencies: %s (%s, %s) copied from %s, whose %s is the base's: %d files in %s",
		o.Dir, o.Manager, o.Lockfile, o.Source, o.Lockfile, o.Files, o.Took.Round(time.Millisecond))
}

// Ready puts the dependency trees the base commit pins into worktree, a
// checkout of base. It returns nothing for a project it does not
// recognise; an error only when copying failed partway (what was copied
// is then left for the caller to remove with the worktree).
func Ready(r *gitx.Repo, base, worktree string) ([]Outcome, error) {
	read := func(path string) ([]byte, bool, error) {
		b, _, ok, err := gitx.ReadFile(r, base, path, maxManifest)
		return b, ok, err
	}
	manifest, ok, err := read("package.json")
	if err != nil || !ok {
		return nil, err
	}
	o := Outcome{Dir: "node_modules"}
	var lock []byte
	for _, l := range nodeLocks {
		if b, ok, err := read(l.file); err != nil {
			return nil, err
		} else if ok {
			o.Manager, o.Lockfile, lock = l.manager, l.file, b
			break
		}
	}
	if o.Lockfile == "" {
		o.Manager, o.Lockfile = "npm", "no lockfile"
		o.Skipped = "the base has package.json but no lockfile, so no installed tree is known to be the base's"
		return []Outcome{o}, nil
	}
	for _, f := range []struct {
		name string
		base []byte
	}{{"package.json", manifest}, {o.Lockfile, lock}} {
		if why := differs(r.Top, f.name, f.base); why != "" {
			o.Skipped = why
			return []Outcome{o}, nil
		}
	}
	src := filepath.Join(r.Top, o.Dir)
	if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
		o.Skipped = "your checkout has no node_modules folder (install there once, and every job gets a copy)"
		return []Outcome{o}, nil
	}
	dst := filepath.Join(worktree, o.Dir)
	if _, err := os.Lstat(dst); err == nil || !errors.Is(err, fs.ErrNotExist) {
		o.Skipped = "the worktree has a node_modules already"
		return []Outcome{o}, nil
	}
	t0 := time.Now()
	paths, err := copyTree(r.Top, worktree, o.Dir)
	o.Took, o.Files, o.Paths = time.Since(t0), len(paths), paths
	if err != nil {
		return []Outcome{o}, fmt.Errorf("copy %s from %s: %w", o.Dir, r.Top, err)
	}
	o.Source = "your checkout"
	return []Outcome{o}, nil
}

// differs says why the user's checkout's file name is not want, the
// base's, byte for byte ("" when it is).
func differs(top, name string, want []byte) string {
	b, err := readRegular(filepath.Join(top, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return name + " is not in your checkout"
	case err != nil:
		return "cannot read " + name + " in your checkout: " + err.Error()
	case !bytes.Equal(b, want):
		return name + " in your checkout differs from the base's, so its node_modules is not the base's (a job installs nothing itself yet)"
	}
	return ""
}

// readRegular reads a regular file (not through a symlink), up to maxManifest.
func readRegular(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > maxManifest {
		return nil, fmt.Errorf("%s is over %d MiB", p, maxManifest>>20)
	}
	return os.ReadFile(p)
}

// copyTree copies top/dir to into/dir as it is: folders with their modes,
// regular files copied (never linked), symlinks recreated. A symlink that
// resolves inside top points at the same place inside into (relative links
// stay as they are; absolute ones are rewritten); one that resolves
// outside top keeps pointing there, absolutely. Other kinds of file are
// left out. It returns the slash-separated paths it made, files and links.
func copyTree(top, into, dir string) ([]string, error) {
	var made []string
	root := filepath.Join(top, dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(into, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm()|0o200) // the worker may install more into it
		case info.Mode().IsRegular():
			made = append(made, filepath.ToSlash(rel))
			return gitx.CopyNewFile(p, dst, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			made = append(made, filepath.ToSlash(rel))
			return os.Symlink(relink(top, into, p, target), dst)
		}
		return nil // a socket, a device, a fifo: nothing a build reads
	})
	return made, err
}

// relink is the target a copy of the symlink at p (in top) pointing at
// target gets in into.
func relink(top, into, p, target string) string {
	abs := target
	if !filepath.IsAbs(target) {
		abs = filepath.Join(filepath.Dir(p), target)
	}
	rel, err := filepath.Rel(top, abs)
	inside := err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	switch {
	case inside && !filepath.IsAbs(target):
		return target // resolves to the same place inside into
	case inside:
		return filepath.Join(into, rel)
	}
	return abs // outside the checkout: the same place, named absolutely
}
