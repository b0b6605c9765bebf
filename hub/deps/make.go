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
	"github.com/hub-agents/hub/hub/internal/pathx"
	"github.com/hub-agents/hub/internal/text"
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

// Where says where a step of a setup runs.
type Where struct {
	// Dir is the working directory: the checkout's top.
	Dir string
	// Checkout is hub's record of that checkout (what a sandbox mounts);
	// nil in a test that runs steps plainly.
	Checkout *gitx.Checkout
	// ForCache: an install hub runs in a private checkout of the base to
	// fill its cache. Its tools' caches must be ones no worker can write
	// (never a job's own cache folder, which its worker writes).
	ForCache bool
}

// Env is where and how a checkout is made ready.
type Env struct {
	Repo     *gitx.Repo
	Rev      string         // the commit the checkout holds
	Dir      string         // the checkout
	Checkout *gitx.Checkout // hub's record of it (nil in tests)
	Cache    Cache
	// Run runs a shell command as a step of the job's setup, where w
	// says: in its sandbox at the isolated levels, logged, bounded by the
	// setup timeout.
	Run func(ctx context.Context, w Where, command string) Step
	// Include puts the user's gitignored files .worktreeinclude lists into
	// a private checkout hub installs in for the cache (an .npmrc with a
	// registry's token), as into the job's; nil: none.
	Include func(ctx context.Context, c *gitx.Checkout) error
	// Version is the version a tool prints (for the cache key), "" when it
	// is not installed.
	Version func(ctx context.Context, tool string) string
	// Progress is told what is being done ("setting up: npm ci (621 packages)").
	Progress func(line string)
	// Offline: installs run without the network (verify's and landing's
	// at untrusted, after the worker ran): with each manager's offline
	// switch, so that one fails at once rather than retrying for minutes.
	Offline bool
	// NoKeep: what this checkout gets never fills the cache (verify's and
	// landing's checkouts, whose manifests may be the worker's).
	NoKeep bool
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
	// Offline: installed without the network (Env.Offline).
	Offline bool
	// fill makes the cache entry of this tree when the cache has none:
	// a copy of the user's checkout, or hub's own install in a private
	// checkout of the base (never a copy of the job's checkout, which its
	// worker writes); nil when the tree came from the cache. unfill
	// removes what fill was made ready with when it never runs.
	fill   Filler
	unfill func()
	// NotCheckout says why a Node tree was not copied from the user's
	// checkout, when hub installed it instead.
	NotCheckout string
}

// Discard removes what o's cache fill was made ready with, for an outcome
// that will not be kept (the checkout's setup failed after it).
func (o Outcome) Discard() {
	if o.unfill != nil {
		o.unfill()
	}
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
	if o.Offline {
		line = fmt.Sprintf("dependencies: %s installed without the network by `%s` in %s", what, t.offline(), took)
	}
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
	return fmt.Sprintf("%s failed: `%s` %s", f.What, text.FirstLine(f.Command, 120), how)
}

// Hint is what to do about it.
func (f *Failure) Hint() string { return f.Fix }

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
	o.Source, o.Files, o.Paths, o.Tree.Dirs, o.fill = SourceCheckout, len(all), all, done, CopyFill(top, done)
	return ""
}

// install runs the tree's install in the checkout (without the network
// and with the manager's offline switch, when e.Offline). What it made is
// never the cache's: a fresh install of its own, in a private checkout of
// the base, fills the cache (see Keep).
func (e Env) install(ctx context.Context, o *Outcome) error {
	t := o.Tree
	command := t.Install
	if e.Offline {
		command, o.Offline = t.offline(), true
	}
	before := topEntries(e.Dir)
	e.Progress("setting up: " + t.What())
	step := e.Run(ctx, Where{Dir: e.Dir, Checkout: e.Checkout}, command)
	made := newEntries(e.Dir, before)
	if step.Failed() {
		removeAll(e.Dir, made)
		return &Failure{What: "installing the dependencies (" + t.Manager + ", " + t.Lockfile + ")", Command: command, Step: step, Fix: installFix(t, e.Offline)}
	}
	o.Source = SourceInstalled
	o.Tree.Dirs = installedDirs(t, e.Dir, made)
	if len(o.Tree.Dirs) == 0 {
		return nil
	}
	paths, err := listTree(e.Dir, o.Tree.Dirs)
	if err != nil {
		removeAll(e.Dir, made)
		return fmt.Errorf("list what `%s` installed: %w", command, err)
	}
	o.Files, o.Paths = len(paths), paths
	if !e.Offline && !e.NoKeep && e.Cache.Dir != "" {
		o.fill, o.unfill = e.installFill(ctx, t)
	}
	return nil
}

// installedDirs are the folders an install of t left in dir (made: the
// top-level entries it added).
func installedDirs(t Tree, dir string, made []string) []string {
	switch {
	case t.Manager == "custom":
		return made
	case isNode(t):
		return nodeModulesDirs(dir)
	}
	return t.Dirs
}

// installFill fills a cache entry with hub's own install of t, in a
// private checkout of the base made for it in a scratch folder of the
// cache (with the user's .worktreeinclude files, as the job's had): no
// worker ever ran in it, and its tools' caches are ones no worker writes.
// The checkout is made now, before the job's worker starts (hub's git
// must not run beside the worker, whose end takes what runs then for its
// own); the install runs when the filler does, in the background. The
// tree's folders are then moved into the entry, links that named the
// checkout's own place absolutely made relative, and the checkout removed.
// unfill removes the checkout when the filler never ran (another job made
// the entry first). Nothing is returned when the checkout cannot be made:
// then the tree is not kept.
func (e Env) installFill(ctx context.Context, t Tree) (fill Filler, unfill func()) {
	if err := os.MkdirAll(e.Cache.Dir, 0o700); err != nil {
		return nil, nil
	}
	scratch, err := os.MkdirTemp(e.Cache.Dir, scratchPrefix+"src-")
	if err != nil {
		return nil, nil
	}
	unfill = func() { _ = removeTree(scratch) }
	src := filepath.Join(scratch, "src")
	c, err := gitx.MakeCheckout(ctx, e.Repo, gitx.CheckoutOptions{Dir: src, Index: filepath.Join(scratch, "index"), Base: e.Rev,
		PrivateGitDir: filepath.Join(scratch, "git")})
	if err == nil && e.Include != nil {
		err = e.Include(ctx, c)
	}
	if err != nil {
		unfill()
		return nil, nil
	}
	fill = func(ctx context.Context, tree string) (Filled, error) {
		f := Filled{}
		before := topEntries(src)
		step := e.Run(ctx, Where{Dir: src, Checkout: c, ForCache: true}, t.Install)
		if step.Failed() {
			return f, fmt.Errorf("hub's own install for the cache failed: %w", &Failure{What: "installing the dependencies", Command: t.Install, Step: step})
		}
		dirs := installedDirs(t, src, newEntries(src, before))
		for _, d := range dirs {
			to := filepath.Join(tree, filepath.FromSlash(d))
			if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
				return f, err
			}
			if err := os.Rename(filepath.Join(src, filepath.FromSlash(d)), to); err != nil {
				return f, err
			}
		}
		paths, err := listTree(tree, dirs)
		if err != nil {
			return f, err
		}
		if err := relativeLinks(src, tree, dirs); err != nil {
			return f, err
		}
		return Filled{Dirs: dirs, Origin: src, Files: len(paths)}, nil
	}
	return fill, unfill
}

// relativeLinks rewrites each link under dirs of tree whose target names a
// place under from (where the tree was made) absolutely into a link
// relative to its own folder, pointing at the same place in tree: the
// entry then moves and copies whole.
func relativeLinks(from, tree string, dirs []string) error {
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(tree, filepath.FromSlash(d)), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.Type()&fs.ModeSymlink == 0 {
				return err
			}
			target, err := os.Readlink(p)
			if err != nil || !filepath.IsAbs(target) {
				return err
			}
			rel, inside := pathx.Under(from, target)
			if !inside {
				return nil
			}
			to, err := filepath.Rel(filepath.Dir(p), filepath.Join(tree, rel))
			if err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(to, p)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Keep fills the cache from what Make did for o, to be run in the
// background once the job's checkout is ready: a tree installed or copied
// from the user's checkout becomes an entry — from hub's own install in a
// private checkout, or from the user's checkout, never from the job's —
// and every entry gets its ready copies. It returns the journal's line
// ("" when there was nothing to do). stored, when set, is called once the
// entry is there (or will not be made), before the ready copies are.
func (e Env) Keep(ctx context.Context, o Outcome, stored func()) string {
	stored = onceFunc(stored)
	defer stored()
	if o.unfill != nil {
		defer o.unfill()
	}
	if e.NoKeep || o.Key == "" || len(o.Tree.Dirs) == 0 || o.Source == "" {
		return ""
	}
	from := FromInstall
	if o.Source == SourceCheckout {
		from = FromCheckout
	}
	line := e.Cache.Keep(ctx, o.Key, Meta{Manager: o.Tree.Manager, Lockfile: o.Tree.Lockfile, Install: o.Tree.Install,
		Repo: e.Repo.Top, From: from, Relocate: o.Tree.Relocate}, o.fill, stored)
	if line == "" {
		return ""
	}
	return "hub's cache: " + line
}

// What an entry was made from (Meta.From).
const (
	FromInstall  = "hub's own install in a private checkout"
	FromCheckout = "your checkout"
)

// installFix is what to do when a tree's install failed.
func installFix(t Tree, offline bool) string {
	switch {
	case offline:
		return fmt.Sprintf("the lockfile or manifest changed, and at isolation untrusted nothing is installed with the network after the worker ran: review the change, then run the job at isolated, or run `%s` and the check yourself", t.Install)
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
