package tool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// newTree makes a worktree holding files (slash paths to contents).
func newTree(t *testing.T, files map[string]string) *Workspace {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		put(t, filepath.Join(root, filepath.FromSlash(p)), c)
	}
	w, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// ignoreTree has ignore rules at the root, in a subdirectory (with a
// negation) and in .git/info/exclude.
func ignoreTree(t *testing.T) *Workspace {
	return newTree(t, map[string]string{
		".gitignore":        "# build output\n*.log\nbuild/\n/top-only.txt\n",
		".git/info/exclude": "excluded.txt\n",
		".git/HEAD":         "needle in .git\n",
		"main.go":           "package main // needle\n",
		"app.log":           "needle in log\n",
		"build/out.go":      "needle build\n",
		"top-only.txt":      "needle top\n",
		"excluded.txt":      "needle excluded\n",
		"data.bin":          "needle\x00binary\n",
		"other/secret2.go":  "needle other\n",
		"pkg/.gitignore":    "gen/\n!keep.log\nsecret*.go\n",
		"pkg/a.go":          "needle a\nNEEDLE upper\n",
		"pkg/keep.log":      "needle keep\n",
		"pkg/gen/g.go":      "needle gen\n",
		"pkg/secret1.go":    "needle secret\n",
		"pkg/top-only.txt":  "needle pkg\n",
		"pkg/deep/x.go":     "needle deep\n",
		"pkg/deep/y.txt":    "nothing\n",
	})
}

func TestGrep(t *testing.T) {
	w := ignoreTree(t)
	cases := []struct {
		args obj
		want string
	}{
		{obj{"pattern": "needle"}, `main.go:1: package main // needle
other/secret2.go:1: needle other
pkg/a.go:1: needle a
pkg/deep/x.go:1: needle deep
pkg/keep.log:1: needle keep
pkg/top-only.txt:1: needle pkg`},
		{obj{"pattern": "NEEDLE", "path": "pkg", "ignore_case": true}, `pkg/a.go:1: needle a
pkg/a.go:2: NEEDLE upper
pkg/deep/x.go:1: needle deep
pkg/keep.log:1: needle keep
pkg/top-only.txt:1: needle pkg`},
		{obj{"pattern": "needle", "include": "*.go"}, `main.go:1: package main // needle
other/secret2.go:1: needle other
pkg/a.go:1: needle a
pkg/deep/x.go:1: needle deep`},
		{obj{"pattern": "needle", "include": "pkg/**/*.{go,txt}"}, `pkg/a.go:1: needle a
pkg/deep/x.go:1: needle deep
pkg/top-only.txt:1: needle pkg`},
		{obj{"pattern": "needle", "path": "pkg/deep"}, `pkg/deep/x.go:1: needle deep`},
		{obj{"pattern": "needle", "max_results": 2}, `main.go:1: package main // needle
other/secret2.go:1: needle other
[stopped at 2 matches; narrow the pattern, path or include, or raise max_results (at most 1000)]`},
		{obj{"pattern": `^needle \w+$`, "path": "other"}, `other/secret2.go:1: needle other`},
		{obj{"pattern": "absent"}, `no matches`},
		// Named explicitly, an ignored file or directory is searched.
		{obj{"pattern": "needle", "path": "build"}, `build/out.go:1: needle build`},
		{obj{"pattern": "needle", "path": "app.log"}, `app.log:1: needle in log`},
		{obj{"pattern": "needle", "path": "data.bin"}, "no matches\n[\"data.bin\" is a binary file; not searched]"},
	}
	for _, c := range cases {
		got, err := call(t, w, "grep", c.args)
		if err != nil {
			t.Errorf("grep %v: %v", c.args, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("grep %v (-want +got):\n%s", c.args, diff)
		}
	}
	_, err := call(t, w, "grep", obj{"pattern": "func("})
	wantErr(t, err, "invalid regular expression", "escape literal")
	_, err = call(t, w, "grep", obj{"pattern": "x", "path": "nope"})
	wantErr(t, err, "does not exist")
}

func TestGrepLongLinesAndNestedIgnore(t *testing.T) {
	w := newTree(t, map[string]string{
		"long.txt":              "needle" + strings.Repeat("x", 1000) + "\n",
		"a/.gitignore":          "*.tmp\n",
		"a/b/.gitignore":        "!keep.tmp\nlocal/\n",
		"a/x.tmp":               "needle a\n",
		"a/b/y.tmp":             "needle b\n",
		"a/b/keep.tmp":          "needle keep\n",
		"a/b/local/z.txt":       "needle local\n",
		"a/b/c/d/deep.txt":      "needle deep\n",
		"a/b/c/d/ignored/x.tmp": "needle ignored deep\n",
		"z.tmp":                 "needle top tmp (the a/.gitignore does not reach here)\n",
	})
	got := mustCall(t, w, "grep", obj{"pattern": "needle"})
	want := "a/b/c/d/deep.txt:1: needle deep\n" +
		"a/b/keep.tmp:1: needle keep\n" +
		"long.txt:1: needle" + strings.Repeat("x", maxGrepLineLen-len("needle")) + "…\n" +
		"z.tmp:1: needle top tmp (the a/.gitignore does not reach here)"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grep (-want +got):\n%s", diff)
	}
	// Starting below a nested .gitignore still applies the ones above.
	if got := mustCall(t, w, "grep", obj{"pattern": "needle", "path": "a/b"}); got != "a/b/c/d/deep.txt:1: needle deep\na/b/keep.tmp:1: needle keep" {
		t.Errorf("grep in a/b = %q", got)
	}
}

func TestListDir(t *testing.T) {
	w := ignoreTree(t)
	got := mustCall(t, w, "list_dir", obj{})
	want := `.gitignore
data.bin
main.go
other/
  secret2.go
pkg/
  .gitignore
  a.go
  deep/
  keep.log
  top-only.txt`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list_dir (-want +got):\n%s", diff)
	}
	got = mustCall(t, w, "list_dir", obj{"path": "pkg", "depth": 1})
	if got != ".gitignore\na.go\ndeep/\nkeep.log\ntop-only.txt" {
		t.Errorf("list_dir pkg depth 1 = %q", got)
	}
	got = mustCall(t, w, "list_dir", obj{"path": "pkg/", "depth": 5})
	if got != ".gitignore\na.go\ndeep/\n  x.go\n  y.txt\nkeep.log\ntop-only.txt" {
		t.Errorf("list_dir pkg depth 5 = %q", got)
	}
	_, err := call(t, w, "list_dir", obj{"path": "main.go"})
	wantErr(t, err, "is a file", "read_file")
	_, err = call(t, w, "list_dir", obj{"path": "missing"})
	wantErr(t, err, "does not exist")

	files := map[string]string{}
	for i := range maxListEntries + 10 {
		files[fmt.Sprintf("many/f%03d", i)] = ""
	}
	w = newTree(t, files)
	got = mustCall(t, w, "list_dir", obj{"path": "many"})
	lines := strings.Split(got, "\n")
	if len(lines) != maxListEntries+1 || lines[0] != "f000" || lines[maxListEntries] != "[listing capped at 500 entries; list a subdirectory or use a smaller depth]" {
		t.Errorf("capped listing: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestGlob(t *testing.T) {
	w := ignoreTree(t)
	cases := []struct{ pattern, want string }{
		{"**/*.go", "main.go\nother/secret2.go\npkg/a.go\npkg/deep/x.go"},
		{"*.go", "main.go"},
		{"./*.go", "main.go"},
		{"pkg/*", "pkg/.gitignore\npkg/a.go\npkg/keep.log\npkg/top-only.txt"},
		{"pkg/**", "pkg/.gitignore\npkg/a.go\npkg/deep/x.go\npkg/deep/y.txt\npkg/keep.log\npkg/top-only.txt"},
		{"**/{a,x}.go", "pkg/a.go\npkg/deep/x.go"},
		{"{other,pkg/deep}/*.go", "other/secret2.go\npkg/deep/x.go"},
		{"p?g/**/*.txt", "pkg/deep/y.txt\npkg/top-only.txt"},
		{"**/deep/*", "pkg/deep/x.go\npkg/deep/y.txt"},
		{"**/*.log", "pkg/keep.log"},
		{"**/[mx].go", "pkg/deep/x.go"},
		{"build/*.go", "build/out.go"}, // named explicitly
		{"nowhere/**/*.go", `no files match "nowhere/**/*.go"`},
		{"**/*.rs", `no files match "**/*.rs"`},
	}
	for _, c := range cases {
		got, err := call(t, w, "glob", obj{"pattern": c.pattern})
		if err != nil {
			t.Errorf("glob %q: %v", c.pattern, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("glob %q (-want +got):\n%s", c.pattern, diff)
		}
	}
	got := mustCall(t, w, "glob", obj{"pattern": w.Root() + "/pkg/*.go"})
	if got != "pkg/a.go" {
		t.Errorf("absolute glob = %q", got)
	}
	_, err := call(t, w, "glob", obj{"pattern": "pkg/[.go"})
	wantErr(t, err, "malformed pattern")

	files := map[string]string{}
	for i := range maxGlobResults + 3 {
		files[fmt.Sprintf("d%d/f.go", i)] = ""
	}
	w = newTree(t, files)
	got = mustCall(t, w, "glob", obj{"pattern": "**/f.go"})
	lines := strings.Split(got, "\n")
	if len(lines) != maxGlobResults+1 || lines[maxGlobResults] != "[3 more files not shown; narrow the pattern]" {
		t.Errorf("capped glob: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestGlobMatcher(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a/b/c.txt", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**", "a/x/y", true},
		{"*", "a/b", false},
		{"*.{go,md}", "x.md", true},
		{"{a,b{c,d}}/x", "bd/x", true},
		{"{a,b{c,d}}/x", "b/x", false},
		{"\\*.go", "*.go", true},
		{"\\*.go", "x.go", false},
		{"{single}", "{single}", true},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", c.pattern, err)
			continue
		}
		if got := g.match(c.path); got != c.want {
			t.Errorf("%q matches %q = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
	if _, err := compileGlob(strings.Repeat("{a,b}", 7)); err == nil {
		t.Error("a brace bomb was accepted")
	}
}

// TestIgnoreAgreesWithGit compares what glob "**" lists with the untracked,
// not ignored files git itself sees in a real repository.
func TestIgnoreAgreesWithGit(t *testing.T) {
	w := newTree(t, map[string]string{
		".gitignore":          "*.log\nbuild/\n/top-only.txt\n**/cache/**\ndoc/*.md\n!doc/keep.md\n",
		"main.go":             "",
		"app.log":             "",
		"build/out.go":        "",
		"top-only.txt":        "",
		"excluded.txt":        "",
		"src/build/x.go":      "", // build/ matches at any depth
		"src/top-only.txt":    "", // the anchored pattern does not
		"src/cache/c.go":      "",
		"doc/a.md":            "",
		"doc/keep.md":         "",
		"doc/sub/b.md":        "", // doc/*.md does not reach into sub
		"pkg/.gitignore":      "gen/\n!keep.log\nsecret*.go\n",
		"pkg/a.go":            "",
		"pkg/keep.log":        "",
		"pkg/gen/g.go":        "",
		"pkg/secret1.go":      "",
		"pkg/deep/x.go":       "",
		"pkg/deep/.gitignore": "*.go\n!x.go\n",
		"pkg/deep/y.go":       "",
	})
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "core.excludesFile=/dev/null"}, args...)...)
		cmd.Dir = w.Root()
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	put(t, filepath.Join(w.Root(), ".git", "info", "exclude"), "excluded.txt\n")
	want := strings.Split(strings.TrimSpace(git("ls-files", "--others", "--exclude-standard")), "\n")
	sort.Strings(want)
	if len(want) != 10 {
		t.Fatalf("git sees %d files, want 10: %q", len(want), want)
	}
	got := strings.Split(mustCall(t, w, "glob", obj{"pattern": "**"}), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("glob ** against git ls-files (-git +glob):\n%s", diff)
	}
}
