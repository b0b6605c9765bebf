package gitx

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// A linked worktree shares its repository's config file (<common>/config)
// and hooks folder (<common>/hooks) with the user's own checkout. Whatever
// runs in a job's linked worktree as the user (setup, installs, the worker)
// can write them: husky's `git config core.hooksPath .husky/_`, lefthook's
// hook scripts. hub cannot stop that, so it watches: WatchShared records
// the shared state when a job starts (its baseline) and Restore puts it
// back, byte for byte, keeping a copy of everything it replaces, and says
// what it found.
//
// Several jobs of one repository run at once, each in its own `hub shim`
// process, starting and ending in any order, and a shim may die without
// cleaning up. They share one baseline per repository, kept under the
// state folder hub gives WatchShared:
//
//	<stateDir>/<sha256(common dir)[:16]>/
//	    lock              flock(2): one process at a time reads or changes what is below
//	    baseline          one line of JSON (sharedBaseline: every path's kind, mode,
//	                      size, sha256, symlink target), then the bytes of the config
//	                      and of the hooks folder's regular files, one after another
//	    holders/<job id>  one per job watching; its shim holds an flock on it for its life
//
// A holder whose flock can be taken is dead (its process ended). A baseline
// whose holders are all dead is stale: the next job takes a new one. The
// last live holder to close removes the baseline.

// Bounds of what WatchShared guards: a hooks folder with more entries or
// bytes than these is recorded as too big, and only the config is guarded.
// Restore looks at up to shareScanFactor times as much in a changed folder.
const (
	maxHooksEntries = 512
	maxHooksBytes   = 16 << 20
	shareScanFactor = 4
)

const (
	// configLockWait is how long Restore waits for another git's
	// config.lock to go before it gives up putting the config back.
	configLockWait = 2 * time.Second
	// stateLockWait bounds the wait for the state folder's lock, which
	// other jobs hold for a few milliseconds at a time.
	stateLockWait = 10 * time.Second
	// lockPoll is how often a wait for a lock tries again.
	lockPoll = 5 * time.Millisecond
)

// SharedChange is one difference Restore found between the repository's
// shared config or hooks folder and the baseline, and what it did about it.
type SharedChange struct {
	What string `json:"what"` // "config" or "hooks"
	// Path is what differed: the config file, a hooks folder entry or the
	// hooks folder itself (absolute).
	Path string `json:"path"`
	// Found says what differed, for a person: for the config, every key
	// whose values differ (`core.hooksPath = .husky/_ (was unset)`); for
	// hooks, the entry (`pre-commit written (312 bytes)`).
	Found string `json:"found"`
	// Done says what hub did (`put back; the changed file is kept at …`),
	// or why it could not (`not put back: …`).
	Done string `json:"done"`
	// Kept is where the replaced or removed thing was copied, "" when
	// nothing was (an entry put back that was missing).
	Kept string `json:"kept,omitempty"`
	// Others are the other live jobs of the repository when Restore ran:
	// the change may be theirs, or the user's.
	Others []string `json:"others,omitempty"`
	// Note is what else the reader needs, such as a core.hooksPath that
	// makes git run hooks from elsewhere than this folder.
	Note string `json:"note,omitempty"`
}

// SharedWatch is one job's watch over its repository's shared config and
// hooks folder, from WatchShared to Close. Its methods are safe for
// concurrent use; Restore calls are serialized with each other and with
// those of other jobs of the repository, in any process.
type SharedWatch struct {
	jobID     string
	commonDir string
	dir       string // <stateDir>/<key>
	base      *sharedBaseline
	lockWait  time.Duration // how long Restore waits for a config.lock

	// stateMu guards holder and closed, and serializes Restore and Close.
	stateMu sync.Mutex
	holder  *flock.Flock
	closed  bool
}

// sharedBaseline is the first line of the baseline file.
type sharedBaseline struct {
	Version   int         `json:"version"`
	CommonDir string      `json:"common_dir"`
	Taken     time.Time   `json:"taken"`
	TakenBy   string      `json:"taken_by"`
	Config    sharedEntry `json:"config"`
	// HooksPath is core.hooksPath in the baseline config ("" when unset).
	HooksPath string `json:"hooks_path,omitempty"`
	// Hooks is the hooks folder itself (Path ""); Entries what is in it,
	// every level, sorted by path. HooksUnguarded says why the folder is
	// not guarded, "" when it is.
	Hooks          sharedEntry   `json:"hooks"`
	Entries        []sharedEntry `json:"entries,omitempty"`
	HooksUnguarded string        `json:"hooks_unguarded,omitempty"`

	path      string // the baseline file
	dataStart int64  // where the bytes start in it, after the first line
}

const sharedVersion = 1

// entryKind is what a path is: a regular file, a folder, a symlink, a
// special file (a fifo, a socket, a device), or nothing.
type entryKind string

const (
	kindFile    entryKind = "file"
	kindDir     entryKind = "dir"
	kindSymlink entryKind = "symlink"
	kindOther   entryKind = "other"
	kindMissing entryKind = "missing"
)

// sharedEntry is the state of one path: the config file, the hooks folder
// or an entry of it.
type sharedEntry struct {
	Path   string      `json:"path,omitempty"` // slash-separated, relative to the hooks folder
	Kind   entryKind   `json:"kind"`
	Mode   fs.FileMode `json:"mode,omitempty"` // permission, setuid, setgid and sticky bits; not for a symlink
	Size   int64       `json:"size,omitempty"` // a file's
	Sum    string      `json:"sum,omitempty"`  // a file's sha256, hex
	Target string      `json:"target,omitempty"`
	// Offset is where a file's bytes are in the baseline, from dataStart.
	Offset int64 `json:"offset,omitempty"`
}

// same compares what is on disk (not Offset).
func (e sharedEntry) same(o sharedEntry) bool {
	return e.Path == o.Path && e.Kind == o.Kind && e.Mode == o.Mode && e.Size == o.Size && e.Sum == o.Sum && e.Target == o.Target
}

var jobIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// WatchShared starts jobID's watch over r's shared config file and hooks
// folder, keeping its state under stateDir (created 0700; a folder of
// hub's, such as HUB_HOME/repos; nothing is written into the repository).
// Under the repository's state lock it takes a baseline of them unless a
// live job of the repository holds one already, which it then joins, and
// registers jobID as a live holder until Close (or the process's end).
// jobID must be a plain file name; a job already watched by a live
// process is an error. It starts no git process.
func WatchShared(stateDir string, r *Repo, jobID string) (*SharedWatch, error) {
	if r == nil || r.CommonDir == "" {
		return nil, errors.New("watch shared state: no repository; open it with gitx.Open first")
	}
	if !jobIDRe.MatchString(jobID) {
		return nil, fmt.Errorf("watch shared state of %s: job id %q is not a plain name (letters, digits, '.', '_', '-')", r.Top, jobID)
	}
	common, err := filepath.EvalSymlinks(r.CommonDir)
	if err != nil {
		return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
	}
	sum := sha256.Sum256([]byte(common))
	w := &SharedWatch{
		jobID:     jobID,
		commonDir: common,
		dir:       filepath.Join(stateDir, hex.EncodeToString(sum[:])[:16]),
		lockWait:  configLockWait,
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "holders"), 0o700); err != nil {
		return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
	}
	unlock, err := lockState(w.dir)
	if err != nil {
		return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
	}
	defer unlock()

	live, err := liveHolders(w.dir)
	if err != nil {
		return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
	}
	if slices.Contains(live, jobID) {
		return nil, fmt.Errorf("watch shared state of %s: job %s is already watched by a live process", r.Top, jobID)
	}
	if len(live) > 0 {
		w.base, err = readBaseline(w.dir)
		if err == nil && w.base.CommonDir != common {
			err = fmt.Errorf("the baseline in %s is of %s", w.dir, w.base.CommonDir)
		}
	}
	if w.base == nil || err != nil {
		// No live job holds a baseline (or it cannot be read): take one.
		if w.base, err = takeBaseline(w.dir, common, jobID); err != nil {
			return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
		}
	}
	if err := w.register(); err != nil {
		if len(live) == 0 {
			_ = os.Remove(filepath.Join(w.dir, "baseline"))
		}
		return nil, fmt.Errorf("watch shared state of %s: %w", r.Top, err)
	}
	return w, nil
}

// HooksPath is core.hooksPath in the baseline config, "" when unset: git
// then runs the repository's hooks from there, not from <common>/hooks
// (which the watch guards all the same).
func (w *SharedWatch) HooksPath() string { return w.base.HooksPath }

// HooksUnguarded says why the watch does not guard the hooks folder (it
// was too big), "" when it does.
func (w *SharedWatch) HooksUnguarded() string { return w.base.HooksUnguarded }

// Close ends the watch: it releases the job's holder, and the last live
// holder of the repository removes the baseline. It does not restore
// anything (call Restore first). Calling it again does nothing.
func (w *SharedWatch) Close() error {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	unlock, lerr := lockState(w.dir)
	_ = os.Remove(w.holder.Path())
	err := w.holder.Close()
	if lerr != nil {
		// Without the lock the baseline stays; with no live holder
		// left it is stale, and the next job takes a new one.
		return errors.Join(err, fmt.Errorf("close shared watch of %s: %w", w.commonDir, lerr))
	}
	defer unlock()
	live, lerr := liveHolders(w.dir)
	if lerr == nil && len(live) == 0 {
		if lerr = os.Remove(filepath.Join(w.dir, "baseline")); errors.Is(lerr, fs.ErrNotExist) {
			lerr = nil
		}
	}
	if lerr != nil {
		return errors.Join(err, fmt.Errorf("close shared watch of %s: %w", w.commonDir, lerr))
	}
	return err
}

// register makes w's holder file and takes its flock, held until Close.
func (w *SharedWatch) register() error {
	p := filepath.Join(w.dir, "holders", w.jobID)
	info := fmt.Sprintf("{\"job\":%q,\"pid\":%d,\"since\":%q}\n", w.jobID, os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(p, []byte(info), 0o600); err != nil {
		return err
	}
	fl := flock.New(p)
	ok, err := fl.TryLock()
	if err == nil && !ok {
		err = fmt.Errorf("job %s is already watched by a live process", w.jobID)
	}
	if err != nil {
		_ = os.Remove(p)
		return err
	}
	w.holder = fl
	return nil
}

// lockState takes the state folder's lock, waiting at most stateLockWait.
func lockState(dir string) (unlock func(), err error) {
	fl := flock.New(filepath.Join(dir, "lock"))
	ctx, cancel := context.WithTimeout(context.Background(), stateLockWait)
	defer cancel()
	ok, err := fl.TryLockContext(ctx, lockPoll)
	if err == nil && !ok {
		err = ctx.Err()
	}
	if err != nil {
		_ = fl.Close()
		return nil, fmt.Errorf("lock %s: %w", fl.Path(), err)
	}
	return func() { _ = fl.Close() }, nil
}

// liveHolders lists the jobs whose holders are alive, sorted, and removes
// the files of dead ones. The caller holds the state lock. A holder whose
// lock cannot be tried is counted as alive.
func liveHolders(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "holders"))
	if err != nil {
		return nil, err
	}
	var live []string
	for _, e := range ents {
		p := filepath.Join(dir, "holders", e.Name())
		fl := flock.New(p)
		ok, err := fl.TryLock()
		if err != nil || !ok {
			live = append(live, e.Name())
			continue
		}
		_ = os.Remove(p) // dead: its process ended without Close
		_ = fl.Close()
	}
	return live, nil // ReadDir sorts
}

// readBaseline reads the baseline's first line.
func readBaseline(dir string) (*sharedBaseline, error) {
	p := filepath.Join(dir, "baseline")
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	base := &sharedBaseline{path: p, dataStart: int64(len(line))}
	if err := json.Unmarshal(line, base); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if base.Version != sharedVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", p, base.Version, sharedVersion)
	}
	return base, nil
}

// bytesOf reads the baseline's copy of the file e and checks it is what
// the baseline recorded.
func (base *sharedBaseline) bytesOf(e sharedEntry) ([]byte, error) {
	f, err := os.Open(base.path)
	if err != nil {
		return nil, fmt.Errorf("read the baseline: %w", err)
	}
	defer f.Close()
	b := make([]byte, e.Size)
	if _, err := f.ReadAt(b, base.dataStart+e.Offset); err != nil {
		return nil, fmt.Errorf("read the baseline %s: %w", base.path, err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.Sum {
		return nil, fmt.Errorf("the baseline %s is damaged", base.path)
	}
	return b, nil
}

// takeBaseline records common's config and hooks folder into
// <dir>/baseline, replacing whatever is there. It is written beside and
// renamed into place, so a reader finds a whole baseline or none.
func takeBaseline(dir, common, jobID string) (*sharedBaseline, error) {
	base := &sharedBaseline{Version: sharedVersion, CommonDir: common, Taken: time.Now().UTC(), TakenBy: jobID, path: filepath.Join(dir, "baseline")}
	var data bytes.Buffer
	err := func() error {
		var err error
		cfg := filepath.Join(common, "config")
		if base.Config, err = statEntry(cfg, ""); err != nil {
			return err
		}
		if base.Config.Kind == kindFile {
			if base.Config, err = readEntry(cfg, "", &data); err != nil {
				return err
			}
			base.HooksPath = hooksPathOf(data.Bytes())
		}
		hooks := filepath.Join(common, "hooks")
		if base.Hooks, err = statEntry(hooks, ""); err != nil {
			return err
		}
		switch base.Hooks.Kind {
		case kindDir:
		case kindMissing, kindSymlink:
			return nil
		default:
			base.HooksUnguarded = fmt.Sprintf("%s is %s, not a folder; hub guards only the config", hooks, describeEntry(base.Hooks))
			return nil
		}
		entries, err := listTree(hooks, maxHooksEntries, maxHooksBytes, &data)
		if errors.Is(err, errTooBig) {
			base.HooksUnguarded = fmt.Sprintf("%s holds more than %d entries or %d MiB; hub guards only the config", hooks, maxHooksEntries, maxHooksBytes>>20)
			return nil
		}
		if err != nil {
			return err
		}
		base.Entries = entries
		return nil
	}()
	if err == nil {
		var line []byte
		if line, err = json.Marshal(base); err == nil {
			base.dataStart = int64(len(line)) + 1
			err = atomicfile.Replace(base.path, slices.Concat(line, []byte{'\n'}, data.Bytes()), 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("take a baseline of %s: %w", common, err)
	}
	return base, nil
}

// errTooBig: a folder holds more than the bound.
var errTooBig = errors.New("too big")

// statEntry describes the path p (without following a symlink at it); a
// regular file's Sum is left for the caller (hashEntry).
func statEntry(p, rel string) (sharedEntry, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return sharedEntry{Path: rel, Kind: kindMissing}, nil
	}
	if err != nil {
		return sharedEntry{}, err
	}
	return entryOf(p, rel, fi)
}

func entryOf(p, rel string, fi fs.FileInfo) (sharedEntry, error) {
	e := sharedEntry{Path: rel, Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
	switch {
	case fi.Mode().IsRegular():
		e.Kind, e.Size = kindFile, fi.Size()
	case fi.IsDir():
		e.Kind = kindDir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Kind, e.Mode = kindSymlink, 0
		t, err := os.Readlink(p)
		if err != nil {
			return sharedEntry{}, err
		}
		e.Target = t
	default:
		e.Kind = kindOther
	}
	return e, nil
}

// listTree lists what the folder root holds, every level, sorted by path,
// never following a symlink; regular files with their sums, and with a
// data buffer their bytes appended to it (and their Offsets in it). More
// than maxEntries entries or maxBytes bytes of files is errTooBig.
func listTree(root string, maxEntries int, maxBytes int64, data *bytes.Buffer) ([]sharedEntry, error) {
	var out []sharedEntry
	var total int64
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, de := range ents {
			if len(out) >= maxEntries {
				return errTooBig
			}
			p := filepath.Join(dir, de.Name())
			r := de.Name()
			if rel != "" {
				r = rel + "/" + de.Name()
			}
			e, err := statEntry(p, r)
			if err != nil {
				return err
			}
			if e.Kind == kindMissing {
				continue // gone since ReadDir
			}
			if e.Kind == kindFile {
				if total += e.Size; total > maxBytes {
					return errTooBig
				}
				if data == nil {
					e, err = hashEntry(p, r)
				} else {
					off := int64(data.Len())
					e, err = readEntry(p, r, data)
					e.Offset = off
				}
				if err != nil {
					return err
				}
			}
			out = append(out, e)
			if e.Kind == kindDir {
				if err := walk(p, r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b sharedEntry) int { return comparePaths(a.Path, b.Path) })
	return out, nil
}

// comparePaths orders slash-separated paths so that a folder comes right
// before what it holds ("a", "a/b", "a.x"), as a walk visits them.
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// hashEntry describes the regular file at p with its size and sum, read
// without following a symlink (one swapped in since is an error).
func hashEntry(p, rel string) (sharedEntry, error) {
	return readEntry(p, rel, nil)
}

// readEntry reads the regular file at p (never through a symlink, never
// blocking on a fifo) and describes it with its size and sum; with a w,
// it also copies its bytes there.
func readEntry(p, rel string, w io.Writer) (sharedEntry, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return sharedEntry{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sharedEntry{}, err
	}
	if !fi.Mode().IsRegular() {
		return sharedEntry{}, fmt.Errorf("%s is not a regular file", p)
	}
	e, _ := entryOf(p, rel, fi)
	h := sha256.New()
	var dst io.Writer = h
	if w != nil {
		dst = io.MultiWriter(w, h)
	}
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(dst, struct{ io.Reader }{f}, *buf) // not File.WriteTo, which allocates its own
	copyBufs.Put(buf)
	if err != nil {
		return sharedEntry{}, fmt.Errorf("read %s: %w", p, err)
	}
	e.Size, e.Sum = n, hex.EncodeToString(h.Sum(nil))
	return e, nil
}

// copyBufs are readEntry's buffers: hooks are small, and many.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// hooksPathOf reads core.hooksPath from the config file's bytes
// in-process, as git would (the last value wins; include.path is not
// followed); when it cannot parse them it asks git, which only happens
// for odd files.
func hooksPathOf(config []byte) string {
	if v, ok := configValue(config, "core", "", "hooksPath"); ok {
		return v
	}
	out, err := runGit(context.Background(), os.TempDir(), configFileOpts(os.TempDir(), config), "config", "--file", "-", "--no-includes", "--get", "core.hooksPath")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

// quoteMode formats a mode as git and ls users read it: 0755.
func quoteMode(m fs.FileMode) string {
	return "0" + strconv.FormatUint(uint64(m.Perm()), 8)
}
