package tool

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

const (
	maxGrepFileSize = 16 << 20 // grep skips larger files
	maxGrepScanLine = 64 << 10 // bytes of one line grep matches against
)

// listDirArgs are list_dir's arguments.
type listDirArgs struct {
	Path  string `json:"path,omitempty" jsonschema:"Directory, relative to the worktree root (default: the root)."`
	Depth int64  `json:"depth,omitempty" jsonschema:"Levels to show (default 2)."`
}

// globArgs are glob's arguments.
type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"Glob relative to the worktree root."`
}

// grepArgs are grep's arguments. max_results's description names
// defaultGrepMax.
type grepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"Go (RE2) regular expression."`
	Path       string `json:"path,omitempty" jsonschema:"File or directory to search, relative to the worktree root (default: the root)."`
	Include    string `json:"include,omitempty" jsonschema:"Only files matching this glob, e.g. \"*.go\" (a name) or \"src/**/*.ts\" (a path)."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"Match case-insensitively."`
	MaxResults int64  `json:"max_results,omitempty" jsonschema:"Most matching lines to show (default 100)."`
}

// stat stats rel (from resolve), with errors that say what to do.
func (w *Workspace) stat(root *os.Root, path, rel string) (fs.FileInfo, error) {
	fi, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%q does not exist; use list_dir or glob to find the right path", path)
		}
		return nil, fmt.Errorf("cannot read %q: %v", path, errors.Unwrap(err))
	}
	return fi, nil
}

func (w *Workspace) listDir(ctx context.Context, a listDirArgs) (string, error) {
	path := a.Path
	depth := int(cmp.Or(a.Depth, 2))
	root, rel, err := w.openRoot(path, w.resolve)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := w.stat(root, path, rel)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%q is a file, not a directory; use read_file to read it", path)
	}
	var out strings.Builder
	n, capped := 0, false
	err = walk(ctx, root, rel, depth, func(e entry) error {
		if n == maxListEntries {
			capped = true
			return fs.SkipAll
		}
		n++
		out.WriteString(strings.Repeat("  ", e.depth-1))
		out.WriteString(e.name)
		switch {
		case e.link:
			if target, err := root.Readlink(e.rel); err == nil {
				out.WriteString(" -> " + target)
			}
		case e.dir:
			out.WriteByte('/')
		}
		out.WriteByte('\n')
		return nil
	})
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "(empty directory, or only ignored entries)", nil
	}
	if capped {
		fmt.Fprintf(&out, "[listing capped at %d entries; list a subdirectory or use a smaller depth]", maxListEntries)
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

func (w *Workspace) glob(ctx context.Context, a globArgs) (string, error) {
	pattern := a.Pattern
	if strings.IndexByte(pattern, 0) >= 0 {
		return "", fmt.Errorf("pattern %q contains a NUL byte; give it as plain text", pattern)
	}
	p := pattern
	if filepath.IsAbs(p) {
		r, ok := w.rel(filepath.Clean(p))
		if !ok {
			return "", fmt.Errorf("pattern %q is outside the worktree; use a pattern relative to the worktree root", pattern)
		}
		p = r
	}
	g, err := compileGlob(p)
	if err != nil {
		return "", err
	}
	base := g.base()
	root, start, err := w.openRoot(base, w.resolve)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if fi, err := root.Stat(start); err != nil || !fi.IsDir() {
		return fmt.Sprintf("no files match %q", pattern), nil
	}
	var found []string
	err = walk(ctx, root, start, 0, func(e entry) error {
		shown := joinRel(base, e.sub)
		if e.dir {
			if !g.mayMatchUnder(shown) {
				return fs.SkipDir
			}
			return nil
		}
		if g.match(shown) {
			found = append(found, shown)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		return fmt.Sprintf("no files match %q", pattern), nil
	}
	sort.Strings(found)
	more := len(found) - maxGlobResults
	if more > 0 {
		found = found[:maxGlobResults]
	}
	out := strings.Join(found, "\n")
	if more > 0 {
		out += fmt.Sprintf("\n[%d more files not shown; narrow the pattern]", more)
	}
	return out, nil
}

func (w *Workspace) grep(ctx context.Context, a grepArgs) (string, error) {
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("invalid regular expression: %v; it is Go RE2 syntax: escape literal ( ) [ ] { } . * + ? | with a backslash", errors.Unwrap(err))
	}
	var include *globPattern
	if inc := a.Include; inc != "" {
		if include, err = compileGlob(inc); err != nil {
			return "", fmt.Errorf("include: %v", err)
		}
	}
	max := int(cmp.Or(a.MaxResults, defaultGrepMax))
	path := a.Path
	root, rel, err := w.openRoot(path, w.resolve)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := w.stat(root, path, rel)
	if err != nil {
		return "", err
	}

	g := &grepper{re: re, max: max, root: root}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("%q is not a regular file", path)
		}
		if err := g.file(rel); err != nil {
			return "", err
		}
	} else {
		err = walk(ctx, root, rel, 0, func(e entry) error {
			if !e.file {
				return nil // directories are walked; symlinks, FIFOs and devices skipped
			}
			if include != nil {
				if include.oneElement() && !include.matchBase(e.rel) || !include.oneElement() && !include.match(e.rel) {
					return nil
				}
			}
			if err := g.file(e.rel); err != nil {
				return err
			}
			if g.capped {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	var notes []string
	if g.capped {
		notes = append(notes, fmt.Sprintf("[stopped at %d matches; narrow the pattern, path or include, or raise max_results (at most %d)]", max, maxGrepMax))
	}
	if g.binary > 0 && !fi.IsDir() {
		notes = append(notes, fmt.Sprintf("[%q is a binary file; not searched]", path))
	}
	if g.large > 0 {
		notes = append(notes, fmt.Sprintf("[%d files over %d MiB not searched; use run_shell for those]", g.large, maxGrepFileSize>>20))
	}
	out := g.out.String()
	if g.n == 0 {
		out = "no matches\n"
	}
	return strings.TrimSuffix(out+strings.Join(notes, "\n"), "\n"), nil
}

type grepper struct {
	re     *regexp.Regexp
	max    int
	root   *os.Root
	out    strings.Builder
	n      int // matching lines shown
	capped bool
	binary int // files skipped as binary
	large  int // files skipped as too large
	buf    []byte
}

// file searches one file (rel, not a symlink: the walk does not follow them
// and resolve has resolved them).
func (g *grepper) file(rel string) error {
	f, err := g.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0) // never blocks on a FIFO
	if err != nil {
		return nil // vanished or unreadable: skip it
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	} else if fi.Size() > maxGrepFileSize {
		g.large++
		return nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binarySniff); isBinary(head) {
		g.binary++
		return nil
	}
	for n := 1; ; n++ {
		line, full, err := readLine(br, maxGrepScanLine, g.buf)
		g.buf = line
		if err != nil && err != io.EOF {
			return nil
		}
		if err == io.EOF && full == 0 {
			return nil
		}
		if g.re.Match(line) {
			if g.n == g.max {
				g.capped = true
				return nil
			}
			g.n++
			text := strings.TrimSuffix(string(line), "\r")
			fmt.Fprintf(&g.out, "%s:%d: %s\n", rel, n, clip(text, maxGrepLineLen))
		}
		if err == io.EOF {
			return nil
		}
	}
}
