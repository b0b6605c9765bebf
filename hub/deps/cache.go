package deps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Cache is hub's environment cache: one folder per key (HUB_HOME/envs/<key>)
// holding the installed tree (tree/) and what it is (meta.json). An entry
// is made in a scratch folder beside the others and renamed into place
// whole, so a reader sees it complete or not at all; the time meta.json
// was last touched is when a job last used it.
type Cache struct{ Dir string }

// Meta describes one cache entry.
type Meta struct {
	Key      string    `json:"key"`
	Manager  string    `json:"manager"`
	Lockfile string    `json:"lockfile"`
	Install  string    `json:"install"`
	Repo     string    `json:"repo"`             // the repository the first job was of
	Dirs     []string  `json:"dirs"`             // the tree's folders, from the checkout's top
	Origin   string    `json:"origin,omitempty"` // the checkout it was installed in, for a tree that names its own path
	Relocate bool      `json:"relocate,omitempty"`
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

// CopyInto copies the entry's tree into the checkout dir and returns the
// paths it made.
func (e Entry) CopyInto(dir string, relocate bool) ([]string, error) {
	var reloc *relocation
	if relocate && e.Origin != "" && e.Origin != dir {
		reloc = &relocation{from: e.Origin, to: dir}
	}
	var all []string
	for _, d := range e.Dirs {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d))); err == nil {
			return all, fmt.Errorf("the checkout has a %s already", d)
		}
		paths, err := copyTree(filepath.Join(e.Path, "tree"), dir, d, reloc)
		all = append(all, paths...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// Store keeps a copy of the dirs of checkout dir (m.Dirs) as key's entry.
// It returns "" when it did, else why not; a failure leaves nothing behind.
// An entry another job stored first is kept, and this copy dropped.
func (c Cache) Store(key, dir string, m Meta) string {
	if c.Dir == "" {
		return "no cache folder"
	}
	if _, err := c.read(key); err == nil {
		return ""
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err.Error()
	}
	tmp, err := os.MkdirTemp(c.Dir, scratchPrefix+key[:min(12, len(key))]+"-")
	if err != nil {
		return err.Error()
	}
	fail := func(err error) string {
		_ = os.RemoveAll(tmp)
		return err.Error()
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return fail(err)
	}
	for _, d := range m.Dirs {
		if strings.Contains(d, "/") {
			if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(filepath.FromSlash(d))), 0o700); err != nil {
				return fail(err)
			}
		}
		paths, err := copyTree(dir, tree, d, nil)
		if err != nil {
			return fail(err)
		}
		m.Files += len(paths)
	}
	m.Key, m.Made, m.Origin = key, time.Now().UTC(), dir
	m.Bytes = size(tree)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), b, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, c.path(key)); err != nil {
		_ = os.RemoveAll(tmp)
		if _, rerr := c.read(key); rerr == nil {
			return "" // another job of the same lockfile stored it first
		}
		return err.Error()
	}
	return ""
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
// (a Go module cache copied into a tree keeps its 0555 folders).
func removeTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
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
