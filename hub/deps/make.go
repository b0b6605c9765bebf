package deps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
)

var jsonUnmarshal = json.Unmarshal

// Step is one command of a checkout's setup, as the caller ran it.
type Step struct {
	ExitCode int
	Signal   string // the signal that ended it, if one did ("killed")
	TimedOut bool
	Stopped  string // why it was stopped, when it was
	Err      error  // it could not run
	Output   string // its head and tail, redacted by the caller
	Took     time.Duration
}

// Failed says whether the step did not end with exit 0.
func (s Step) Failed() bool {
	return s.Err != nil || s.TimedOut || s.Stopped != "" || s.Signal != "" || s.ExitCode != 0
}

// Env is where and how a checkout is made ready.
type Env struct {
	Repo  *gitx.Repo
	Rev   string // the commit the checkout holds
	Dir   string // the checkout
	Cache Cache
	// Run runs a shell command in Dir as a step of the job's setup: in its
	// sandbox at the isolated levels, logged, bounded by the setup timeout.
	Run func(ctx context.Context, command string) Step
	// Version is the version a tool prints (for the cache key), "" when it
	// is not installed.
	Version func(ctx context.Context, tool string) string
	// Progress is told what is being done ("setting up: npm ci (621 packages)").
	Progress func(line string)
}

// Outcome is what Make did for one tree.
type Outcome struct {
	Tree Tree
	// Source is where the tree came from: SourceCache, SourceCheckout,
	// SourceInstalled; empty when nothing was put in, and then Skipped says why.
	Source  string
	Skipped string
	Key     string
	Files   int           // files and links put in the checkout
	Paths   []string      // what was put in, from the top (for Commit to leave out)
	Took    time.Duration // the whole step
	// Spare: from the cache, a ready copy was moved in (no copy waited for).
	Spare bool
	// from is the checkout the tree can be kept from (the user's, or the
	// job's own after an install); see Keep.
	from string
	// NotCheckout says why a Node tree was not copied from the user's
	// checkout, when hub installed it instead.
	NotCheckout string
}

// Where a tree came from.
const (
	SourceCache     = "hub's cache"
	SourceCheckout  = "your checkout"
	SourceInstalled = "a fresh install"
)

// Line is the journal's sentence for it.
func (o Outcome) Line() string {
	t := o.Tree
	what := fmt.Sprintf("%s (%s, %s)", strings.Join(t.Dirs, ", "), t.Manager, t.Lockfile)
	if len(t.Dirs) == 0 {
		what = fmt.Sprintf("%s modules (%s)", t.Manager, t.Lockfile)
	}
	took := o.Took.Round(time.Millisecond)
	switch o.Source {
	case "":
		return fmt.Sprintf("dependencies: %s not made ready: %s", what, o.Skipped)
	case SourceCache:
		if o.Spare {
			return fmt.Sprintf("dependencies: %s moved in from hub's cache (a ready copy of entry %s): %d files in %s", what, o.Key[:12], o.Files, took)
		}
		return fmt.Sprintf("dependencies: %s copied from hub's cache (entry %s): %d files in %s", what, o.Key[:12], o.Files, took)
	case SourceCheckout:
		return fmt.Sprintf("dependencies: %s copied from your checkout, whose %s is the base's: %d files in %s", what, t.Lockfile, o.Files, took)
	}
	line := fmt.Sprintf("dependencies: %s installed by `%s` in %s", what, t.Install, took)
	if o.NotCheckout != "" {
		line += " (not copied from your checkout: " + o.NotCheckout + ")"
	}
	if len(t.Dirs) == 0 {
		line += " (into the shared cache)"
	}
	return line
}

// Failure is a setup step that failed: what ran, how it ended, and what
// to do about it.
type Failure struct {
	What    string // "installing the dependencies", "the setup command"
	Command string
	Step    Step
	Fix     string
}

func (f *Failure) Error() string {
	how := fmt.Sprintf("exited %d", f.Step.ExitCode)
	switch {
	case f.Step.Err != nil:
		how = "could not run: " + f.Step.Err.Error()
	case f.Step.TimedOut:
		how = fmt.Sprintf("timed out after %s", f.Step.Took.Round(time.Second))
	case f.Step.Stopped != "":
		how = "was stopped (" + f.Step.Stopped + ")"
	case f.Step.Signal != "":
		how = "was killed by a signal (" + f.Step.Signal + ")"
	}
	return fmt.Sprintf("%s failed: `%s` %s", f.What, firstLine(f.Command, 120), how)
}

// Hint is what to do about it.
func (f *Failure) Hint() string { return f.Fix }

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Make puts each tree into e.Dir, in order, and returns what it did. A
// tree whose tool is missing is skipped (said in its Outcome); an install
// that fails is a *Failure, after what it left in the checkout is removed.
// Nothing else is ever left half-made: a cache entry appears whole or not
// at all.
func Make(ctx context.Context, e Env, trees []Tree) ([]Outcome, error) {
	var outs []Outcome
	for _, t := range trees {
		t0 := time.Now()
		o, err := e.make(ctx, t)
		o.Took = time.Since(t0)
		outs = append(outs, o)
		if err != nil {
			return outs, err
		}
	}
	return outs, nil
}

func (e Env) make(ctx context.Context, t Tree) (Outcome, error) {
	o := Outcome{Tree: t}
	if t.Committed != "" {
		o.Skipped = fmt.Sprintf("%s is committed in the repository: the commit's own tree, left as it is", t.Committed)
		return o, nil
	}
	for _, d := range t.Dirs {
		if _, err := os.Lstat(filepath.Join(e.Dir, filepath.FromSlash(d))); err == nil {
			o.Skipped = fmt.Sprintf("the checkout has a %s already (.worktreeinclude copied one in): left as it is", d)
			return o, nil
		}
	}
	ver := e.Version(ctx, t.Tool)
	if ver == "" {
		o.Skipped = fmt.Sprintf("%s needs %s, which is not on PATH here: install it, or set \"deps\" in %s (\"off\", or the command that installs them)", t.Lockfile, t.Tool, RepoFile)
		return o, nil
	}
	if isNode(t) && t.Tool != "bun" {
		// What a Node tree holds depends on the Node it was installed
		// with too (native modules, engines checks).
		ver += "; " + e.Version(ctx, "node")
	}
	o.Key = t.Key(ver)
	if len(t.Dirs) > 0 || t.Manager == "custom" {
		if ent, ok := e.Cache.Lookup(o.Key); ok {
			o.Tree.Dirs = ent.Dirs
			if paths, ok := ent.Take(e.Dir); ok {
				o.Source, o.Spare, o.Files, o.Paths = SourceCache, true, len(paths), paths
				return o, nil
			}
			e.Progress(fmt.Sprintf("setting up: copying %s from hub's cache", strings.Join(ent.Dirs, ", ")))
			paths, err := ent.CopyInto(e.Dir)
			switch {
			case err == nil:
				o.Source, o.Files, o.Paths = SourceCache, len(paths), paths
				return o, nil
			case errors.Is(err, ErrInTheWay):
				o.Skipped = err.Error() + ": left as it is"
				return o, nil
			}
			// A broken entry (CopyInto took out what it put in): drop it, install.
			_ = e.Cache.Drop(o.Key)
			o.Tree.Dirs = t.Dirs
		}
		if isNode(t) {
			why := e.fromCheckout(&o)
			if why == "" {
				return o, nil
			}
			o.NotCheckout = why
		}
	}
	return o, e.install(ctx, &o)
}

func isNode(t Tree) bool { return slices.Contains(t.Dirs, "node_modules") }

// fromCheckout copies the user's node_modules when its manifest and
// lockfile are the commit's; it says why not otherwise.
func (e Env) fromCheckout(o *Outcome) string {
	top := e.Repo.Top
	if o.Tree.Lockfile == "package.json" {
		return "the base has no lockfile, so no installed tree is known to be the base's"
	}
	for _, f := range o.Tree.files {
		if f.name != "package.json" && f.name != o.Tree.Lockfile {
			continue
		}
		if why := differs(top, f.name, f.data); why != "" {
			return why
		}
	}
	dirs := nodeModulesDirs(top)
	if len(dirs) == 0 {
		return "your checkout has no node_modules folder"
	}
	e.Progress("setting up: copying node_modules from your checkout")
	var all, done []string
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(e.Dir, filepath.FromSlash(d))); err == nil {
			continue // the commit has one (tracked): never overwrite it
		}
		cp, err := copyTree(top, e.Dir, d, nil)
		all = append(all, cp.paths...)
		done = append(done, d)
		if err != nil {
			removeAll(e.Dir, done)
			return "copying it failed: " + err.Error()
		}
	}
	o.Source, o.Files, o.Paths, o.Tree.Dirs, o.from = SourceCheckout, len(all), all, done, top
	return ""
}

// install runs the tree's install in the checkout, and keeps what it made
// in the cache.
func (e Env) install(ctx context.Context, o *Outcome) error {
	t := o.Tree
	before := topEntries(e.Dir)
	e.Progress("setting up: " + t.What())
	step := e.Run(ctx, t.Install)
	made := newEntries(e.Dir, before)
	if step.Failed() {
		removeAll(e.Dir, made)
		return &Failure{What: "installing the dependencies (" + t.Manager + ", " + t.Lockfile + ")", Command: t.Install, Step: step, Fix: installFix(t)}
	}
	o.Source = SourceInstalled
	switch {
	case t.Manager == "custom":
		o.Tree.Dirs = made
	case isNode(t):
		o.Tree.Dirs = nodeModulesDirs(e.Dir)
	}
	if len(o.Tree.Dirs) == 0 {
		return nil
	}
	paths, err := listTree(e.Dir, o.Tree.Dirs)
	if err != nil {
		removeAll(e.Dir, made)
		return fmt.Errorf("list what `%s` installed: %w", t.Install, err)
	}
	o.Files, o.Paths, o.from = len(paths), paths, e.Dir
	return nil
}

// Keep fills the cache from what Make did for o, to be run in the
// background once the job's checkout is ready: a tree installed or copied
// from the user's checkout becomes an entry (if nothing in it changes
// while it is copied), and every entry gets its ready copies. It returns
// the journal's line ("" when there was nothing to do).
func (e Env) Keep(o Outcome) string {
	if o.Key == "" || len(o.Tree.Dirs) == 0 || o.Source == "" {
		return ""
	}
	line := e.Cache.Keep(o.Key, o.from, Meta{Manager: o.Tree.Manager, Lockfile: o.Tree.Lockfile, Install: o.Tree.Install,
		Repo: e.Repo.Top, From: o.Source, Dirs: o.Tree.Dirs, Relocate: o.Tree.Relocate})
	if line == "" {
		return ""
	}
	return "hub's cache: " + line
}

// installFix is what to do when a tree's install failed.
func installFix(t Tree) string {
	switch {
	case t.Manager == "custom":
		return fmt.Sprintf("fix the deps command in %s (or the job's deps), or set it to \"auto\"", RepoFile)
	case t.Lockfile == "package.json" || t.Manager == "pip" && t.Lockfile == "pyproject.toml":
		return fmt.Sprintf("run `%s` in your checkout to see why, and commit a lockfile; or set \"deps\" in %s (\"off\", or a command)", t.Install, RepoFile)
	}
	return fmt.Sprintf("run `%s` in a clean checkout of the base to see why (a lockfile out of step with its manifest is the usual cause: update it and commit both); or set \"deps\" in %s (\"off\", or a command)",
		t.Install, RepoFile)
}

// differs says why the user's checkout's file name is not want, the
// commit's, byte for byte ("" when it is).
func differs(top, name string, want []byte) string {
	b, err := readRegular(filepath.Join(top, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return name + " is not in your checkout"
	case err != nil:
		return "cannot read " + name + " in your checkout: " + err.Error()
	case !bytes.Equal(b, want):
		return name + " in your checkout differs from the base's, so its node_modules is not the base's"
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

// nodeModulesDirs finds the node_modules folders of a Node checkout: the
// top one and the workspaces' (a few levels down, never inside another
// node_modules or a dot folder), as slash-separated paths from the top.
func nodeModulesDirs(top string) []string {
	var dirs []string
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		ents, err := os.ReadDir(filepath.Join(top, rel))
		if err != nil {
			return
		}
		for _, d := range ents {
			if !d.IsDir() || d.Type()&fs.ModeSymlink != 0 || strings.HasPrefix(d.Name(), ".") {
				continue
			}
			p := pathJoin(rel, d.Name())
			if d.Name() == "node_modules" {
				dirs = append(dirs, p)
				continue
			}
			if depth < 3 {
				walk(p, depth+1)
			}
		}
	}
	walk("", 0)
	return dirs
}

func pathJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// topEntries names what is at the top of dir.
func topEntries(dir string) map[string]bool {
	m := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, d := range ents {
		m[d.Name()] = true
	}
	return m
}

// newEntries names what is at the top of dir now and was not before (a
// nested node_modules a workspace install made is found by nodeModulesDirs).
func newEntries(dir string, before map[string]bool) []string {
	var made []string
	for n := range topEntries(dir) {
		if !before[n] && n != ".git" {
			made = append(made, n)
		}
	}
	slices.Sort(made)
	return made
}

// removeAll takes the given paths (from the top) out of dir.
func removeAll(dir string, rels []string) {
	for _, r := range rels {
		_ = os.RemoveAll(filepath.Join(dir, filepath.FromSlash(r)))
	}
}

// listTree lists the files and links under each of rels in dir, as
// slash-separated paths from the top.
func listTree(dir string, rels []string) ([]string, error) {
	var out []string
	for _, r := range rels {
		root := filepath.Join(dir, filepath.FromSlash(r))
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
