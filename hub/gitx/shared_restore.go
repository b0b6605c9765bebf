package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// Restore compares the repository's shared config file and hooks folder
// with the baseline and puts back every difference, byte for byte and mode
// for mode. Whatever it replaces or removes it first copies into keepDir
// (the job's own folder; created 0700): the config to keepDir/config, the
// hooks folder's entries under keepDir/hooks/, symlinks as symlinks (a
// later Restore that keeps something again uses config.2, hooks.2, …;
// nothing kept is overwritten). A thing it could not keep a copy of is not
// touched.
//
// The config is written with git's own lock protocol (config.lock made
// with O_EXCL, written, synced and renamed over config), so a concurrent
// git never reads half a file and a git that holds the lock is never
// overwritten: Restore waits up to 2 s for another's config.lock and then
// gives up on the config. Symlinks a job may have planted are never
// followed: a hooks folder swapped for a symlink is replaced by a real
// folder again, and the symlink's target is not touched.
//
// It returns one SharedChange per difference, those it could not put back
// too, and an error that says what it could not do. On an unchanged
// repository it reads the two and returns nil, nil without starting git.
// It may be called any number of times; the baseline stays as it was.
func (w *SharedWatch) Restore(keepDir string) ([]SharedChange, error) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("restore shared state of %s: the watch of job %s is closed", w.commonDir, w.jobID)
	}
	if keepDir == "" {
		return nil, fmt.Errorf("restore shared state of %s: no folder to keep what is replaced in", w.commonDir)
	}
	if !w.changed() {
		return nil, nil
	}
	// Something differs: look again under the lock, which other jobs'
	// Restores of the repository take too, and put it back.
	unlock, err := lockState(w.dir)
	if err != nil {
		return nil, fmt.Errorf("restore shared state of %s: %w", w.commonDir, err)
	}
	defer unlock()
	live, err := liveHolders(w.dir)
	if err != nil {
		return nil, fmt.Errorf("restore shared state of %s: %w", w.commonDir, err)
	}
	r := &restorer{w: w, keep: &keeper{dir: keepDir}}
	r.config()
	r.hooks()
	others := slices.DeleteFunc(live, func(id string) bool { return id == w.jobID })
	if len(others) == 0 {
		others = nil
	}
	for i := range r.changes {
		r.changes[i].Others = others
	}
	return r.changes, errors.Join(r.errs...)
}

// changed reports whether the config or the guarded hooks folder differs
// from the baseline, or cannot be read; it reads, starts nothing and
// takes no lock.
func (w *SharedWatch) changed() bool {
	cur, err := currentEntry(filepath.Join(w.commonDir, "config"))
	if err != nil || !cur.same(w.base.Config) {
		return true
	}
	if w.base.HooksUnguarded != "" {
		return false
	}
	hooks := filepath.Join(w.commonDir, "hooks")
	root, err := statEntry(hooks, "")
	if err != nil || !root.same(w.base.Hooks) {
		return true
	}
	if root.Kind != kindDir {
		return false
	}
	entries, err := listTree(hooks, len(w.base.Entries)+1, maxHooksBytes*shareScanFactor, nil)
	return err != nil || !slices.EqualFunc(entries, w.base.Entries, sharedEntry.same)
}

// currentEntry describes the path p, with a regular file's size and sum.
func currentEntry(p string) (sharedEntry, error) {
	e, err := statEntry(p, "")
	if err != nil || e.Kind != kindFile {
		return e, err
	}
	return hashEntry(p, "")
}

// restorer is one Restore under the state lock: what it found and did.
type restorer struct {
	w       *SharedWatch
	keep    *keeper
	changes []SharedChange
	errs    []error
}

func (r *restorer) add(c SharedChange, err error) {
	if err != nil {
		c.Done = "not put back: " + err.Error()
		r.errs = append(r.errs, fmt.Errorf("put back %s: %w", c.Path, err))
	}
	r.changes = append(r.changes, c)
}

// config puts the config file back under git's lock.
func (r *restorer) config() {
	w := r.w
	cfg := filepath.Join(w.commonDir, "config")
	cur, err := currentEntry(cfg)
	if err == nil && cur.same(w.base.Config) {
		return
	}
	c := SharedChange{What: "config", Path: cfg, Found: "config changed"}
	lock := cfg + ".lock"
	lf, err := takeGitLock(lock, w.lockWait)
	if err != nil {
		if cur.Kind != "" {
			c.Found = r.describeConfig(cur, cfg)
		}
		r.add(c, err)
		return
	}
	locked := true
	unlock := func() {
		if locked {
			_ = lf.Close()
			_ = os.Remove(lock)
			locked = false
		}
	}
	defer unlock()
	// Under the lock no git changes it: this is what is replaced.
	if cur, err = currentEntry(cfg); err != nil {
		r.add(c, err)
		return
	}
	if cur.same(w.base.Config) {
		return
	}
	kept, err := r.keep.copyOut(cfg, cur, "config")
	if err != nil {
		c.Found = r.describeConfig(cur, cfg)
		r.add(c, fmt.Errorf("could not keep a copy of it: %w", err))
		return
	}
	c.Kept = kept
	switch base := w.base.Config; base.Kind {
	case kindFile:
		var b []byte
		if b, err = w.base.bytesOf(base); err == nil {
			err = writeLocked(lf, b, base.Mode, cfg)
			locked = err != nil // the rename consumed the lock file
		}
	case kindSymlink:
		err = replaceWithSymlink(cfg, base.Target)
	case kindMissing:
		err = removeEntry(cfg, cur)
	default:
		err = fmt.Errorf("it was %s, which hub does not make", describeEntry(base))
	}
	unlock()
	switch {
	case kept != "" && cur.Kind == kindFile:
		c.Found = r.describeConfig(cur, kept)
		c.Done = "put back; the changed file is kept at " + kept
	case kept != "":
		c.Found = r.describeConfig(cur, kept)
		c.Done = "put back; what was there is kept at " + kept
	default:
		c.Found = r.describeConfig(cur, cfg)
		c.Done = "put back"
	}
	r.add(c, err)
}

// takeGitLock makes lock with O_EXCL, as git does before it writes the file
// beside it, waiting up to wait while another holds it.
func takeGitLock(lock string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s exists after %v: a git is changing the config (or one died and left the lock); "+
				"hub left the config as it is, remove the lock if no git runs and restore again", lock, wait)
		}
		time.Sleep(lockPoll)
	}
}

// writeLocked writes b into the lock file lf with mode, syncs it and
// renames it over dst.
func writeLocked(lf *os.File, b []byte, mode fs.FileMode, dst string) error {
	if err := lf.Chmod(mode); err != nil {
		return err
	}
	if _, err := lf.Write(b); err != nil {
		return err
	}
	if err := lf.Sync(); err != nil {
		return err
	}
	if err := lf.Close(); err != nil {
		return err
	}
	return os.Rename(lf.Name(), dst)
}

// replaceWithSymlink makes p a symlink to target, replacing what is there
// (a folder is not replaced: remove it first).
func replaceWithSymlink(p, target string) error {
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".hub-link")
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// removeEntry removes what e describes at p: a folder with all it holds;
// never what a symlink points to.
func removeEntry(p string, e sharedEntry) error {
	switch e.Kind {
	case kindMissing:
		return nil
	case kindDir:
		return os.RemoveAll(p)
	default:
		return os.Remove(p)
	}
}

// describeConfig says how the config file now (cur, read at p: the kept
// copy or the live file) differs from the baseline: the keys whose values
// differ, as `git config --list` reads the two files.
func (r *restorer) describeConfig(cur sharedEntry, p string) string {
	base := r.w.base.Config
	switch {
	case cur.Kind == kindMissing:
		return "config removed"
	case cur.Kind != kindFile:
		return "config replaced by " + describeEntry(cur)
	case base.Kind != kindFile:
		return fmt.Sprintf("config written (%d bytes; was %s)", cur.Size, describeEntry(base))
	}
	var parts []string
	if cur.Sum != base.Sum {
		parts = append(parts, r.configKeys(p))
	}
	if cur.Mode != base.Mode {
		parts = append(parts, fmt.Sprintf("mode %s (was %s)", quoteMode(cur.Mode), quoteMode(base.Mode)))
	}
	return strings.Join(parts, "; ")
}

// maxKeysShown bounds the keys describeConfig names.
const maxKeysShown = 12

// configKeys names the keys whose values differ between the baseline
// config and the config file p.
func (r *restorer) configKeys(p string) string {
	old, err := r.w.base.bytesOf(r.w.base.Config)
	if err != nil {
		return "config changed (" + err.Error() + ")"
	}
	was, err := r.listConfig("-", old)
	if err != nil {
		return "config changed (" + err.Error() + ")"
	}
	cur, err := os.ReadFile(p)
	if err != nil {
		return "config changed (" + err.Error() + ")"
	}
	now, err := r.listConfig(p, nil)
	if err != nil {
		return "config changed; git cannot read it: " + err.Error()
	}
	keys := make([]string, 0, len(now)+len(was))
	for k := range now {
		keys = append(keys, k)
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	spelled := configSpellings(cur, old)
	var items []string
	for _, k := range keys {
		a, b := was[k], now[k]
		if slices.Equal(a, b) {
			continue
		}
		name := k
		if s, ok := spelled[k]; ok {
			name = s
		}
		switch {
		case len(a) == 0:
			items = append(items, fmt.Sprintf("%s = %s (was unset)", name, showValues(b)))
		case len(b) == 0:
			items = append(items, fmt.Sprintf("%s unset (was %s)", name, showValues(a)))
		default:
			items = append(items, fmt.Sprintf("%s = %s (was %s)", name, showValues(b), showValues(a)))
		}
	}
	switch {
	case len(items) == 0:
		return "config rewritten; no value changed (only comments, layout or order)"
	case len(items) > maxKeysShown:
		return strings.Join(items[:maxKeysShown], "; ") + fmt.Sprintf("; and %d more", len(items)-maxKeysShown)
	}
	return strings.Join(items, "; ")
}

// noValue stands for a key written without "=", which git reads as true.
const noValue = "\x00"

// listConfig reads the config file p ("-": the bytes stdin) with
// `git config --file p --list -z`, without includes: every key (as git
// spells it: section and name in lower case) with its values in order.
func (r *restorer) listConfig(p string, stdin []byte) (map[string][]string, error) {
	out, err := runGit(context.Background(), r.w.dir, configFileOpts(r.w.dir, stdin), "config", "--file", p, "--no-includes", "--list", "-z")
	if err != nil {
		return nil, err
	}
	m := map[string][]string{}
	for _, kv := range splitNUL(out) {
		k, v, ok := strings.Cut(string(kv), "\n")
		if !ok {
			v = noValue
		}
		m[k] = append(m[k], v)
	}
	return m, nil
}

// configFileOpts runs git on a config file from dir, a folder of hub's
// that is no repository, without looking for one above it, with stdin.
func configFileOpts(dir string, stdin []byte) runOpts {
	return runOpts{env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}, stdin: bytes.NewReader(stdin)}
}

func showValues(vs []string) string {
	shown := make([]string, len(vs))
	for i, v := range vs {
		switch {
		case v == noValue:
			v = "(no value)"
		case len(v) > 120:
			v = strconv.Quote(v[:117] + "...")
		case v == "" || strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
			v = strconv.Quote(v)
		}
		shown[i] = v
	}
	if len(shown) == 1 {
		return shown[0]
	}
	return "[" + strings.Join(shown, ", ") + "]"
}

// decodeConfig parses a config file in-process (go-git's parser, which
// keeps names as written and follows no include).
func decodeConfig(b []byte) (*gitconfig.Config, error) {
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(b)).Decode(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// configValue is the last value of section[.sub].key in the config file's
// bytes, "" when unset; false when they cannot be parsed in-process.
func configValue(b []byte, section, sub, key string) (string, bool) {
	cfg, err := decodeConfig(b)
	if err != nil {
		return "", false
	}
	if !cfg.HasSection(section) {
		return "", true
	}
	s := cfg.Section(section)
	if sub == "" {
		return s.Options.Get(key), true
	}
	if !s.HasSubsection(sub) {
		return "", true
	}
	return s.Subsection(sub).Options.Get(key), true
}

// configSpellings maps keys as `git config --list` prints them
// (core.hookspath) to how the config files spell them (core.hooksPath),
// the first file first.
func configSpellings(files ...[]byte) map[string]string {
	m := map[string]string{}
	set := func(canon, name string) {
		if _, ok := m[canon]; !ok {
			m[canon] = name
		}
	}
	for _, b := range files {
		cfg, err := decodeConfig(b)
		if err != nil {
			continue
		}
		for _, s := range cfg.Sections {
			for _, o := range s.Options {
				set(strings.ToLower(s.Name)+"."+strings.ToLower(o.Key), s.Name+"."+o.Key)
			}
			for _, ss := range s.Subsections {
				for _, o := range ss.Options {
					set(strings.ToLower(s.Name)+"."+ss.Name+"."+strings.ToLower(o.Key), s.Name+"."+ss.Name+"."+o.Key)
				}
			}
		}
	}
	return m
}

// hooks puts the hooks folder back: the folder itself, and every entry.
func (r *restorer) hooks() {
	w := r.w
	if w.base.HooksUnguarded != "" {
		return
	}
	root := filepath.Join(w.commonDir, "hooks")
	cur, err := statEntry(root, "")
	if err != nil {
		r.add(r.hookChange(root, "hooks folder cannot be read"), err)
		return
	}
	if w.base.Hooks.Kind == kindDir && cur.Kind == kindDir {
		entries, err := listTree(root, maxHooksEntries*shareScanFactor, maxHooksBytes*shareScanFactor, nil)
		if errors.Is(err, errTooBig) {
			r.add(r.hookChange(root, fmt.Sprintf("hooks folder now holds more than %d entries or %d MiB", maxHooksEntries*shareScanFactor, maxHooksBytes*shareScanFactor>>20)),
				errors.New("hub does not copy that much aside"))
			return
		}
		if err != nil {
			r.add(r.hookChange(root, "hooks folder cannot be read"), err)
			return
		}
		if cur.Mode != w.base.Hooks.Mode {
			c := r.hookChange(root, fmt.Sprintf("hooks folder mode %s (was %s)", quoteMode(cur.Mode), quoteMode(w.base.Hooks.Mode)))
			c.Done = "put back"
			r.add(c, os.Chmod(root, w.base.Hooks.Mode))
		}
		r.entries(root, entries)
		return
	}
	if cur.same(w.base.Hooks) {
		return
	}
	r.root(root, cur)
}

func (r *restorer) hookChange(p, found string) SharedChange {
	c := SharedChange{What: "hooks", Path: p, Found: found}
	if hp := r.w.base.HooksPath; hp != "" {
		c.Note = fmt.Sprintf("core.hooksPath is %s in the repository's config: git runs its hooks from there, not from %s",
			strconv.Quote(hp), filepath.Join(r.w.commonDir, "hooks"))
	}
	return c
}

// root handles a hooks folder that was replaced, removed or made: what
// is there is kept and removed, and the baseline's folder (or symlink)
// made again with all it held.
func (r *restorer) root(root string, cur sharedEntry) {
	base := r.w.base.Hooks
	var found string
	switch {
	case base.Kind == kindDir && cur.Kind == kindMissing:
		found = "hooks folder removed"
	case base.Kind == kindDir:
		found = "hooks folder replaced by " + describeEntry(cur)
	case base.Kind == kindMissing:
		found = "hooks folder made (" + describeEntry(cur) + ")"
	case cur.Kind == kindMissing:
		found = fmt.Sprintf("hooks folder (%s) removed", describeEntry(base))
	default:
		found = fmt.Sprintf("hooks folder (%s) replaced by %s", describeEntry(base), describeEntry(cur))
	}
	c := r.hookChange(root, found)
	if cur.Kind != kindMissing {
		kept, err := r.keep.copyOut(root, cur, "hooks")
		if err != nil {
			r.add(c, fmt.Errorf("could not keep a copy of it: %w", err))
			return
		}
		c.Kept = kept
		if err := removeEntry(root, cur); err != nil {
			r.add(c, err)
			return
		}
	}
	var err error
	switch base.Kind {
	case kindDir:
		if err = os.Mkdir(root, 0o700); err == nil {
			var errs []error
			for _, e := range r.w.base.Entries {
				errs = append(errs, r.put(root, e))
			}
			errs = append(errs, r.chmodDirs(root, r.w.base.Entries), os.Chmod(root, base.Mode))
			err = errors.Join(errs...)
		}
	case kindSymlink:
		err = replaceWithSymlink(root, base.Target)
	}
	switch {
	case c.Kept != "" && base.Kind == kindMissing:
		c.Done = "removed; it is kept at " + c.Kept
	case c.Kept != "":
		c.Done = "put back; what was there is kept at " + c.Kept
	default:
		c.Done = "put back"
	}
	r.add(c, err)
}

// entries puts back the entries of a hooks folder that is still a folder:
// cur is what it holds now, sorted by path.
func (r *restorer) entries(root string, cur []sharedEntry) {
	base := r.w.base.Entries
	was := make(map[string]sharedEntry, len(base))
	for _, e := range base {
		was[e.Path] = e
	}
	now := make(map[string]sharedEntry, len(cur))
	for _, e := range cur {
		now[e.Path] = e
	}
	paths := make([]string, 0, len(base)+len(cur))
	for _, e := range base {
		paths = append(paths, e.Path)
	}
	for _, e := range cur {
		if _, ok := was[e.Path]; !ok {
			paths = append(paths, e.Path)
		}
	}
	slices.SortFunc(paths, comparePaths)

	// gone: a current folder removed with all it held. quiet: a baseline
	// folder made again, reported once with all it holds.
	gone, quiet := "", ""
	for _, p := range paths {
		b, inBase := was[p]
		c, inNow := now[p]
		if gone != "" && isUnder(p, gone) {
			inNow = false
		}
		if quiet != "" && isUnder(p, quiet) {
			if inBase {
				r.errs = appendErr(r.errs, r.put(root, b))
			}
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		switch {
		case inBase && !inNow:
			ch := r.hookChange(full, removedText(b, countUnder(base, p)))
			ch.Done = "put back"
			r.add(ch, r.put(root, b))
			if b.Kind == kindDir {
				quiet = p
			}
		case !inBase && inNow:
			ch := r.hookChange(full, addedText(c, countUnder(cur, p)))
			if c.Kind == kindDir {
				gone = p
			}
			kept, err := r.keep.copyOut(full, c, "hooks/"+p)
			if err != nil {
				r.add(ch, fmt.Errorf("could not keep a copy of it: %w", err))
				continue
			}
			ch.Kept, ch.Done = kept, "removed; it is kept at "+kept
			r.add(ch, removeEntry(full, c))
		case inBase && inNow && !b.same(c):
			ch := r.hookChange(full, changedText(b, c))
			if b.Kind == c.Kind && (b.Kind == kindDir || b.Sum == c.Sum) {
				// Only the mode: folders get theirs at the end.
				ch.Done = "put back"
				var err error
				if b.Kind != kindDir {
					err = os.Chmod(full, b.Mode)
				}
				r.add(ch, err)
				continue
			}
			kept, err := r.keep.copyOut(full, c, "hooks/"+p)
			if err != nil {
				r.add(ch, fmt.Errorf("could not keep a copy of it: %w", err))
				if c.Kind == kindDir {
					gone = p
				}
				continue
			}
			ch.Kept = kept
			if b.Kind == kindFile && c.Kind == kindFile {
				ch.Done = "put back; the changed file is kept at " + kept
			} else {
				ch.Done = "put back; what was there is kept at " + kept
			}
			if b.Kind != c.Kind {
				if err := removeEntry(full, c); err != nil {
					r.add(ch, err)
					continue
				}
				if c.Kind == kindDir {
					gone = p
				}
				if b.Kind == kindDir {
					quiet = p
				}
			}
			r.add(ch, r.put(root, b))
		}
	}
	r.errs = appendErr(r.errs, r.chmodDirs(root, base))
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// chmodDirs gives the baseline's folders their modes, deepest first, once
// what they hold is in place.
func (r *restorer) chmodDirs(root string, base []sharedEntry) error {
	var errs []error
	for i := len(base) - 1; i >= 0; i-- {
		if e := base[i]; e.Kind == kindDir {
			p := filepath.Join(root, filepath.FromSlash(e.Path))
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() && fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != e.Mode {
				errs = append(errs, os.Chmod(p, e.Mode))
			}
		}
	}
	return errors.Join(errs...)
}

// put makes the baseline entry e in the hooks folder root again, over what
// is there (which is not a folder): a file from the baseline copy, a
// symlink, or a folder (0700 until chmodDirs gives it its mode).
func (r *restorer) put(root string, e sharedEntry) error {
	p := filepath.Join(root, filepath.FromSlash(e.Path))
	switch e.Kind {
	case kindFile:
		b, err := r.w.base.bytesOf(e)
		if err != nil {
			return err
		}
		return atomicfile.Write(p, b, e.Mode)
	case kindDir:
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case kindSymlink:
		return replaceWithSymlink(p, e.Target)
	}
	return fmt.Errorf("%s was %s, which hub does not make", p, describeEntry(e))
}

func isUnder(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

// countUnder counts the entries below the folder p.
func countUnder(es []sharedEntry, p string) int {
	n := 0
	for _, e := range es {
		if isUnder(e.Path, p) {
			n++
		}
	}
	return n
}

func describeEntry(e sharedEntry) string {
	switch e.Kind {
	case kindFile:
		return fmt.Sprintf("a file of %d bytes", e.Size)
	case kindDir:
		return "a folder"
	case kindSymlink:
		return "a symlink to " + e.Target
	case kindOther:
		return "a special file"
	}
	return "nothing"
}

func addedText(c sharedEntry, n int) string {
	switch c.Kind {
	case kindFile:
		return fmt.Sprintf("%s written (%d bytes)", c.Path, c.Size)
	case kindDir:
		return fmt.Sprintf("%s added (a folder of %d entries)", c.Path, n)
	}
	return fmt.Sprintf("%s added (%s)", c.Path, describeEntry(c))
}

func removedText(b sharedEntry, n int) string {
	if b.Kind == kindDir {
		return fmt.Sprintf("%s removed (a folder of %d entries)", b.Path, n)
	}
	return fmt.Sprintf("%s removed (was %s)", b.Path, describeEntry(b))
}

func changedText(b, c sharedEntry) string {
	if b.Kind != c.Kind {
		return fmt.Sprintf("%s replaced by %s (was %s)", c.Path, describeEntry(c), describeEntry(b))
	}
	var parts []string
	switch {
	case b.Kind == kindSymlink:
		parts = append(parts, fmt.Sprintf("now a symlink to %s (was to %s)", c.Target, b.Target))
	case b.Kind == kindFile && b.Sum != c.Sum:
		parts = append(parts, fmt.Sprintf("changed (%d bytes, was %d)", c.Size, b.Size))
	}
	if b.Mode != c.Mode {
		parts = append(parts, fmt.Sprintf("mode %s (was %s)", quoteMode(c.Mode), quoteMode(b.Mode)))
	}
	return c.Path + " " + strings.Join(parts, " and ")
}

// keeper copies what Restore replaces into the job's folder.
type keeper struct {
	dir   string
	hooks string // keepDir/hooks(.N) of this Restore, once made
}

// fresh is keepDir/name, or name.2, name.3, …: the first that does not
// exist.
func (k *keeper) fresh(name string) (string, error) {
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		p := filepath.Join(k.dir, name)
		if i > 1 {
			p += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
}

// copyOut copies the entry e at p into the keep folder and returns where:
// "config" and "hooks" (the folder itself) to a fresh name of their own,
// "hooks/<path>" under this Restore's hooks copy. Nothing is kept of a
// missing entry ("", nil).
func (k *keeper) copyOut(p string, e sharedEntry, name string) (string, error) {
	if e.Kind == kindMissing {
		return "", nil
	}
	var dst string
	var err error
	if rel, ok := strings.CutPrefix(name, "hooks/"); ok {
		if k.hooks == "" {
			if k.hooks, err = k.fresh("hooks"); err != nil {
				return "", err
			}
			if err := os.Mkdir(k.hooks, 0o700); err != nil {
				k.hooks = ""
				return "", err
			}
		}
		dst = filepath.Join(k.hooks, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return "", err
		}
	} else if dst, err = k.fresh(name); err != nil {
		return "", err
	}
	budget := maxHooksEntries * shareScanFactor
	if err := copyTree(p, dst, e, &budget); err != nil {
		_ = os.RemoveAll(dst)
		return "", err
	}
	return dst, nil
}

// copyTree copies the entry e at src to dst without following a symlink:
// a file with its bytes and permissions, a symlink as a symlink, a folder
// with what it holds (at most *budget entries in all). A special file is
// not copied.
func copyTree(src, dst string, e sharedEntry, budget *int) error {
	if *budget--; *budget < 0 {
		return errTooBig
	}
	switch e.Kind {
	case kindFile:
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = readEntry(src, "", out)
		if err := errors.Join(err, out.Close()); err != nil {
			return err
		}
		return os.Chmod(dst, e.Mode.Perm())
	case kindSymlink:
		return os.Symlink(e.Target, dst)
	case kindDir:
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, de := range ents {
			ce, err := statEntry(filepath.Join(src, de.Name()), "")
			if err != nil {
				return err
			}
			if err := copyTree(filepath.Join(src, de.Name()), filepath.Join(dst, de.Name()), ce, budget); err != nil {
				return err
			}
		}
		return os.Chmod(dst, e.Mode.Perm()|0o700)
	}
	return nil
}
