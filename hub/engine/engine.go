// Package engine declares what every engine gives hub: what it can enforce,
// whether it is available here, and how to start a run in a job's directory.
// Engines are small and know nothing of the store or the daemon: the shim
// supervises them, and hands an engine that runs inside it the job's
// Mailbox. An engine must never outlive its Run: Stop and a
// cancelled context end its whole process group.
package engine

import (
	"context"
	"io"
	"sort"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/rubric"
)

// Engine is one way to run a worker. Implementations are safe for concurrent
// use: Start may be called for several jobs at once.
type Engine interface {
	Name() string
	Capabilities() protocol.EngineCapabilities
	// Probe says whether the engine can run on this machine, and why not.
	Probe(ctx context.Context) Availability
	// Check refuses a job the engine cannot take as asked, with a sentence
	// that says what to change. It runs before anything is created.
	Check(spec protocol.StartParams) error
	// Start launches a run. It returns once the run is started.
	Start(ctx context.Context, spec Spec) (Run, error)
}

// Availability is the outcome of Probe.
type Availability struct {
	Available bool
	Version   string
	Reason    string
}

// Mailbox is the job's mailbox for an engine that runs inside the shim (the
// built-in worker): the same questions, progress and steering an exec
// worker reaches through `hub ask` and `hub progress`. Safe for concurrent use.
type Mailbox interface {
	// Ask blocks until the supervisor replies or the ask times out.
	Ask(ctx context.Context, p protocol.AskParams) (*protocol.AskResult, error)
	// Progress records a note ("" records nothing) and returns queued steering.
	Progress(ctx context.Context, note string) ([]string, error)
	// Note records what the hub saw the worker do, as progress, and leaves
	// queued steering where it is (for the worker's own next call to take).
	Note(ctx context.Context, note string)
	// Spent records the run's cost so far.
	Spent(ctx context.Context, spent micros.Micros, c protocol.CostEvent)
	// Trace records a step of the run (a model call, a tool call, a
	// command) once it ended, for the job's trace: the mailbox redacts and
	// bounds its summaries, and nests it under the worker's own entry
	// unless it names a parent step of the same run.
	Trace(ctx context.Context, e protocol.TraceEntry)
}

// Spec is what a run needs.
type Spec struct {
	JobID string
	Dir   string // the job's worktree (or cwd for read jobs); the worker's cwd
	// Checkout is hub's record of the worktree (nil for a read job without
	// a repository): what a sandbox mounts and how the worktree's changes
	// are read, never what its .git says.
	Checkout *gitx.Checkout
	// BaseSHA is the commit the job started from ("" for a read job without a repo).
	BaseSHA string
	Params  protocol.StartParams
	// MaxMicros is the job's reserved budget.
	MaxMicros micros.Micros
	// Mailbox reaches the supervisor (engines in the shim use it; others ignore it).
	Mailbox Mailbox
	// Scratch is a private folder of the job's, for the engine's own files
	// (an agent CLI's config home); it exists and is empty at Start.
	Scratch string
	// HubBinary is the hub binary, for engines that hand a worker a hub
	// command (the worker MCP server).
	HubBinary string
	// Env is the environment for the worker, already built by the shim.
	Env []string
	// Cache is the job's folder for tools' caches at the isolated levels
	// (Go's module and build caches, npm's, pip's: the shim points them
	// there), writable in every sandbox of the job, so what its setup
	// downloaded is there for the worker and verify ("": none).
	Cache string
	// Limits is the job's budget of processes, memory and file size at the
	// isolated levels (hub/limit's Plan, joined by every sandboxed command
	// before it runs; zero: none), and Ports its TCP ports there (zero:
	// not fenced): see sandbox.Spec.
	Limits limit.Plan
	Ports  sandbox.PortRange
	// Output receives the worker's stdout and stderr, interleaved.
	Output io.Writer
}

// Run is a started worker.
type Run interface {
	// PGID is the process group the run's processes live in (0 if none).
	PGID() int
	// Wait blocks until the run ends and returns its outcome. It is called once.
	Wait() Outcome
	// Stop ends the run: a polite signal, then after grace a kill of the
	// whole process group. Wait then returns.
	Stop(grace time.Duration)
	// Heartbeat reports whether the worker is busy inside a step it is
	// allowed to take silently (a live command within its own timeout), so
	// the stall watchdog holds off.
	Heartbeat() bool
}

// Outcome is how a run ended.
type Outcome struct {
	ExitCode int    // -1 when killed by a signal or never started
	Signal   string // the signal that ended it, if any
	Err      error  // a failure to run at all
	// Summary is what the worker said it did (claimed, not verified).
	Summary string
	Model   string
	// Cost of the run; CostKnown false means hub must charge the whole reservation.
	CostMicros micros.Micros
	CostKnown  bool
	Tokens     int64
	Calls      int
	Models     []string // every model that answered, fallbacks included
	Duration   time.Duration
	Command    string // what hub ran, for the observed record
	// Failure says in words why a run that exited non-zero stopped
	// ("budget: …", "max_turns: …"); the job's error uses it.
	Failure string
	// Observed are commands the hub saw the worker run (an agent CLI's shell
	// commands, read from its event stream).
	Observed []protocol.ObservedCommand
	// Judgements are a model grader's verdicts on the definition of done's
	// judgement criteria, for the hub's own grade (mechanical criteria
	// are the hub's alone).
	Judgements []rubric.Judgement
	// Quota is what the provider said about the engine's remaining quota
	// during the run (rate-limit windows), newest last; the shim stores it
	// for the router.
	Quota []protocol.QuotaSignal
}

// Registry holds the engines by name.
type Registry struct {
	byName map[string]Engine
}

// NewRegistry returns a registry of the given engines.
func NewRegistry(engines ...Engine) *Registry {
	r := &Registry{byName: map[string]Engine{}}
	for _, e := range engines {
		r.byName[e.Name()] = e
	}
	return r
}

// Get returns the engine called name.
func (r *Registry) Get(name string) (Engine, bool) {
	e, ok := r.byName[name]
	return e, ok
}

// Names lists the engine names, sorted.
func (r *Registry) Names() []string {
	var n []string
	for k := range r.byName {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// All returns the engines sorted by name.
func (r *Registry) All() []Engine {
	var all []Engine
	for _, n := range r.Names() {
		all = append(all, r.byName[n])
	}
	return all
}
