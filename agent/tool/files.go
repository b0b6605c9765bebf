package tool

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// readFileArgs are read_file's arguments.
type readFileArgs struct {
	Path      string `json:"path" jsonschema:"File path, relative to the worktree root."`
	StartLine int64  `json:"start_line,omitempty" jsonschema:"First line to show (default 1)."`
	EndLine   int64  `json:"end_line,omitempty" jsonschema:"Last line to show (default: the end, as far as fits)."`
}

// writeFileArgs are write_file's arguments.
type writeFileArgs struct {
	Path    string `json:"path" jsonschema:"File path, relative to the worktree root."`
	Content string `json:"content" jsonschema:"The whole new content of the file."`
}

// editFileArgs are edit_file's arguments.
type editFileArgs struct {
	Path       string `json:"path" jsonschema:"File path, relative to the worktree root."`
	OldText    string `json:"old_text" jsonschema:"Exact text to replace, without line-number prefixes."`
	NewText    string `json:"new_text" jsonschema:"Text to put in its place."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence (default false)."`
}

// openFile opens rel (from resolve) for reading through an os.Root, with
// errors that say what to do.
// The type is checked before opening: opening a FIFO would block.
func (w *Workspace) openFile(root *os.Root, path, rel string) (*os.File, fs.FileInfo, error) {
	fi, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("file %q does not exist; use list_dir or glob to find the right path", path)
		}
		return nil, nil, fmt.Errorf("cannot open %q: %v", path, errors.Unwrap(err))
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%q is a directory; use list_dir to see what it holds", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%q is not a regular file (%v); only regular files can be read or edited", path, fi.Mode().Type())
	}
	// O_NONBLOCK in case a FIFO was swapped in meanwhile; it changes nothing
	// for a regular file.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open %q: %v", path, errors.Unwrap(err))
	}
	return f, fi, nil
}

func binaryErr(path string, size int64) error {
	return fmt.Errorf("%q is a binary file (%d bytes); only text files can be read or edited here (run_shell can inspect it, e.g. with od or file)", path, size)
}

func (w *Workspace) readFile(ctx context.Context, a readFileArgs) (string, error) {
	path := a.Path
	start := cmp.Or(a.StartLine, 1)
	end := a.EndLine // 0: no end
	if end != 0 && end < start {
		return "", fmt.Errorf("end_line %d is before start_line %d; give a range with start_line <= end_line", end, start)
	}
	root, rel, err := w.openRoot(path, w.resolve)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, fi, err := w.openFile(root, path, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return "", binaryErr(path, fi.Size())
	}
	if fi.Size() == 0 {
		return fmt.Sprintf("(%s is empty)", path), nil
	}

	var out strings.Builder
	var n, from, to int64 // line number; first and last line shown
	capped, crlf := false, false
	var buf []byte
	for {
		line, full, err := readLine(br, maxLineLen, buf)
		buf = line
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("reading %q: %v", path, err)
		}
		if err == io.EOF && full == 0 {
			break // the file ended with a newline
		}
		n++
		if n >= start && (end == 0 || n <= end) && !capped {
			if full == len(line) && bytes.HasSuffix(line, []byte("\r")) {
				line = line[:len(line)-1]
				full--
				crlf = true
			}
			entry := fmt.Sprintf("%4d| %s", n, line)
			if full > len(line) {
				entry += fmt.Sprintf(" [… line cut: %d more bytes]", full-len(line))
			}
			if to != 0 && out.Len()+len(entry)+1 > w.opt.MaxRead {
				capped = true
			} else {
				out.WriteString(entry)
				out.WriteByte('\n')
				if from == 0 {
					from = n
				}
				to = n
			}
		}
		if err == io.EOF {
			break
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if from == 0 {
		return "", fmt.Errorf("start_line %d is past the end: %q has %d lines", start, path, n)
	}
	if crlf {
		out.WriteString("[the file has CRLF line endings, not shown; edit_file keeps them]\n")
	}
	switch {
	case capped:
		fmt.Fprintf(&out, "[output capped at %d bytes: showed lines %d-%d of %d; read on with start_line=%d]", w.opt.MaxRead, from, to, n, to+1)
	case from != 1 || to != n:
		fmt.Fprintf(&out, "[showed lines %d-%d of %d]", from, to, n)
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// readLine reads one line from r, without its "\n", keeping at most max bytes
// of it (appended to keep[:0]); full is the whole line's length. err is
// io.EOF when the line is the last one, with full == 0 if there was no such
// line (the input ended with "\n" or was empty).
func readLine(r *bufio.Reader, max int, keep []byte) (line []byte, full int, err error) {
	line = keep[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		full += len(chunk)
		if room := max - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			full--
			return line[:min(len(line), full)], full, nil
		default:
			return line, full, err
		}
	}
}

func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func (w *Workspace) writeFile(ctx context.Context, a writeFileArgs) (string, error) {
	path, content := a.Path, a.Content
	root, rel, err := w.openRoot(path, w.resolveWrite)
	if err != nil {
		return "", err
	}
	defer root.Close()
	existed, err := writeAtomic(root, path, rel, []byte(content))
	if err != nil {
		return "", err
	}
	what := "new file"
	if existed {
		what = "replaced the old content"
	}
	return fmt.Sprintf("wrote %s (%s) to %s (%s)", plural(len(content), "byte"), plural(countLines(content), "line"), filepath.ToSlash(rel), what), nil
}

// writeAtomic writes data to rel through root: into a temporary file in the
// same directory, then renamed over rel, so a reader never sees half a file
// and a final symlink swapped in meanwhile is replaced, not followed. An
// existing file keeps its mode; missing parents are created.
func writeAtomic(root *os.Root, path, rel string, data []byte) (existed bool, err error) {
	var mode fs.FileMode
	fi, err := root.Lstat(rel)
	switch {
	case err == nil:
		if fi.IsDir() {
			return false, fmt.Errorf("%q is a directory; give a file path", path)
		}
		if !fi.Mode().IsRegular() {
			return false, fmt.Errorf("%q is not a regular file (%v); it cannot be written here", path, fi.Mode().Type())
		}
		existed = true
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o777); err != nil {
				return false, fmt.Errorf("cannot create the directories of %q: %v (is a parent a file?)", path, errors.Unwrap(err))
			}
		}
	default:
		return false, fmt.Errorf("cannot write %q: %v", path, errors.Unwrap(err))
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".hub-"+rand.Text()[:10]+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return false, fmt.Errorf("cannot write %q: %v", path, errors.Unwrap(err))
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && existed {
		err = root.Chmod(tmp, mode)
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		return false, fmt.Errorf("cannot write %q: %v", path, err)
	}
	return existed, nil
}

// lineNumbered matches text copied with read_file's line-number prefixes.
var lineNumbered = regexp.MustCompile(`(?m)^ *\d+\| `)

func (w *Workspace) editFile(ctx context.Context, a editFileArgs) (string, error) {
	path, oldText, newText := a.Path, a.OldText, a.NewText
	if oldText == "" {
		return "", errors.New("old_text is empty; give the exact text to replace (read_file shows it), or use write_file to write a whole file")
	}
	if oldText == newText {
		return "", errors.New("old_text and new_text are the same; nothing would change")
	}
	root, rel, err := w.openRoot(path, w.resolveWrite)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if !exists(root, rel) {
		return "", fmt.Errorf("file %q does not exist; use write_file to create it, or glob to find the right path", path)
	}
	f, fi, err := w.openFile(root, path, rel)
	if err != nil {
		return "", err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("reading %q: %v", path, err)
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return "", binaryErr(path, fi.Size())
	}
	text := string(data)
	n := strings.Count(text, oldText)
	if n == 0 && strings.Contains(text, "\r\n") && !strings.Contains(oldText, "\r") {
		// The file has CRLF line endings; the model wrote LF.
		crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
		if m := strings.Count(text, crlf); m > 0 {
			oldText, newText, n = crlf, strings.ReplaceAll(newText, "\n", "\r\n"), m
		}
	}
	switch {
	case n == 0:
		hint := "read the file again with read_file and copy the text exactly: whitespace and indentation matter"
		if lineNumbered.MatchString(oldText) {
			hint = `leave out the line-number prefixes ("  12| ") that read_file adds`
		}
		return "", fmt.Errorf("%s: old_text found 0 times; %s", path, hint)
	case n > 1 && !a.ReplaceAll:
		return "", fmt.Errorf("%s: old_text found %d times; include more context to make it unique, or set replace_all to replace every one", path, n)
	}
	line := 1 + strings.Count(text[:strings.Index(text, oldText)], "\n")
	if a.ReplaceAll {
		text = strings.ReplaceAll(text, oldText, newText)
	} else {
		text = strings.Replace(text, oldText, newText, 1)
	}
	if _, err := writeAtomic(root, path, rel, []byte(text)); err != nil {
		return "", err
	}
	if n == 1 {
		return fmt.Sprintf("replaced 1 occurrence in %s at line %d", filepath.ToSlash(rel), line), nil
	}
	return fmt.Sprintf("replaced %d occurrences in %s (the first at line %d)", n, filepath.ToSlash(rel), line), nil
}

func exists(root *os.Root, rel string) bool {
	_, err := root.Lstat(rel)
	return err == nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
