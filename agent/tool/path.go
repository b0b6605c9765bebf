package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel does.
const maxLinks = 40

// Resolve applies the confinement rule to path as a model gave it and returns
// the absolute path it names, symlinks resolved. The path is taken relative
// to the root; an absolute path is accepted only when it resolves inside the
// root. ".." is cleaned lexically first, then the symlinks of the longest
// existing prefix are resolved (a final symlink too, even a dangling one, so
// a file about to be created is checked where it would really be created).
// The result must be the root or lie under it. A symlink inside the worktree
// that points inside it is fine. Paths with a NUL byte are refused.
//
// An empty path means the root. Resolve does not refuse .git: the tools that
// write do that on top of it.
func (w *Workspace) Resolve(path string) (string, error) {
	abs, _, err := w.resolve(path)
	return abs, err
}

// resolve is Resolve that also returns the path relative to the root
// ("." for the root itself), for use with an [os.Root].
func (w *Workspace) resolve(path string) (abs, rel string, err error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", "", fmt.Errorf("path %q contains a NUL byte; give the path as plain text", path)
	}
	p := path
	if p == "" {
		p = "."
	}
	var lexical string
	if filepath.IsAbs(p) {
		lexical = filepath.Clean(p)
	} else {
		lexical = filepath.Join(w.root, p)
		if _, ok := w.rel(lexical); !ok {
			return "", "", outside(path)
		}
	}
	var real string
	if r, ok := w.rel(lexical); ok {
		real, err = followLinks(w.root, splitPath(r))
	} else {
		real, err = followLinks("/", splitPath(lexical))
	}
	if err != nil {
		return "", "", fmt.Errorf("path %q: %v", path, err)
	}
	rel, ok := w.rel(real)
	if !ok {
		if _, lexOK := w.rel(lexical); lexOK {
			return "", "", fmt.Errorf("path %q leads outside the worktree through a symlink; use a path inside the worktree that does not go through that link", path)
		}
		return "", "", outside(path)
	}
	return real, rel, nil
}

func outside(path string) error {
	return fmt.Errorf("path %q is outside the worktree; use a path relative to the worktree root", path)
}

// resolveWrite is resolve for a path about to be written: never the root
// itself, never in .git (at the root or in a nested repository).
func (w *Workspace) resolveWrite(path string) (abs, rel string, err error) {
	// Checked on the path as given too: in a linked worktree .git is a file,
	// and ".git/config" would otherwise fail with a puzzling "not a directory".
	lexical := filepath.Clean(path)
	if filepath.IsAbs(lexical) {
		lexical, _ = w.rel(lexical)
	}
	if inGit(filepath.ToSlash(lexical)) {
		return "", "", gitRefused(path)
	}
	abs, rel, err = w.resolve(path)
	if err != nil {
		return "", "", err
	}
	if rel == "." {
		return "", "", fmt.Errorf("path %q is the worktree root, a directory; give a file path", path)
	}
	if inGit(rel) {
		return "", "", gitRefused(path)
	}
	return abs, rel, nil
}

func gitRefused(path string) error {
	return fmt.Errorf("path %q is inside .git, which the hub manages; change files in the worktree only (the hub commits your work)", path)
}

// inGit reports whether a slash-separated path has a ".git" element.
func inGit(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".git" {
			return true
		}
	}
	return false
}

// rel returns p relative to the root, and whether p is the root or under it.
func (w *Workspace) rel(p string) (string, bool) {
	if p == w.root {
		return ".", true
	}
	prefix := w.root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if strings.HasPrefix(p, prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// followLinks walks the elements of rest from base (a real directory),
// resolving each symlink it meets, as the kernel would. Once an element does
// not exist, the rest is joined lexically.
func followLinks(base string, rest []string) (string, error) {
	cur := base
	links := 0
	for len(rest) > 0 {
		e := rest[0]
		rest = rest[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, e)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			if slices.Contains(rest, "..") {
				// Joined lexically, ".." would climb back out of what does not
				// exist, past any symlink; the kernel refuses it too.
				return "", fmt.Errorf("%s does not exist, so a later \"..\" cannot be followed", e)
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", errors.Unwrap(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", errors.New("too many levels of symbolic links")
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", errors.Unwrap(err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() && hasElems(rest) {
			return "", fmt.Errorf("%s is not a directory", e)
		}
		cur = next
	}
	return cur, nil
}

// hasElems reports whether rest names anything beyond "" and ".".
func hasElems(rest []string) bool {
	for _, e := range rest {
		if e != "" && e != "." {
			return true
		}
	}
	return false
}

// openRoot resolves path with resolve (w.resolve, or w.resolveWrite to
// write) and opens the worktree as an os.Root, every access through which
// stays inside it; rel is path in it. The caller closes the root.
func (w *Workspace) openRoot(path string, resolve func(string) (string, string, error)) (root *os.Root, rel string, err error) {
	if _, rel, err = resolve(path); err != nil {
		return nil, "", err
	}
	if root, err = os.OpenRoot(w.root); err != nil {
		return nil, "", err
	}
	return root, rel, nil
}
