package deps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/gitx"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@l",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@l")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// project is a user's checkout of a Node project with its node_modules
// installed: a package, its .bin link (relative), a workspace link
// (relative, into the checkout), an absolute link into the checkout and
// one out of it.
func project(t *testing.T) (top, base, outside string) {
	top = filepath.Join(t.TempDir(), "repo")
	outside = t.TempDir()
	write(t, filepath.Join(top, "package.json"), `{"name":"p","dependencies":{"left-pad":"1.3.0"}}`, 0o644)
	write(t, filepath.Join(top, "package-lock.json"), `{"lockfileVersion":3}`, 0o644)
	write(t, filepath.Join(top, ".gitignore"), "node_modules/\n", 0o644)
	write(t, filepath.Join(top, "packages/w/index.js"), "module.exports = 1\n", 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "initial")
	write(t, filepath.Join(top, "node_modules/left-pad/index.js"), "module.exports = s => s\n", 0o644)
	write(t, filepath.Join(top, "node_modules/left-pad/cli.js"), "#!/usr/bin/env node\n", 0o755)
	for link, target := range map[string]string{
		"node_modules/.bin/left-pad": "../left-pad/cli.js",
		"node_modules/w":             "../packages/w",
		"node_modules/abs":           filepath.Join(top, "packages/w"),
		"node_modules/out":           outside,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(top, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			t.Fatal(err)
		}
	}
	return top, git(t, top, "rev-parse", "HEAD"), outside
}

// worktree makes a job's worktree of base beside the checkout.
func worktree(t *testing.T, top, base string) string {
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, top, "worktree", "add", "-q", "--detach", wt, base)
	return wt
}

// TestReadyFromCheckout: a checkout whose lockfile and manifest are the
// base's gives each job a copy of its node_modules — files copied with
// their modes, links that stay inside pointing inside the worktree, none
// through which a write reaches the user's checkout.
func TestReadyFromCheckout(t *testing.T) {
	top, base, outside := project(t)
	r, err := gitx.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	wt := worktree(t, r.Top, base)
	outs, err := Ready(r, base, wt)
	if err != nil || len(outs) != 1 {
		t.Fatalf("Ready = %+v, %v", outs, err)
	}
	o := outs[0]
	if o.Source != "your checkout" || o.Manager != "npm" || o.Lockfile != "package-lock.json" || o.Files != 6 {
		t.Fatalf("outcome %+v", o)
	}
	if !strings.Contains(o.Line(), "node_modules (npm, package-lock.json) copied from your checkout") {
		t.Errorf("line %q", o.Line())
	}
	if b, err := os.ReadFile(filepath.Join(wt, "node_modules/.bin/left-pad")); err != nil || string(b) != "#!/usr/bin/env node\n" {
		t.Errorf(".bin link: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(wt, "node_modules/left-pad/cli.js")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("cli.js mode: %v, %v", fi, err)
	}
	for link, want := range map[string]string{
		"node_modules/.bin/left-pad": "../left-pad/cli.js",
		"node_modules/w":             "../packages/w",
		"node_modules/abs":           filepath.Join(wt, "packages/w"),
		"node_modules/out":           outside,
	} {
		if got, err := os.Readlink(filepath.Join(wt, link)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", link, got, err, want)
		}
	}
	// A write in the worktree's copy never reaches the user's files.
	if err := os.WriteFile(filepath.Join(wt, "node_modules/left-pad/index.js"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "node_modules/abs/index.js"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"node_modules/left-pad/index.js", "packages/w/index.js"} {
		if b, _ := os.ReadFile(filepath.Join(top, p)); string(b) == "changed\n" {
			t.Errorf("a write in the worktree reached the user's %s", p)
		}
	}
}

// TestReadyRefuses: nothing is copied, with why, when the checkout's tree
// may not be the base's, or there is nothing to copy; a project that is
// not Node's gets no outcome.
func TestReadyRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(t *testing.T, top, wt string)
		why    string
	}{
		"lockfile changed": {func(t *testing.T, top, wt string) {
			write(t, filepath.Join(top, "package-lock.json"), `{"lockfileVersion":3,"x":1}`, 0o644)
		}, "package-lock.json in your checkout differs from the base's"},
		"manifest changed": {func(t *testing.T, top, wt string) {
			write(t, filepath.Join(top, "package.json"), `{"name":"p"}`, 0o644)
		}, "package.json in your checkout differs"},
		"not installed": {func(t *testing.T, top, wt string) {
			os.RemoveAll(filepath.Join(top, "node_modules"))
		}, "your checkout has no node_modules folder"},
		"already there": {func(t *testing.T, top, wt string) {
			os.MkdirAll(filepath.Join(wt, "node_modules"), 0o755)
		}, "the worktree has a node_modules already"},
	} {
		t.Run(name, func(t *testing.T) {
			top, base, _ := project(t)
			r, err := gitx.Open(top)
			if err != nil {
				t.Fatal(err)
			}
			wt := worktree(t, r.Top, base)
			tc.change(t, top, wt)
			outs, err := Ready(r, base, wt)
			if err != nil || len(outs) != 1 || outs[0].Source != "" || !strings.Contains(outs[0].Skipped, tc.why) {
				t.Fatalf("Ready = %+v, %v; want skipped with %q", outs, err, tc.why)
			}
			if name != "already there" {
				if _, err := os.Lstat(filepath.Join(wt, "node_modules")); err == nil {
					t.Error("node_modules was put in anyway")
				}
			}
		})
	}
	// Not a Node project: nothing said.
	top := filepath.Join(t.TempDir(), "go")
	write(t, filepath.Join(top, "go.mod"), "module x\n", 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "go")
	r, err := gitx.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	if outs, err := Ready(r, git(t, top, "rev-parse", "HEAD"), t.TempDir()); err != nil || len(outs) != 0 {
		t.Errorf("a Go module: %+v, %v; want nothing", outs, err)
	}
}
