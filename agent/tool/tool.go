// Package tool owns the built-in worker's tools: reading, writing and
// editing files, listing, globbing and searching the tree, and running shell
// commands, all confined to one job's worktree (the root of a [Workspace]).
// It knows nothing of models, the hub's store or the mailbox: the agent loop
// offers [Workspace.Tools] to a model and shows it what they return.
//
// What it must never do:
//   - touch a path outside the root: every path goes through
//     [Workspace.Resolve], which cleans it, resolves its symlinks and refuses
//     anything that lands outside; file I/O then goes through an [os.Root], so
//     a symlink swapped in later cannot lead outside either. Nor write into
//     .git: the hub manages git itself.
//   - pass the hub's secrets to a command: run_shell gets exactly the
//     environment in [Options.Env] (already scrubbed by the caller) or a
//     minimal one, never the hub's own.
//     run_shell starts commands in the root, but a shell reaches whatever
//     the user running it can: fencing commands in is the caller's sandbox's
//     job, not this package's.
//   - leave a command's processes behind: each command runs in its own
//     process group, killed whole on timeout, on cancellation and when the
//     command returns.
package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tool is one tool offered to a model.
type Tool struct {
	Name string
	// Description is one or two short sentences: the model pays for every token.
	Description string
	// Parameters is the JSON Schema of the arguments object: type object,
	// properties, required and additionalProperties false.
	Parameters map[string]any
	// ReadOnly tools change nothing; they are the ones offered to the
	// read-only reviewer role.
	ReadOnly bool
	// Run runs the tool on the model's arguments (a JSON object). An error it
	// returns is shown to the model as the tool result (prefixed "error: "),
	// so its text says what to do next.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
}

// Options tune a Workspace; the zero value (or nil) gives the defaults.
type Options struct {
	// Env is the environment of shell commands, already scrubbed by the
	// caller, used as given. Nil means a minimal one: PATH, HOME, LANG=C.UTF-8,
	// TERM=dumb and TMPDIR. Either way HOME is added from Home when missing.
	Env []string
	// Wrap, when set, rewrites the argv of every shell command (for
	// instance to run it in a sandbox); an error it returns fails the command.
	Wrap func(argv []string) ([]string, error)
	// Home is HOME for commands. Empty means a temporary directory made on
	// first use and removed by [Workspace.Close].
	Home string
	// ShellTimeout is the default timeout of one command (default 2m); the
	// model may ask for less, or for more up to MaxShellTimeout (default 10m).
	ShellTimeout    time.Duration
	MaxShellTimeout time.Duration
	// MaxOutput is how many bytes of a command's output are kept (default
	// 16 KiB): the head and the tail, the middle replaced by a note.
	MaxOutput int
	// MaxRead is how many bytes read_file returns at most (default 64 KiB),
	// with a note on how to read the rest.
	MaxRead int
}

// Defaults and fixed limits.
const (
	DefaultShellTimeout    = 2 * time.Minute
	DefaultMaxShellTimeout = 10 * time.Minute
	DefaultMaxOutput       = 16 << 10
	DefaultMaxRead         = 64 << 10

	maxLineLen     = 2000 // bytes of one line read_file shows
	maxGrepLineLen = 300  // bytes of one matching line grep shows
	maxListEntries = 500  // list_dir entries
	maxGlobResults = 500  // glob results
	defaultGrepMax = 100  // grep matches by default
	maxGrepMax     = 1000 // grep matches at most
	binarySniff    = 8 << 10
	killGrace      = 2 * time.Second // between SIGTERM and SIGKILL
	drainWait      = 5 * time.Second // for the output pipe after SIGKILL
)

// Workspace is a worktree the tools work in. Its methods are safe for
// concurrent use.
type Workspace struct {
	root string // absolute, symlinks resolved
	opt  Options

	busy atomic.Int32 // commands running within their timeout

	homeOnce sync.Once
	home     string
	homeErr  error
	homeMade bool // home is a temporary directory of ours
}

// New returns a Workspace rooted at root, which must be an existing
// directory; its symlinks are resolved once, here. o may be nil.
func New(root string, o *Options) (*Workspace, error) {
	if root == "" {
		return nil, errors.New("tool: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("tool: root %q: %w", root, err)
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("tool: root %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("tool: root %q: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("tool: root %q is not a directory", root)
	}
	w := &Workspace{root: abs}
	if o != nil {
		w.opt = *o
		w.opt.Env = slices.Clone(o.Env) // nil stays nil
	}
	if w.opt.ShellTimeout <= 0 {
		w.opt.ShellTimeout = DefaultShellTimeout
	}
	if w.opt.MaxShellTimeout <= 0 {
		w.opt.MaxShellTimeout = DefaultMaxShellTimeout
	}
	if w.opt.MaxShellTimeout < w.opt.ShellTimeout {
		w.opt.MaxShellTimeout = w.opt.ShellTimeout
	}
	if w.opt.MaxOutput <= 0 {
		w.opt.MaxOutput = DefaultMaxOutput
	}
	if w.opt.MaxRead <= 0 {
		w.opt.MaxRead = DefaultMaxRead
	}
	return w, nil
}

// Root returns the worktree root, absolute and with symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Busy reports whether a shell command is running within its timeout; the
// hub's stall watchdog holds off then.
func (w *Workspace) Busy() bool { return w.busy.Load() > 0 }

// Close removes the temporary HOME made for commands, if one was made. The
// tools must not be run after Close.
func (w *Workspace) Close() error {
	w.homeOnce.Do(func() {}) // no HOME is made after Close
	if w.homeMade {
		return os.RemoveAll(w.home)
	}
	return nil
}

// Tools returns all the tools, in a stable order: the read-only ones first.
func (w *Workspace) Tools() []Tool {
	specs := []spec{
		w.readFileSpec(),
		w.listDirSpec(),
		w.globSpec(),
		w.grepSpec(),
		w.writeFileSpec(),
		w.editFileSpec(),
		w.runShellSpec(),
	}
	tools := make([]Tool, len(specs))
	for i, s := range specs {
		tools[i] = s.tool()
	}
	return tools
}

// spec describes a tool once: its schema and its validation both come from
// params.
type spec struct {
	name     string
	desc     string
	readOnly bool
	params   []param
	run      func(ctx context.Context, a args) (string, error)
}

type paramType string

const (
	tString  paramType = "string"
	tInteger paramType = "integer"
	tBoolean paramType = "boolean"
)

type param struct {
	name     string
	typ      paramType
	desc     string
	required bool
	min, max *int64 // integers only
}

func bound(n int64) *int64 { return &n }

func (s spec) tool() Tool {
	props := map[string]any{}
	var required []string
	for _, p := range s.params {
		prop := map[string]any{"type": string(p.typ), "description": p.desc}
		if p.min != nil {
			prop["minimum"] = *p.min
		}
		if p.max != nil {
			prop["maximum"] = *p.max
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	schema := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		schema["required"] = required
	}
	return Tool{
		Name:        s.name,
		Description: s.desc,
		Parameters:  schema,
		ReadOnly:    s.readOnly,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := s.parse(raw)
			if err != nil {
				return "", err
			}
			if err := ctx.Err(); err != nil {
				return "", err
			}
			return s.run(ctx, a)
		},
	}
}

// args are validated arguments: string, int64 or bool values by name.
type args map[string]any

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) integer(name string, def int64) int64 {
	if n, ok := a[name].(int64); ok {
		return n
	}
	return def
}

func (a args) has(name string) bool {
	_, ok := a[name]
	return ok
}

func (a args) boolean(name string) bool {
	b, _ := a[name].(bool)
	return b
}

func (s spec) names() string {
	var n []string
	for _, p := range s.params {
		n = append(n, p.name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// parse checks raw against the parameters: a JSON object, no unknown
// arguments, the required ones present, each of the right type and range.
// A null value counts as absent.
func (s spec) parse(raw json.RawMessage) (args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%s: arguments must be a JSON object (%v); the arguments are: %s", s.name, err, s.names())
	}
	byName := map[string]param{}
	for _, p := range s.params {
		byName[p.name] = p
	}
	var unknown []string
	for k := range fields {
		if _, ok := byName[k]; !ok {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: unknown argument %s; the arguments are: %s", s.name, strings.Join(unknown, ", "), s.names())
	}
	a := args{}
	for _, p := range s.params {
		v, ok := fields[p.name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if p.required {
				return nil, fmt.Errorf("%s: missing required argument %q (%s)", s.name, p.name, p.typ)
			}
			continue
		}
		val, err := p.decode(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		a[p.name] = val
	}
	return a, nil
}

func (p param) decode(v json.RawMessage) (any, error) {
	wrong := func() error {
		article := "a"
		if p.typ == tInteger {
			article = "an"
		}
		return fmt.Errorf("argument %q must be %s %s, not %s", p.name, article, p.typ, clip(string(v), 40))
	}
	switch p.typ {
	case tString:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, wrong()
		}
		return s, nil
	case tBoolean:
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, wrong()
		}
		return b, nil
	case tInteger:
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, wrong()
		}
		n := int64(f)
		if p.min != nil && n < *p.min || p.max != nil && n > *p.max {
			switch {
			case p.min != nil && p.max != nil:
				return nil, fmt.Errorf("argument %q is %d; it must be between %d and %d", p.name, n, *p.min, *p.max)
			case p.min != nil:
				return nil, fmt.Errorf("argument %q is %d; it must be at least %d", p.name, n, *p.min)
			default:
				return nil, fmt.Errorf("argument %q is %d; it must be at most %d", p.name, n, *p.max)
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("argument %q has an unknown type %s", p.name, p.typ)
}

// clip shortens s to at most n bytes (on a rune boundary) with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
