package deps

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// env is an Env for checkout dir of rev with a cache in a temp folder,
// whose steps run where they are asked to with sh, recording each command
// (and, in wheres, where it ran).
func env(t *testing.T, r *gitx.Repo, rev, dir, cache string) (Env, *[]string) {
	e, ran, _ := envWhere(t, r, rev, dir, cache)
	return e, ran
}

func envWhere(t *testing.T, r *gitx.Repo, rev, dir, cache string) (Env, *[]string, *[]Where) {
	var ran []string
	var wheres []Where
	e := Env{Repo: r, Rev: rev, Dir: dir, Cache: Cache{Dir: cache},
		Run: func(ctx context.Context, w Where, command string) Step {
			ran = append(ran, command)
			wheres = append(wheres, w)
			cmd := exec.CommandContext(ctx, "sh", "-c", command)
			cmd.Dir = w.Dir
			cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(cache, "..", "npm-cache"), "npm_config_offline=true")
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			st := Step{Output: string(out), Took: time.Since(t0)}
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				st.ExitCode = ee.ExitCode()
			case err != nil:
				st.ExitCode, st.Err = -1, err
			}
			return st
		},
		Version: func(ctx context.Context, tool string) string {
			if _, err := exec.LookPath(tool); err != nil {
				return ""
			}
			return tool + " (test)"
		},
		Progress: func(string) {}}
	return e, &ran, &wheres
}

func open(t *testing.T, top string) *gitx.Repo {
	t.Helper()
	r, err := gitx.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFromCheckout: a checkout whose lockfile and manifest are the base's
// gives each job a copy of its node_modules — files copied with their
// modes, links that stay inside pointing inside the worktree, none through
// which a write reaches the user's checkout — and installs nothing.
func TestFromCheckout(t *testing.T) {
	top, base, outside := project(t)
	r := open(t, top)
	wt := worktree(t, r.Top, base)
	trees, err := Detect(r, base, Settings{})
	if err != nil || len(trees) != 1 || trees[0].Manager != "npm" || trees[0].Lockfile != "package-lock.json" {
		t.Fatalf("Detect = %+v, %v", trees, err)
	}
	e, ran := env(t, r, base, wt, filepath.Join(t.TempDir(), "envs"))
	outs, err := Make(context.Background(), e, trees)
	if err != nil || len(outs) != 1 {
		t.Fatalf("Make = %+v, %v", outs, err)
	}
	o := outs[0]
	if o.Source != SourceCheckout || o.Files != 6 || len(*ran) != 0 {
		t.Fatalf("outcome %+v, ran %q", o, *ran)
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

// nodeProject is a user's checkout of a Node project whose one dependency
// is a tarball in the repository, so npm installs it with no network; its
// lockfile made by npm itself. Nothing is installed in the checkout.
func nodeProject(t *testing.T) (top, base string) {
	top = filepath.Join(t.TempDir(), "repo")
	dep := filepath.Join(t.TempDir(), "dep")
	write(t, filepath.Join(dep, "package.json"), `{"name":"dep","version":"1.0.0","bin":{"dep":"cli.js"}}`, 0o644)
	write(t, filepath.Join(dep, "index.js"), "module.exports = 42\n", 0o644)
	write(t, filepath.Join(dep, "cli.js"), "#!/usr/bin/env node\nconsole.log(require('./index.js'))\n", 0o755)
	if err := os.MkdirAll(top, 0o755); err != nil {
		t.Fatal(err)
	}
	npm(t, dep, "pack", "--pack-destination", top)
	write(t, filepath.Join(top, "package.json"), `{"name":"p","version":"1.0.0","dependencies":{"dep":"file:dep-1.0.0.tgz"}}`, 0o644)
	write(t, filepath.Join(top, ".gitignore"), "node_modules/\n", 0o644)
	npm(t, top, "install", "--package-lock-only")
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "initial")
	return top, git(t, top, "rev-parse", "HEAD")
}

func npm(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("npm", append(args, "--no-audit", "--no-fund", "--loglevel=error")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "npm_config_cache="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %v: %v\n%s", args, err, out)
	}
}

// TestInstallThenCache: the first checkout of a lockfile gets an install
// (npm ci) and the tree goes into the cache whole; the next checkout of the
// same lockfile gets a copy from the cache and installs nothing; a changed
// lockfile is another entry, never the stale tree.
func TestInstallThenCache(t *testing.T) {
	noInstallsInShort(t)
	top, base := nodeProject(t)
	r := open(t, top)
	cache := filepath.Join(t.TempDir(), "envs")
	trees, err := Detect(r, base, Settings{})
	if err != nil || len(trees) != 1 || !strings.HasPrefix(trees[0].Install, "npm ci") || trees[0].Packages != 1 {
		t.Fatalf("Detect = %+v, %v", trees, err)
	}
	if w := trees[0].What(); w != "npm ci --prefer-offline --no-audit --no-fund (1 packages)" {
		t.Errorf("What = %q", w)
	}

	wt1 := worktree(t, top, base)
	e, ran, wheres := envWhere(t, r, base, wt1, cache)
	outs, err := Make(context.Background(), e, trees)
	if err != nil || outs[0].Source != SourceInstalled || len(*ran) != 1 {
		t.Fatalf("first: %+v, %v, ran %q", outs, err, *ran)
	}
	key := outs[0].Key
	if b, err := exec.Command(filepath.Join(wt1, "node_modules/.bin/dep")).Output(); err != nil || string(b) != "42\n" {
		t.Fatalf("the installed bin: %q, %v", b, err)
	}
	// The worker of the first job rewrites a file of its tree at the same
	// size and puts its times back, as a hostile one would: the cache must
	// never hold it.
	poisoned := filepath.Join(wt1, "node_modules/dep/index.js")
	fi, err := os.Stat(poisoned)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(poisoned, []byte("module.exports = 666\n"[:fi.Size()]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(poisoned, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	// In the background, while the worker would run: hub installs the
	// tree again in a private checkout of its own, and that goes into the
	// cache, read-only, with ready copies.
	if line := e.Keep(context.Background(), outs[0], nil); !strings.Contains(line, "as entry "+key[:12]) || !strings.Contains(line, "made 2 ready copies") ||
		!strings.Contains(line, FromInstall) {
		t.Errorf("keep: %q", line)
	}
	if len(*wheres) != 2 || !(*wheres)[1].ForCache || (*wheres)[1].Dir == wt1 || (*wheres)[1].Checkout == nil || !(*wheres)[1].Checkout.Private {
		t.Errorf("the cache's install ran at %+v, want a private checkout of its own", *wheres)
	}
	ents, scratch, err := (Cache{cache}).List()
	if err != nil || len(ents) != 1 || len(scratch) != 0 || ents[0].Key != key || ents[0].Manager != "npm" || ents[0].Files != len(outs[0].Paths) ||
		ents[0].From != FromInstall {
		t.Fatalf("cache after the first: %+v, %+v, %v", ents, scratch, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ents[0].Path, "tree/node_modules/dep/index.js")); string(b) != "module.exports = 42\n" {
		t.Fatalf("the cache holds what the first job's worker wrote: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ents[0].Path, "tree", "src")); err == nil {
		t.Error("the private checkout's files are in the entry")
	}
	_ = filepath.WalkDir(filepath.Join(ents[0].Path, "tree"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink == 0 {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o222 != 0 {
				t.Errorf("%s in the entry is writable (%v)", p, fi.Mode())
			}
		}
		return nil
	})

	// The next jobs each take a ready copy whole (nothing is copied while
	// they wait), until there is none: then a copy of the entry.
	for i, spare := range []bool{true, true, false} {
		wt := worktree(t, top, base)
		e, ran = env(t, r, base, wt, cache)
		outs, err = Make(context.Background(), e, trees)
		if err != nil || outs[0].Source != SourceCache || outs[0].Spare != spare || len(*ran) != 0 || outs[0].Key != key {
			t.Fatalf("job %d: %+v, %v, ran %q", i+2, outs, err, *ran)
		}
		if b, err := exec.Command(filepath.Join(wt, "node_modules/.bin/dep")).Output(); err != nil || string(b) != "42\n" {
			t.Fatalf("job %d: the cached bin: %q, %v", i+2, b, err)
		}
		if len(outs[0].Paths) != ents[0].Files {
			t.Errorf("job %d: %d paths, want %d", i+2, len(outs[0].Paths), ents[0].Files)
		}
		// The copy is the worktree's own: writable (the entry is not), and a
		// write to it reaches no cache entry.
		if fi, err := os.Stat(filepath.Join(wt, "node_modules/dep/index.js")); err != nil || fi.Mode().Perm()&0o200 == 0 {
			t.Errorf("job %d: the copy is not writable by its owner: %v, %v", i+2, fi.Mode(), err)
		}
		if err := os.WriteFile(filepath.Join(wt, "node_modules/dep/index.js"), []byte("module.exports = 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(ents[0].Path, "tree/node_modules/dep/index.js")); string(b) != "module.exports = 42\n" {
			t.Errorf("a write in the worktree reached the cache: %q", b)
		}
	}
	if line := e.Keep(context.Background(), outs[0], nil); line == "" || strings.Contains(line, "as entry") {
		t.Errorf("keep after the spares were taken: %q", line)
	}
	if spares, _ := os.ReadDir(filepath.Join(ents[0].Path, "spares")); len(spares) != Spares {
		t.Errorf("%d ready copies after a refill, want %d", len(spares), Spares)
	}

	// A new lockfile at a later commit: a new key, installed anew.
	write(t, filepath.Join(top, "package.json"), `{"name":"p","version":"1.0.1","dependencies":{"dep":"file:dep-1.0.0.tgz"}}`, 0o644)
	npm(t, top, "install", "--package-lock-only")
	git(t, top, "commit", "-qam", "bump")
	head := git(t, top, "rev-parse", "HEAD")
	trees2, err := Detect(r, head, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	wt3 := worktree(t, top, head)
	e, ran = env(t, r, head, wt3, cache)
	outs, err = Make(context.Background(), e, trees2)
	if err != nil || outs[0].Source != SourceInstalled || outs[0].Key == key || len(*ran) != 1 {
		t.Fatalf("after the lockfile changed: %+v, %v, ran %q", outs, err, *ran)
	}
	e.Keep(context.Background(), outs[0], nil)
	if ents, _, _ := (Cache{cache}).List(); len(ents) != 2 {
		t.Errorf("cache entries: %d, want 2", len(ents))
	}
}

// TestInstallFails: a lockfile out of step with its manifest does not
// install; the failure names the command and the fix, and leaves nothing:
// no node_modules in the checkout, no cache entry, no scratch folder.
func TestInstallFails(t *testing.T) {
	noInstallsInShort(t)
	top, _ := nodeProject(t)
	write(t, filepath.Join(top, "package.json"), `{"name":"p","version":"1.0.0","dependencies":{"dep":"^2.0.0"}}`, 0o644)
	git(t, top, "commit", "-qam", "manifest without its lockfile")
	base := git(t, top, "rev-parse", "HEAD")
	r := open(t, top)
	cache := filepath.Join(t.TempDir(), "envs")
	trees, err := Detect(r, base, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	wt := worktree(t, top, base)
	e, _ := env(t, r, base, wt, cache)
	_, err = Make(context.Background(), e, trees)
	var f *Failure
	if !errors.As(err, &f) || f.Step.ExitCode == 0 || !strings.Contains(f.Error(), "`npm ci --prefer-offline --no-audit --no-fund` exited") ||
		!strings.Contains(f.Fix, "lockfile out of step with its manifest") || !strings.Contains(f.Step.Output, "npm error") {
		t.Fatalf("Make = %v (fix %q)\n%s", err, f.Fix, f.Step.Output)
	}
	if _, err := os.Lstat(filepath.Join(wt, "node_modules")); err == nil {
		t.Error("a failed install left node_modules in the checkout")
	}
	if ents, err := os.ReadDir(cache); err == nil && len(ents) > 0 {
		t.Errorf("a failed install left %d things in the cache", len(ents))
	}
}

// TestCustomDeps: the repository's own deps command replaces the
// detection; what it leaves that git does not track is the tree, cached
// like an install. "off" makes nothing ready.
func TestCustomDeps(t *testing.T) {
	top := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(top, "go.mod"), "module x\n", 0o644)
	write(t, filepath.Join(top, ".hub.json"), `{"deps": "mkdir -p vendor/a && echo made > vendor/a/f && echo gen > gen.txt"}`, 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "initial")
	base := git(t, top, "rev-parse", "HEAD")
	r := open(t, top)
	set, err := ReadSettings(r, base)
	if err != nil || !strings.HasPrefix(set.Deps, "mkdir") {
		t.Fatalf("ReadSettings = %+v, %v", set, err)
	}
	trees, err := Detect(r, base, set)
	if err != nil || len(trees) != 1 || trees[0].Manager != "custom" {
		t.Fatalf("Detect = %+v, %v", trees, err)
	}
	cache := filepath.Join(t.TempDir(), "envs")
	for i, want := range []string{SourceInstalled, SourceCache} {
		wt := worktree(t, top, base)
		e, ran := env(t, r, base, wt, cache)
		outs, err := Make(context.Background(), e, trees)
		if err != nil || outs[0].Source != want || strings.Join(outs[0].Tree.Dirs, ",") != "gen.txt,vendor" || len(*ran) != 1-i {
			t.Fatalf("job %d: %+v, %v, ran %q", i+1, outs, err, *ran)
		}
		e.Keep(context.Background(), outs[0], nil)
		if b, _ := os.ReadFile(filepath.Join(wt, "vendor/a/f")); string(b) != "made\n" {
			t.Errorf("job %d: vendor/a/f = %q", i+1, b)
		}
	}
	// A later commit tracks a folder the cached tree has: nothing is put
	// over it, and the commit's own files stay.
	write(t, filepath.Join(top, "vendor/a/f"), "tracked\n", 0o644)
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "vendor tracked")
	head := git(t, top, "rev-parse", "HEAD")
	wt := worktree(t, top, head)
	e, ran := env(t, r, head, wt, cache)
	trees, err = Detect(r, head, set)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := Make(context.Background(), e, trees)
	if err != nil || outs[0].Source != "" || !strings.Contains(outs[0].Skipped, "has a vendor already") || len(*ran) != 0 {
		t.Fatalf("a tracked folder in the way: %+v, %v, ran %q", outs, err, *ran)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "vendor/a/f")); string(b) != "tracked\n" {
		t.Errorf("the tracked file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(wt, "gen.txt")); err == nil {
		t.Error("part of the tree was put in")
	}
	if ents, _, _ := (Cache{cache}).List(); len(ents) != 1 {
		t.Fatalf("entries: %+v", ents)
	} else if spares, _ := os.ReadDir(filepath.Join(ents[0].Path, "spares")); len(spares) != Spares {
		t.Errorf("%d ready copies left, want %d: none is spent on a checkout it cannot go into", len(spares), Spares)
	}

	// The job's own deps win over the repository's; off makes nothing.
	if trees, err := Detect(r, base, set.Over(Settings{Deps: DepsOff})); err != nil || len(trees) != 0 {
		t.Errorf("deps off: %+v, %v", trees, err)
	}
	// auto finds the Go module.
	if trees, err := Detect(r, base, set.Over(Settings{Deps: DepsAuto})); err != nil || len(trees) != 1 || trees[0].Manager != "go" || len(trees[0].Dirs) != 0 {
		t.Errorf("deps auto: %+v, %v", trees, err)
	}
}

// TestSettingsRefused: a .hub.json hub cannot use is an error that names
// the file, the key and the keys there are.
func TestSettingsRefused(t *testing.T) {
	top := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(top, ".hub.json"), `{"setpu": "make"}`, 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "initial")
	r := open(t, top)
	_, err := ReadSettings(r, git(t, top, "rev-parse", "HEAD"))
	if err == nil || !strings.Contains(err.Error(), ".hub.json") || !strings.Contains(err.Error(), "setpu") || !strings.Contains(err.Error(), "setup") {
		t.Fatalf("ReadSettings = %v", err)
	}
}

// TestVenvRelocated: a Python venv names its own path; a copy from the
// cache into another checkout has it rewritten, so its scripts run the
// copy's Python, not the first checkout's.
func TestVenvRelocated(t *testing.T) {
	top := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(top, "requirements.txt"), "# nothing yet\n", 0o644)
	write(t, filepath.Join(top, ".gitignore"), ".venv/\n", 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "initial")
	base := git(t, top, "rev-parse", "HEAD")
	r := open(t, top)
	trees, err := Detect(r, base, Settings{})
	if err != nil || len(trees) != 1 || trees[0].Manager != "pip" || !trees[0].Relocate {
		t.Fatalf("Detect = %+v, %v", trees, err)
	}
	cache := filepath.Join(t.TempDir(), "envs")
	var wts []string
	for i, want := range []string{SourceInstalled, SourceCache} {
		wt := worktree(t, top, base)
		wts = append(wts, wt)
		e, _ := env(t, r, base, wt, cache)
		outs, err := Make(context.Background(), e, trees)
		if err != nil || outs[0].Source != want || outs[0].Spare {
			t.Fatalf("job %d: %+v, %v", i+1, outs, err)
		}
		e.Keep(context.Background(), outs[0], nil)
	}
	os.RemoveAll(wts[0]) // the first checkout is gone: the copy must not need it
	out, err := exec.Command(filepath.Join(wts[1], ".venv/bin/pip"), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), filepath.Join(wts[1], ".venv")) {
		t.Fatalf("the copied venv's pip: %v\n%s", err, out)
	}
}

// TestKeepRefusesAChangingTree: a tree that changes while hub copies it
// into the cache (a worker already writing in the worktree) is not kept.
func TestKeepRefusesAChangingTree(t *testing.T) {
	top, base := nodeProject(t)
	r := open(t, top)
	cache := filepath.Join(t.TempDir(), "envs")
	trees, _ := Detect(r, base, Settings{})
	wt := worktree(t, top, base)
	e, _ := env(t, r, base, wt, cache)
	outs, err := Make(context.Background(), e, trees)
	if err != nil {
		t.Fatal(err)
	}
	stamps := map[string]stamp{}
	cp, err := copyTree(wt, t.TempDir(), "node_modules", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cp.stamps {
		stamps[k] = v
	}
	if !unchanged(wt, []string{"node_modules"}, stamps) {
		t.Fatal("an untouched tree counts as changed")
	}
	write(t, filepath.Join(wt, "node_modules/dep/extra.js"), "x\n", 0o644)
	if unchanged(wt, []string{"node_modules"}, stamps) {
		t.Fatal("a file added does not count as a change")
	}
	os.Remove(filepath.Join(wt, "node_modules/dep/extra.js"))
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(wt, "node_modules/dep/index.js"), future, future)
	if unchanged(wt, []string{"node_modules"}, stamps) {
		t.Fatal("a file written does not count as a change")
	}
	// Keep of the changed tree still keeps it (it changed before the copy,
	// not during it); nothing half-made stays either way.
	e.Keep(context.Background(), outs[0], nil)
	if _, scratch, _ := (Cache{cache}).List(); len(scratch) != 0 {
		t.Errorf("scratch left: %+v", scratch)
	}
}

// TestTransientCachesLeftOut: a tool's cache inside node_modules (nyc
// writes node_modules/.cache while tests run) is not copied, and writes
// to it do not count as the tree changing.
func TestTransientCachesLeftOut(t *testing.T) {
	top := t.TempDir()
	write(t, filepath.Join(top, "node_modules/dep/index.js"), "x\n", 0o644)
	write(t, filepath.Join(top, "node_modules/.cache/nyc/a.json"), "{}\n", 0o644)
	cp, err := copyTree(top, t.TempDir(), "node_modules", nil)
	if err != nil || len(cp.paths) != 1 || cp.paths[0] != "node_modules/dep/index.js" {
		t.Fatalf("copied %v, %v", cp.paths, err)
	}
	write(t, filepath.Join(top, "node_modules/.cache/nyc/b.json"), "{}\n", 0o644)
	if !unchanged(top, []string{"node_modules"}, cp.stamps) {
		t.Error("a write to node_modules/.cache counts as the tree changing")
	}
}

// TestCommittedTreeLeftAlone: a repository that commits its node_modules
// gets nothing installed over it.
func TestCommittedTreeLeftAlone(t *testing.T) {
	top := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(top, "package.json"), `{"name":"p"}`, 0o644)
	write(t, filepath.Join(top, "package-lock.json"), `{"lockfileVersion":3}`, 0o644)
	write(t, filepath.Join(top, "node_modules/dep/index.js"), "vendored\n", 0o644)
	git(t, top, "init", "-q", "-b", "main")
	git(t, top, "add", "-A")
	git(t, top, "commit", "-qm", "vendored")
	base := git(t, top, "rev-parse", "HEAD")
	r := open(t, top)
	trees, err := Detect(r, base, Settings{})
	if err != nil || len(trees) != 1 || trees[0].Committed != "node_modules" {
		t.Fatalf("Detect = %+v, %v", trees, err)
	}
	wt := worktree(t, top, base)
	e, ran := env(t, r, base, wt, filepath.Join(t.TempDir(), "envs"))
	outs, err := Make(context.Background(), e, trees)
	if err != nil || outs[0].Source != "" || !strings.Contains(outs[0].Skipped, "committed") || len(*ran) != 0 {
		t.Fatalf("Make = %+v, %v, ran %q", outs, err, *ran)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "node_modules/dep/index.js")); string(b) != "vendored\n" {
		t.Errorf("the committed tree changed: %q", b)
	}
}

// noInstallsInShort skips a test that runs npm in make check's fast lane
// (-short), which installs nothing; make test runs it.
func noInstallsInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs npm ci: make check (-short) installs nothing; make test runs it")
	}
}
