//go:build unix

package tool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFileRanges(t *testing.T) {
	f := newFixture(t, nil)
	put(t, filepath.Join(f.root, "ten.txt"), numbered(1, 10))
	put(t, filepath.Join(f.root, "nonl.txt"), "one\ntwo")
	put(t, filepath.Join(f.root, "empty.txt"), "")
	cases := []struct {
		args obj
		want string
	}{
		{obj{"path": "nonl.txt"}, "   1| one\n   2| two"},
		{obj{"path": "ten.txt", "start_line": 9}, "   9| line 9\n  10| line 10\n[showed lines 9-10 of 10]"},
		{obj{"path": "ten.txt", "start_line": 2, "end_line": 3}, "   2| line 2\n   3| line 3\n[showed lines 2-3 of 10]"},
		{obj{"path": "ten.txt", "end_line": 1}, "   1| line 1\n[showed lines 1-1 of 10]"},
		{obj{"path": "ten.txt", "start_line": 10, "end_line": 99}, "  10| line 10\n[showed lines 10-10 of 10]"},
		{obj{"path": "ten.txt", "start_line": 1, "end_line": 10}, strings.TrimSuffix(lineNumberedText(1, 10), "\n")},
		{obj{"path": "empty.txt"}, "(empty.txt is empty)"},
	}
	for _, c := range cases {
		got, err := call(t, f.w, "read_file", c.args)
		if err != nil {
			t.Errorf("read_file %v: %v", c.args, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("read_file %v (-want +got):\n%s", c.args, diff)
		}
	}
	_, err := call(t, f.w, "read_file", obj{"path": "ten.txt", "start_line": 11})
	wantErr(t, err, "start_line 11 is past the end", "has 10 lines")
	_, err = call(t, f.w, "read_file", obj{"path": "ten.txt", "start_line": 5, "end_line": 4})
	wantErr(t, err, "end_line 4 is before start_line 5")
	_, err = call(t, f.w, "read_file", obj{"path": "missing.txt"})
	wantErr(t, err, "does not exist", "list_dir or glob")
	_, err = call(t, f.w, "read_file", obj{"path": "sub"})
	wantErr(t, err, "is a directory", "list_dir")
}

func lineNumberedText(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%4d| line %d\n", i, i)
	}
	return b.String()
}

func TestReadFileCap(t *testing.T) {
	f := newFixture(t, &Options{MaxRead: 200})
	put(t, filepath.Join(f.root, "long.txt"), numbered(1, 100))
	got := mustCall(t, f.w, "read_file", obj{"path": "long.txt"})
	// Each shown line is "   n| line n\n": 13 bytes for n < 10, 14 for n >= 10.
	want := lineNumberedText(1, 14) + "[output capped at 200 bytes: showed lines 1-14 of 100; read on with start_line=15]"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capped read (-want +got):\n%s", diff)
	}
	got = mustCall(t, f.w, "read_file", obj{"path": "long.txt", "start_line": 15})
	if !strings.HasPrefix(got, "  15| line 15\n") || !strings.HasSuffix(got, "showed lines 15-28 of 100; read on with start_line=29]") {
		t.Errorf("read on from 14:\n%s", got)
	}

	// A line longer than the per-line limit is cut with a note.
	f2 := newFixture(t, nil)
	put(t, filepath.Join(f2.root, "wide.txt"), strings.Repeat("x", maxLineLen+500)+"\nshort\n")
	got = mustCall(t, f2.w, "read_file", obj{"path": "wide.txt"})
	want = "   1| " + strings.Repeat("x", maxLineLen) + " [… line cut: 500 more bytes]\n   2| short"
	if got != want {
		t.Errorf("wide line: got %d bytes, want %d: %.80q…", len(got), len(want), got)
	}
}

func TestReadFileBinary(t *testing.T) {
	f := newFixture(t, nil)
	data := append([]byte("PNG\x00\x01\x02"), make([]byte, 1000)...)
	if err := os.WriteFile(filepath.Join(f.root, "img.png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, f.w, "read_file", obj{"path": "img.png"})
	wantErr(t, err, "binary file (1006 bytes)")
	_, err = call(t, f.w, "edit_file", obj{"path": "img.png", "old_text": "PNG", "new_text": "GIF"})
	wantErr(t, err, "binary file")
	// A NUL past the first 8 KiB does not make a file binary.
	late := strings.Repeat("a\n", binarySniff) + "\x00\n"
	put(t, filepath.Join(f.root, "late.txt"), late)
	if _, err := call(t, f.w, "read_file", obj{"path": "late.txt", "start_line": 1, "end_line": 1}); err != nil {
		t.Errorf("late NUL: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t, nil)
	got := mustCall(t, f.w, "write_file", obj{"path": "deep/er/new.go", "content": "package x\n\nfunc F() {}\n"})
	if got != "wrote 23 bytes (3 lines) to deep/er/new.go (new file)" {
		t.Errorf("write_file = %q", got)
	}
	if c := get(t, filepath.Join(f.root, "deep/er/new.go")); c != "package x\n\nfunc F() {}\n" {
		t.Errorf("content = %q", c)
	}

	script := filepath.Join(f.root, "run.sh")
	put(t, script, "old\n")
	if err := os.Chmod(script, 0o751); err != nil {
		t.Fatal(err)
	}
	got = mustCall(t, f.w, "write_file", obj{"path": "run.sh", "content": "#!/bin/sh\necho hi"})
	if got != "wrote 17 bytes (2 lines) to run.sh (replaced the old content)" {
		t.Errorf("write_file = %q", got)
	}
	fi, err := os.Stat(script)
	if err != nil || fi.Mode().Perm() != 0o751 {
		t.Errorf("mode after write = %v, %v; want 0751 kept", fi.Mode(), err)
	}
	if c := get(t, script); c != "#!/bin/sh\necho hi" {
		t.Errorf("content = %q", c)
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(f.root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".hub-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	got = mustCall(t, f.w, "write_file", obj{"path": "empty", "content": ""})
	if got != "wrote 0 bytes (0 lines) to empty (new file)" {
		t.Errorf("write_file empty = %q", got)
	}

	got = mustCall(t, f.w, "write_file", obj{"path": f.root + "/abs.txt", "content": "x"})
	if got != "wrote 1 byte (1 line) to abs.txt (new file)" {
		t.Errorf("write_file by absolute path = %q", got)
	}

	_, err = call(t, f.w, "write_file", obj{"path": "sub", "content": "x"})
	wantErr(t, err, "is a directory")
	_, err = call(t, f.w, "write_file", obj{"path": "sub/a.txt/x", "content": "x"})
	wantErr(t, err, "not a directory")
}

func TestEditFile(t *testing.T) {
	f := newFixture(t, nil)
	p := filepath.Join(f.root, "code.go")
	const orig = "a := 1\nb := 2\nb := 2\nc := 3\n"
	put(t, p, orig)

	_, err := call(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "d := 4", "new_text": "x"})
	wantErr(t, err, "found 0 times", "read the file again", "whitespace")
	_, err = call(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "   1| a := 1", "new_text": "x"})
	wantErr(t, err, "found 0 times", "line-number prefixes")
	_, err = call(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "b := 2", "new_text": "b := 20"})
	wantErr(t, err, "found 2 times; include more context", "replace_all")
	if got := get(t, p); got != orig {
		t.Fatalf("a refused edit changed the file: %q", got)
	}

	got := mustCall(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "c := 3", "new_text": "c := 30"})
	if got != "replaced 1 occurrence in code.go at line 4" {
		t.Errorf("edit = %q", got)
	}
	got = mustCall(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "b := 2", "new_text": "b := 20", "replace_all": true})
	if got != "replaced 2 occurrences in code.go (the first at line 2)" {
		t.Errorf("edit replace_all = %q", got)
	}
	if diff := cmp.Diff("a := 1\nb := 20\nb := 20\nc := 30\n", get(t, p)); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}

	// A file with CRLF line endings takes an old_text written with "\n".
	crlf := filepath.Join(f.root, "win.txt")
	put(t, crlf, "one\r\ntwo\r\nthree\r\n")
	mustCall(t, f.w, "edit_file", obj{"path": "win.txt", "old_text": "one\ntwo", "new_text": "1\n2"})
	if got := get(t, crlf); got != "1\r\n2\r\nthree\r\n" {
		t.Errorf("CRLF edit = %q", got)
	}

	_, err = call(t, f.w, "edit_file", obj{"path": "nope.go", "old_text": "a", "new_text": "b"})
	wantErr(t, err, "does not exist", "write_file")
	_, err = call(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "", "new_text": "b"})
	wantErr(t, err, "old_text is empty")
	_, err = call(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "a", "new_text": "a"})
	wantErr(t, err, "the same")

	// The mode survives an edit.
	if err := os.Chmod(p, 0o700); err != nil {
		t.Fatal(err)
	}
	mustCall(t, f.w, "edit_file", obj{"path": "code.go", "old_text": "a := 1", "new_text": "a := 10"})
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode after edit = %v", fi.Mode())
	}
}

func TestArgumentValidation(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		tool string
		args string
		want []string
	}{
		{"read_file", `{"path":"a","bogus":1}`, []string{`unknown argument "bogus"`, "the arguments are: path, start_line, end_line"}},
		{"read_file", `{}`, []string{`missing required argument "path"`}},
		{"read_file", ``, []string{`missing required argument "path"`}},
		{"read_file", `{"path":null}`, []string{`missing required argument "path"`}},
		{"read_file", `{"path":3}`, []string{`argument "path" must be a string, not 3`}},
		{"read_file", `{"path":"a","start_line":"5"}`, []string{`argument "start_line" must be an integer`}},
		{"read_file", `{"path":"a","start_line":1.5}`, []string{`"start_line" must be an integer`}},
		{"read_file", `{"path":"a","start_line":0}`, []string{`"start_line" is 0; it must be at least 1`}},
		{"read_file", `["a"]`, []string{"arguments must be a JSON object"}},
		{"read_file", `{"path":"a"`, []string{"arguments must be a JSON object"}},
		{"list_dir", `{"depth":6}`, []string{`"depth" is 6; it must be between 1 and 5`}},
		{"edit_file", `{"path":"a","old_text":"x","new_text":"y","replace_all":"yes"}`, []string{`"replace_all" must be a boolean`}},
		{"run_shell", `{"command":"true","timeout_s":601}`, []string{`"timeout_s" is 601; it must be between 1 and 600`}},
		{"grep", `{"pattern":"x","max_results":0}`, []string{`"max_results" is 0`}},
		{"glob", `{"pattern":"x","path":"y"}`, []string{`unknown argument "path"`, "the arguments are: pattern"}},
	}
	for _, c := range cases {
		_, err := call(t, f.w, c.tool, c.args)
		if err == nil {
			t.Errorf("%s %s: no error", c.tool, c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: error %q lacks %q", c.tool, c.args, err, w)
			}
		}
	}
	// An integer may come as 5.0; an optional argument may be null.
	if _, err := call(t, f.w, "read_file", `{"path":"sub/a.txt","start_line":1.0,"end_line":null}`); err != nil {
		t.Errorf("1.0 and null: %v", err)
	}
}

func TestToolsAndSchemas(t *testing.T) {
	f := newFixture(t, nil)
	tools := f.w.Tools()
	var names []string
	for _, tl := range tools {
		names = append(names, fmt.Sprintf("%s ro=%v", tl.Name, tl.ReadOnly))
		if tl.Description == "" || len(tl.Description) > 250 {
			t.Errorf("%s: description of %d bytes", tl.Name, len(tl.Description))
		}
		if tl.Parameters["type"] != "object" || tl.Parameters["additionalProperties"] != false {
			t.Errorf("%s: schema %v", tl.Name, tl.Parameters)
		}
		b, err := json.Marshal(tl.Parameters)
		if err != nil {
			t.Errorf("%s: schema does not marshal: %v", tl.Name, err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Error(err)
		}
		props := back["properties"].(map[string]any)
		req, _ := back["required"].([]any)
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: required %v is not a property", tl.Name, r)
			}
		}
	}
	want := []string{
		"read_file ro=true", "list_dir ro=true", "glob ro=true", "grep ro=true",
		"write_file ro=false", "edit_file ro=false", "run_shell ro=false",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(findTool(t, f.w, "edit_file").Parameters)
	const wantSchema = `{"additionalProperties":false,"properties":{"new_text":{"description":"Text to put in its place.","type":"string"},"old_text":{"description":"Exact text to replace, without line-number prefixes.","type":"string"},"path":{"description":"File path, relative to the worktree root.","type":"string"},"replace_all":{"description":"Replace every occurrence (default false).","type":"boolean"}},"required":["path","old_text","new_text"],"type":"object"}`
	if string(b) != wantSchema {
		t.Errorf("edit_file schema:\n%s", b)
	}
}

// A worktree may itself lie under a directory named .git (as linked
// worktrees sometimes do): only .git inside the worktree is refused.
func TestWorktreeUnderDotGit(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".git", "worktrees", "wt")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, w, "write_file", obj{"path": w.Root() + "/x.txt", "content": "x"})
	mustCall(t, w, "write_file", obj{"path": "y.txt", "content": "y"})
	_, err = call(t, w, "write_file", obj{"path": w.Root() + "/.git/config", "content": "x"})
	wantErr(t, err, "inside .git")
}

func TestReadFileCRLF(t *testing.T) {
	f := newFixture(t, nil)
	put(t, filepath.Join(f.root, "win.txt"), "one\r\ntwo\r\n")
	got := mustCall(t, f.w, "read_file", obj{"path": "win.txt"})
	if got != "   1| one\n   2| two\n[the file has CRLF line endings, not shown; edit_file keeps them]" {
		t.Errorf("read CRLF = %q", got)
	}
}

// FIFOs in the worktree neither block read_file nor grep.
func TestFIFOsDoNotBlock(t *testing.T) {
	w := newTree(t, map[string]string{"a.txt": "needle\n"})
	if err := syscall.Mkfifo(filepath.Join(w.Root(), "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 3)
	go func() {
		out, err := call(t, w, "read_file", obj{"path": "pipe"})
		done <- result{out, err}
	}()
	go func() {
		out, err := call(t, w, "grep", obj{"pattern": "needle"})
		done <- result{out, err}
	}()
	go func() {
		out, err := call(t, w, "edit_file", obj{"path": "pipe", "old_text": "a", "new_text": "b"})
		done <- result{out, err}
	}()
	guard := time.After(30 * time.Second) // fails the test instead of hanging it
	for range 3 {
		select {
		case r := <-done:
			if r.err != nil && !strings.Contains(r.err.Error(), "not a regular file") || r.err == nil && r.out != "a.txt:1: needle" {
				t.Errorf("got %q, %v", r.out, r.err)
			}
		case <-guard:
			t.Fatal("a tool blocked on a FIFO")
		}
	}
}
