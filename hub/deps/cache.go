package deps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Cache is hub's environment cache: one folder per key (HUB_HOME/envs/<key>)
// holding the installed tree (tree/), what it is (meta.json), and ready
// copies of the tree (spares/<n>/) that a job takes whole by a rename, so
// that only the first job of a lockfile waits for a copy: the next copy is
// made in the background while that job runs. An entry, and each spare, is
// made in a scratch folder beside the others and renamed into place whole,
// so a reader sees it complete or not at all; the time meta.json was last
// touched is when a job last used it.
type Cache struct{ Dir string }

// Meta describes one cache entry.
type Meta struct {
	Key      string   `json:"key"`
	Manager  string   `json:"manager"`
	Lockfile string   `json:"lockfile"`
	Install  string   `json:"install"`
	Repo     string   `json:"repo"`             // the repository of the job that made it
	From     string   `json:"from"`             // where the tree was copied from: a fresh install, your checkout
	Dirs     []string `json:"dirs"`             // the tree's folders, from the checkout's top
	Origin   string   `json:"origin,omitempty"` // the checkout it was installed in, for a tree that names its own path
	Relocate bool     `json:"relocate,omitempty"`
	// AbsLinks: a link in the tree names a place inside it absolutely, so
	// a copy cannot move (no spares).
	AbsLinks bool      `json:"abs_links,omitempty"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Made     time.Time `json:"made"`
}

// Entry is a cache entry found complete.
type Entry struct {
	Meta
	Path     string    // HUB_HOME/envs/<key>
	LastUsed time.Time // meta.json's modification time
}

// Spares is how many ready copies of a tree hub keeps: the jobs of one
// start_many that share a lockfile each find one.
const Spares = 2

const scratchPrefix = ".new-"

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key) }

// Lookup finds the entry of key; a half-made or unreadable one is not
// found. A hit is marked used now.
func (c Cache) Lookup(key string) (Entry, bool) {
	if c.Dir == "" {
		return Entry{}, false
	}
	e, err := c.read(key)
	if err != nil {
		return Entry{}, false
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(e.Path, "meta.json"), now, now)
	return e, true
}

func (c Cache) read(key string) (Entry, error) {
	p := c.path(key)
	b, err := os.ReadFile(filepath.Join(p, "meta.json"))
	if err != nil {
		return Entry{}, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Entry{}, err
	}
	if m.Key != key || len(m.Dirs) == 0 {
		return Entry{}, fmt.Errorf("cache entry %s: meta.json does not describe it", key)
	}
	fi, err := os.Stat(filepath.Join(p, "meta.json"))
	if err != nil {
		return Entry{}, err
	}
	return Entry{Meta: m, Path: p, LastUsed: fi.ModTime()}, nil
}

// Take moves one of the entry's ready copies into the checkout dir, whole:
// the copy is claimed by one rename (no two jobs get the same), then each
// of its folders renamed into place. It returns the paths it put in, and
// false when there was no copy to take (or it could not be moved: a
// checkout on another filesystem), having put in nothing.
func (e Entry) Take(dir string) ([]string, bool) {
	if e.Relocate || e.AbsLinks || e.absent(dir) != nil {
		return nil, false
	}
	spares, _ := os.ReadDir(filepath.Join(e.Path, "spares"))
	for _, sp := range spares {
		// Claimed into a scratch name of the cache (never into the
		// checkout, where a crash would leave it for a commit to find).
		claim := filepath.Join(filepath.Dir(e.Path), scratchPrefix+"claim-"+sp.Name())
		if err := os.Rename(filepath.Join(e.Path, "spares", sp.Name()), claim); err != nil {
			continue // another job took it
		}
		paths, moved, err := e.moveIn(claim, dir)
		_ = removeTree(claim)
		if err == nil {
			return paths, true
		}
		removeAll(dir, moved)
	}
	return nil, false
}

// moveIn renames a claimed copy's folders into dir, none of which may be
// there yet; it returns the paths put in and the folders it moved.
func (e Entry) moveIn(claim, dir string) (paths, moved []string, err error) {
	b, err := os.ReadFile(filepath.Join(claim, "paths"))
	if err != nil {
		return nil, nil, err
	}
	if err := e.absent(dir); err != nil {
		return nil, nil, err
	}
	for _, d := range e.Dirs {
		if err := os.Rename(filepath.Join(claim, "tree", filepath.FromSlash(d)), filepath.Join(dir, filepath.FromSlash(d))); err != nil {
			return nil, moved, err
		}
		moved = append(moved, d)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), moved, nil
}

// ErrInTheWay: the checkout already has one of a tree's folders (the
// commit tracks it, or .worktreeinclude copied it): nothing is put in.
var ErrInTheWay = errors.New("in the way")

// absent checks that none of the entry's folders is in dir.
func (e Entry) absent(dir string) error {
	for _, d := range e.Dirs {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d))); err == nil {
			return fmt.Errorf("the checkout has a %s already: %w", d, ErrInTheWay)
		}
	}
	return nil
}

// CopyInto copies the entry's tree into the checkout dir and returns the
// paths it made. When one of its folders is there already it puts in
// nothing (ErrInTheWay); when a copy fails it takes out what it made.
func (e Entry) CopyInto(dir string) ([]string, error) {
	var reloc *relocation
	if e.Relocate && e.Origin != "" && e.Origin != dir {
		reloc = &relocation{from: e.Origin, to: dir}
	}
	if err := e.absent(dir); err != nil {
		return nil, err
	}
	var all []string
	for i, d := range e.Dirs {
		cp, err := copyTree(filepath.Join(e.Path, "tree"), dir, d, reloc)
		all = append(all, cp.paths...)
		if err != nil {
			removeAll(dir, e.Dirs[:i+1])
			return nil, err
		}
	}
	return all, nil
}

// Filled is what a Filler put into a new entry's tree.
type Filled struct {
	Dirs     []string // the tree's folders, from the checkout's top
	Origin   string   // the checkout the tree was made in, for a tree that names its own path
	Files    int
	AbsLinks bool // a link in the tree names a place inside it absolutely
}

// A Filler puts a tree's folders into tree, an empty folder of a new entry
// no job can reach, from a source no worker can write: an install hub runs
// itself in a private checkout of the base, or the user's own checkout.
// It runs while the entry's lock is held.
type Filler func(ctx context.Context, tree string) (Filled, error)

// Keep makes sure the cache holds key's tree and its ready copies: when it
// has no entry yet, fill makes one (nil: none is made); then spares are
// made from the entry. An entry is read-only once made; every copy of it a
// job gets is the job's own, writable. It is meant to run in the
// background and returns what it did, in a line, or why it kept nothing.
// One Keep at a time per key (a second one returns at once). stored, when
// set, is called once the entry is there or will not be made.
func (c Cache) Keep(ctx context.Context, key string, m Meta, fill Filler, stored func()) string {
	stored = onceFunc(stored)
	defer stored()
	if c.Dir == "" {
		return "no cache folder"
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err.Error()
	}
	unlock, ok := lockKey(filepath.Join(c.Dir, "."+key+".lock"))
	if !ok {
		return "" // another job is at it
	}
	defer unlock()
	t0 := time.Now()
	var did []string
	e, err := c.read(key)
	if err != nil {
		if fill == nil {
			return ""
		}
		if why := c.store(ctx, key, m, fill); why != "" {
			return "not kept: " + why
		}
		if e, err = c.read(key); err != nil {
			return "not kept: " + err.Error()
		}
		did = append(did, fmt.Sprintf("kept %s (%d files, %s) as entry %s", strings.Join(e.Dirs, ", "), e.Files, e.From, key[:12]))
	}
	stored()
	n, why := c.refill(e)
	if n > 0 {
		did = append(did, fmt.Sprintf("made %d ready %s of entry %s", n, plural(n, "copy", "copies"), key[:12]))
	}
	if why != "" {
		did = append(did, why)
	}
	if len(did) == 0 {
		return ""
	}
	return strings.Join(did, "; ") + fmt.Sprintf(" in %s", time.Since(t0).Round(time.Millisecond))
}

// onceFunc is f called at most once (nil: a function that does nothing).
func onceFunc(f func()) func() {
	if f == nil {
		return func() {}
	}
	return sync.OnceFunc(f)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// store makes key's entry with fill, in a scratch folder renamed into
// place whole, its tree made read-only first; "" when it did.
func (c Cache) store(ctx context.Context, key string, m Meta, fill Filler) string {
	tmp, err := os.MkdirTemp(c.Dir, scratchPrefix+key[:min(12, len(key))]+"-")
	if err != nil {
		return err.Error()
	}
	fail := func(why string) string {
		_ = removeTree(tmp)
		return why
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return fail(err.Error())
	}
	f, err := fill(ctx, tree)
	if err != nil {
		return fail(err.Error())
	}
	if len(f.Dirs) == 0 {
		return fail("the install left no folder to keep")
	}
	m.Key, m.Made, m.Origin, m.Dirs, m.Files, m.AbsLinks = key, time.Now().UTC(), f.Origin, f.Dirs, f.Files, f.AbsLinks
	m.Bytes = size(tree)
	if err := makeReadOnly(tree); err != nil {
		return fail("make the entry read-only: " + err.Error())
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), b, 0o600); err != nil {
		return fail(err.Error())
	}
	if err := os.Rename(tmp, c.path(key)); err != nil {
		_ = removeTree(tmp)
		if _, rerr := c.read(key); rerr == nil {
			return "" // another job of the same lockfile stored it first
		}
		return err.Error()
	}
	return ""
}

// CopyFill fills an entry with a copy of dirs from the checkout from (the
// user's: never a job's, which its worker writes), kept only if nothing in
// them changed while they were copied (the user running an install
// meanwhile).
func CopyFill(from string, dirs []string) Filler {
	return func(_ context.Context, tree string) (Filled, error) {
		f := Filled{Dirs: dirs, Origin: from}
		stamps := map[string]stamp{}
		for _, d := range dirs {
			if strings.Contains(d, "/") {
				if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(filepath.FromSlash(d))), 0o700); err != nil {
					return f, err
				}
			}
			cp, err := copyTree(from, tree, d, nil)
			if err != nil {
				return f, err
			}
			f.Files += len(cp.paths)
			f.AbsLinks = f.AbsLinks || cp.absInside
			for k, v := range cp.stamps {
				stamps[k] = v
			}
		}
		if !unchanged(from, dirs, stamps) {
			return f, errors.New(strings.Join(dirs, ", ") + " changed while hub copied it")
		}
		return f, nil
	}
}

// refill makes ready copies of e's tree until it has Spares; it returns how
// many it made, and why it made none when it could not.
func (c Cache) refill(e Entry) (int, string) {
	if e.Relocate || e.AbsLinks {
		return 0, ""
	}
	dir := filepath.Join(e.Path, "spares")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err.Error()
	}
	made := 0
	for {
		have, _ := os.ReadDir(dir)
		if len(have) >= Spares {
			return made, ""
		}
		tmp, err := os.MkdirTemp(c.Dir, scratchPrefix+"spare-")
		if err != nil {
			return made, err.Error()
		}
		var paths []string
		err = os.Mkdir(filepath.Join(tmp, "tree"), 0o700)
		for _, d := range e.Dirs {
			if err != nil {
				break
			}
			if strings.Contains(d, "/") {
				err = os.MkdirAll(filepath.Join(tmp, "tree", filepath.Dir(filepath.FromSlash(d))), 0o700)
			}
			if err == nil {
				var cp copied
				cp, err = copyTree(filepath.Join(e.Path, "tree"), filepath.Join(tmp, "tree"), d, nil)
				paths = append(paths, cp.paths...)
			}
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, "paths"), []byte(strings.Join(paths, "\x00")+"\x00"), 0o600)
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, filepath.Base(tmp)))
		}
		if err != nil {
			_ = removeTree(tmp)
			return made, "no ready copy: " + err.Error()
		}
		made++
	}
}

// Drop removes key's entry: renamed aside first, so no job finds it
// half-removed (one copying from it at that moment fails, and installs).
func (c Cache) Drop(key string) error {
	if c.Dir == "" || key == "" || strings.ContainsAny(key, `/\.`) {
		return fmt.Errorf("no such cache entry %q", key)
	}
	aside, err := os.MkdirTemp(c.Dir, scratchPrefix+"drop-")
	if err != nil {
		return err
	}
	if err := os.Rename(c.path(key), filepath.Join(aside, key)); err != nil {
		_ = os.Remove(aside)
		return err
	}
	return removeTree(aside)
}

// Scratch is a folder an unfinished Store left (its process died
// mid-copy), with how old it is.
type Scratch struct {
	Path  string
	Bytes int64
	Age   time.Duration
}

// List reads every complete entry, most recently used first, and the
// scratch folders left by stores that never finished.
func (c Cache) List() ([]Entry, []Scratch, error) {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []Entry
	var scratch []Scratch
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		if strings.HasPrefix(d.Name(), scratchPrefix) {
			p := filepath.Join(c.Dir, d.Name())
			s := Scratch{Path: p, Bytes: size(p)}
			if fi, err := d.Info(); err == nil {
				s.Age = time.Since(fi.ModTime())
			}
			scratch = append(scratch, s)
			continue
		}
		if e, err := c.read(d.Name()); err == nil {
			out = append(out, e)
		} else {
			// An entry whose meta.json is gone or broken: a scratch
			// folder in all but name.
			p := filepath.Join(c.Dir, d.Name())
			scratch = append(scratch, Scratch{Path: p, Bytes: size(p), Age: 24 * time.Hour})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, scratch, nil
}

// RemoveScratch removes a scratch folder List returned.
func (c Cache) RemoveScratch(s Scratch) error {
	if filepath.Dir(s.Path) != filepath.Clean(c.Dir) {
		return fmt.Errorf("%s is not in the cache", s.Path)
	}
	return removeTree(s.Path)
}

// removeTree removes p, making read-only folders in it writable first
// (an entry's tree, a Go module cache copied into a tree) — through no
// link: see makeWritable.
func removeTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	_ = makeWritable(p)
	return os.RemoveAll(p)
}

// makeReadOnly takes every write permission off the files and folders of
// a new entry's tree (hub's own, which nothing else can reach yet): an
// entry is never written once made. Links are left as they are.
func makeReadOnly(tree string) error {
	return filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	})
}

// size is the apparent size of the files under p.
func size(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
