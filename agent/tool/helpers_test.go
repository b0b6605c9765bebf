package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a worktree with a sibling directory outside it holding a
// secret, and symlinks from inside to outside.
type fixture struct {
	w       *Workspace
	root    string // the worktree, resolved
	outside string // a directory next to it
}

const secret = "TOP SECRET\n"

func newFixture(t *testing.T, o *Options) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "wt")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, ".git"), filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put(t, filepath.Join(outside, "secret.txt"), secret)
	put(t, filepath.Join(root, ".git", "config"), "[core]\n")
	put(t, filepath.Join(root, "sub", "a.txt"), "alpha\n")
	links := map[string]string{
		"lnfile":    filepath.Join(outside, "secret.txt"), // a file outside
		"lndir":     outside,                              // a directory outside
		"lnrel":     "../outside",                         // the same, relative
		"dangle":    filepath.Join(outside, "new.txt"),    // dangling, outside
		"alias":     "sub",                                // a directory inside
		"alias.txt": "sub/a.txt",                          // a file inside
		"lngit":     ".git",                               // .git, inside
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &fixture{w: w, root: root, outside: outside}
}

func put(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func findTool(t *testing.T, w *Workspace, name string) Tool {
	t.Helper()
	for _, tl := range w.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return Tool{}
}

// call runs tool name with args (marshalled to JSON unless already a string).
func call(t *testing.T, w *Workspace, name string, args any) (string, error) {
	t.Helper()
	return callCtx(t, context.Background(), w, name, args)
}

func callCtx(t *testing.T, ctx context.Context, w *Workspace, name string, args any) (string, error) {
	t.Helper()
	var raw json.RawMessage
	if s, ok := args.(string); ok {
		raw = json.RawMessage(s)
	} else {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return findTool(t, w, name).Run(ctx, raw)
}

func mustCall(t *testing.T, w *Workspace, name string, args any) string {
	t.Helper()
	out, err := call(t, w, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

type obj = map[string]any
