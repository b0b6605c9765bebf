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

	"github.com/google/jsonschema-go/jsonschema"
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
	// Each tool's arguments are its ...Args struct, beside its function.
	specs := []spec{
		newSpec(spec{
			name:     "read_file",
			desc:     `Read a text file, each line prefixed with its number ("  12| text"). For a long file, read a range with start_line and end_line (1-based, inclusive).`,
			readOnly: true,
		}, w.readFile, atLeast("start_line", 1), atLeast("end_line", 1)),
		newSpec(spec{
			name:     "list_dir",
			desc:     `List a directory as an indented tree ("/" marks directories), skipping .git and what .gitignore ignores.`,
			readOnly: true,
		}, w.listDir, between("depth", 1, 5)),
		newSpec(spec{
			name:     "glob",
			desc:     `Find files whose path matches a glob, e.g. "**/*.go" or "cmd/*/main.go" ("**" spans directories, {a,b} gives alternatives). Honours .gitignore.`,
			readOnly: true,
		}, w.glob),
		newSpec(spec{
			name:     "grep",
			desc:     "Search file contents with a Go regular expression; prints path:line: text. Honours .gitignore and skips binary files.",
			readOnly: true,
		}, w.grep, between("max_results", 1, maxGrepMax)),
		newSpec(spec{
			name: "write_file",
			desc: "Create or overwrite a file with the given content; missing parent directories are created.",
		}, w.writeFile),
		newSpec(spec{
			name: "edit_file",
			desc: "Replace old_text with new_text in a file. old_text must match exactly (whitespace included) and occur once, unless replace_all is set.",
		}, w.editFile),
		newSpec(spec{
			name: "run_shell",
			desc: fmt.Sprintf("Run a command with sh -c in the worktree root (no stdin) and return its exit code and output. Background processes are stopped when it returns; default timeout %ds.", int(w.opt.ShellTimeout/time.Second)),
		}, w.runShell, between("timeout_s", 1, int64(w.opt.MaxShellTimeout/time.Second))),
	}
	tools := make([]Tool, len(specs))
	for i, s := range specs {
		tools[i] = s.tool()
	}
	return tools
}

// spec describes a tool once: its arguments are a struct, A of [newSpec],
// from which come both the schema the model sees and the decoding.
type spec struct {
	name     string
	desc     string
	readOnly bool
	schema   *jsonschema.Schema // an object's, inferred from the struct
	run      func(ctx context.Context, raw json.RawMessage) (string, error)
}

// newSpec completes s (name, desc, readOnly) for a tool whose arguments
// decode into the struct A. The schema is inferred from A's fields by
// jsonschema-go: the properties are their json names, described by their
// jsonschema tags, and required unless "omitempty" (fields are string,
// bool or int64; an absent one is zero). bounds add minimum and maximum to
// integers. run gets the arguments once parse has checked them against the
// schema.
func newSpec[A any](s spec, run func(context.Context, A) (string, error), bounds ...bounds) spec {
	// A is fixed at compile time: a mistake in it panics in every test.
	schema, err := jsonschema.For[A](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", s.name, err))
	}
	for name, prop := range schema.Properties {
		if prop.Type != tString && prop.Type != tInteger && prop.Type != tBoolean {
			panic(fmt.Sprintf("tool %s: argument %q is not a string, int64 or bool", s.name, name))
		}
	}
	for _, b := range bounds {
		prop := schema.Properties[b.name]
		if prop == nil || prop.Type != tInteger {
			panic(fmt.Sprintf("tool %s: bounds for %q, not an integer argument", s.name, b.name))
		}
		prop.Minimum, prop.Maximum = b.min, b.max
	}
	s.schema = schema
	s.run = func(ctx context.Context, raw json.RawMessage) (string, error) {
		vals, err := s.parse(raw)
		if err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		var a A
		b, err := json.Marshal(vals)
		if err == nil {
			err = json.Unmarshal(b, &a)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %v", s.name, err) // parse has checked every value
		}
		return run(ctx, a)
	}
	return s
}

// bounds are an integer argument's minimum and maximum (nil: none).
type bounds struct {
	name     string
	min, max *float64
}

func atLeast(name string, min int64) bounds {
	return bounds{name: name, min: jsonschema.Ptr(float64(min))}
}

func between(name string, min, max int64) bounds {
	return bounds{name: name, min: jsonschema.Ptr(float64(min)), max: jsonschema.Ptr(float64(max))}
}

// The types arguments may have.
const (
	tString  = "string"
	tInteger = "integer"
	tBoolean = "boolean"
)

func (s spec) tool() Tool {
	// The model sees the schema as a plain map, its keys in JSON's order.
	b, err := json.Marshal(s.schema)
	var params map[string]any
	if err == nil {
		err = json.Unmarshal(b, &params)
	}
	if err != nil {
		panic(fmt.Sprintf("tool %s: schema: %v", s.name, err))
	}
	return Tool{
		Name:        s.name,
		Description: s.desc,
		Parameters:  params,
		ReadOnly:    s.readOnly,
		Run:         s.run,
	}
}

func (s spec) names() string {
	if len(s.schema.PropertyOrder) == 0 {
		return "none"
	}
	return strings.Join(s.schema.PropertyOrder, ", ")
}

// parse checks raw against the schema: a JSON object, no unknown
// arguments, the required ones present, each of the right type and range.
// A null value counts as absent. It returns the values present by name: a
// string, an int64 or a bool.
func (s spec) parse(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%s: arguments must be a JSON object (%v); the arguments are: %s", s.name, err, s.names())
	}
	var unknown []string
	for k := range fields {
		if _, ok := s.schema.Properties[k]; !ok {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: unknown argument %s; the arguments are: %s", s.name, strings.Join(unknown, ", "), s.names())
	}
	vals := map[string]any{}
	for _, name := range s.schema.PropertyOrder {
		prop := s.schema.Properties[name]
		v, ok := fields[name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if slices.Contains(s.schema.Required, name) {
				return nil, fmt.Errorf("%s: missing required argument %q (%s)", s.name, name, prop.Type)
			}
			continue
		}
		val, err := decode(name, prop, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		vals[name] = val
	}
	return vals, nil
}

// decode checks one argument's value against its property's schema.
func decode(name string, prop *jsonschema.Schema, v json.RawMessage) (any, error) {
	wrong := func() error {
		article := "a"
		if prop.Type == tInteger {
			article = "an"
		}
		return fmt.Errorf("argument %q must be %s %s, not %s", name, article, prop.Type, clip(string(v), 40))
	}
	switch prop.Type {
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
		lo, hi := prop.Minimum, prop.Maximum
		if lo != nil && f < *lo || hi != nil && f > *hi {
			switch {
			case lo != nil && hi != nil:
				return nil, fmt.Errorf("argument %q is %d; it must be between %d and %d", name, n, int64(*lo), int64(*hi))
			case lo != nil:
				return nil, fmt.Errorf("argument %q is %d; it must be at least %d", name, n, int64(*lo))
			default:
				return nil, fmt.Errorf("argument %q is %d; it must be at most %d", name, n, int64(*hi))
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("argument %q has an unknown type %s", name, prop.Type)
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
