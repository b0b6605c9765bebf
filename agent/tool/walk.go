package tool

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// entry is one file or directory met by a walk.
type entry struct {
	rel   string // slash-separated, relative to the root
	sub   string // slash-separated, relative to the walk's start
	name  string
	depth int // 1 for the entries of the start directory
	dir   bool
	link  bool // a symlink, never followed by a walk
	file  bool // a regular file (not a FIFO, socket or device)
}

// walk calls fn for every entry under the directory start (relative to the
// root), depth first, each directory's entries in name order, down to
// maxDepth levels (0: no limit). It skips every ".git" and, unless start
// itself is ignored (the model asked for it by name), what .gitignore files
// (at the root, in start's parents and below) and .git/info/exclude ignore.
// Symlinks are reported but never followed. fn may return fs.SkipDir for a
// directory, or fs.SkipAll to stop.
func walk(ctx context.Context, root *os.Root, start string, maxDepth int, fn func(entry) error) error {
	ps, ignoring := ignoreFor(root, start)
	err := walkDir(ctx, root, start, "", 1, maxDepth, ps, ignoring, fn)
	if err == fs.SkipAll {
		return nil
	}
	return err
}

func walkDir(ctx context.Context, root *os.Root, dir, sub string, depth, maxDepth int, ps []gitignore.Pattern, ignoring bool, fn func(entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil // vanished or unreadable: nothing to report
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	m := gitignore.NewMatcher(ps)
	for _, d := range ents {
		name := d.Name()
		if name == ".git" {
			continue
		}
		e := entry{
			rel:   joinRel(dir, name),
			sub:   joinRel(sub, name),
			name:  name,
			depth: depth,
			dir:   d.IsDir(),
			link:  d.Type()&fs.ModeSymlink != 0,
			file:  d.Type().IsRegular(),
		}
		if ignoring && m.Match(strings.Split(e.rel, "/"), e.dir) {
			continue
		}
		switch err := fn(e); err {
		case nil:
		case fs.SkipDir:
			continue
		default:
			return err
		}
		if e.dir && (maxDepth == 0 || depth < maxDepth) {
			childPs := ps
			if ignoring {
				childPs = withIgnoreFile(root, e.rel, ps)
			}
			if err := walkDir(ctx, root, e.rel, e.sub, depth+1, maxDepth, childPs, ignoring, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

// ignoreFor gathers the ignore patterns that apply in directory start:
// .git/info/exclude (when .git is a directory at the root), then the
// .gitignore files from the root down to start, in rising priority. ignoring
// is false when start or one of its parents is itself ignored.
func ignoreFor(root *os.Root, start string) (ps []gitignore.Pattern, ignoring bool) {
	if fi, err := root.Lstat(".git"); err == nil && fi.IsDir() {
		ps = append(ps, readIgnore(root, ".git/info/exclude", nil)...)
	}
	ps = withIgnoreFile(root, ".", ps)
	if start == "." || start == "" {
		return ps, true
	}
	elems := strings.Split(start, "/")
	for i := range elems {
		if gitignore.NewMatcher(ps).Match(elems[:i+1], true) {
			return nil, false
		}
		ps = withIgnoreFile(root, strings.Join(elems[:i+1], "/"), ps)
	}
	return ps, true
}

// withIgnoreFile returns ps followed by the patterns of dir/.gitignore,
// never changing ps's backing array.
func withIgnoreFile(root *os.Root, dir string, ps []gitignore.Pattern) []gitignore.Pattern {
	var domain []string
	if dir != "." && dir != "" {
		domain = strings.Split(dir, "/")
	}
	more := readIgnore(root, path.Join(dir, ".gitignore"), domain)
	if len(more) == 0 {
		return ps
	}
	return append(ps[:len(ps):len(ps)], more...)
}

func readIgnore(root *os.Root, name string, domain []string) []gitignore.Pattern {
	data, err := root.ReadFile(name)
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// isBinary reports whether head (a file's first bytes) looks binary.
func isBinary(head []byte) bool {
	return bytes.IndexByte(head[:min(len(head), binarySniff)], 0) >= 0
}
