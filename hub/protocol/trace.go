package protocol

import "time"

// TraceKind is what a trace entry is.
type TraceKind string

// Trace entry kinds.
const (
	TracePhase   TraceKind = "phase"   // a phase of hub's own: launch, prepare, run, commit, verify, finish
	TraceModel   TraceKind = "model"   // one model call of the built-in worker
	TraceTool    TraceKind = "tool"    // one tool call: the built-in worker's, or one an agent CLI reported
	TraceCommand TraceKind = "command" // a shell command an agent CLI or an ACP agent reported, with its exit code
)

// Trace phases, the top-level entries, in the order hub runs them.
const (
	PhaseLaunch  = "launch"  // from leaving the queue to the shim starting its work
	PhasePrepare = "prepare" // the checkout, what .worktreeinclude copies, and setup
	PhaseRun     = "run"     // the engine's run: the worker's own entry (a command) nests under it, and the steps it reported under that
	PhaseCommit  = "commit"  // hub committing what the worker left
	PhaseVerify  = "verify"  // the caller's check on the head commit
	PhaseFinish  = "finish"  // the evidence, the grade, and closing the job
)

// TraceEntry is one step of a job's trace: a journal event of kind trace
// carries one (without step and gap_us, which are set when the trace is read).
// The summaries are redacted and at most TraceSummaryMax characters.
type TraceEntry struct {
	Step   int       `json:"step,omitempty"`   // its place in the trace, by start, from 1
	ID     string    `json:"id"`               // unique within the job: a phase's name, worker for the engine's run, m3 for a model call, t4 for a tool call (2.m3 in an engine started again)
	Parent string    `json:"parent,omitempty"` // the entry it ran inside: run for the worker's own entry, worker for the engine's steps, a role's tool call for its sub-loop's
	Kind   TraceKind `json:"kind"`             // phase | model | tool | command
	Name   string    `json:"name"`             // the phase, the model that answered, the tool, or the command
	Start  time.Time `json:"start"`            // when it started
	// DurationUS is how long it took, in microseconds; 0 when the engine
	// reported the step without its end.
	DurationUS int64   `json:"duration_us"`
	TokensIn   int64   `json:"tokens_in,omitempty"`  // a model call's input tokens
	TokensOut  int64   `json:"tokens_out,omitempty"` // a model call's output tokens
	USD        float64 `json:"usd,omitempty"`        // a model call's cost
	// CostUnknown marks a model call the provider gave no price for.
	CostUnknown bool   `json:"cost_unknown,omitempty"`
	Args        string `json:"args,omitempty"`      // what it was given, in short
	Result      string `json:"result,omitempty"`    // what came back, in short
	ExitCode    *int   `json:"exit_code,omitempty"` // a command's exit code, when reported
	Failed      bool   `json:"failed,omitempty"`    // it failed: an error, a non-zero exit
	// GapUS, on an entry other entries ran inside, is the part of its
	// duration none of them covered: the engine's own time between steps.
	GapUS int64 `json:"gap_us,omitempty"`
}

// TraceSummaryMax bounds an entry's args and result, in characters.
const TraceSummaryMax = 200

// TraceParams asks for a job's trace, or a page of it.
type TraceParams struct {
	ID    string `json:"id"`              // the job id
	From  int    `json:"from,omitempty"`  // the first step to return (default 1)
	Limit int    `json:"limit,omitempty"` // at most this many entries (0: all)
}

// TraceResult is a job's trace: hub's phases, and inside the run phase the
// worker (the engine's run) and its model calls, tool calls and commands,
// ordered by start. The
// phases follow one another, so their durations add up to running_us, less
// the moments between them (phase_gap_us); an entry's children add up to it
// less its gap_us.
type TraceResult struct {
	ID    string `json:"id"`    // the job id
	State State  `json:"state"` // its state
	// Started is when hub took the job from its queue (absent while it waits).
	Started *time.Time `json:"started,omitempty"`
	// Ended is when it ended (absent while it runs).
	Ended *time.Time `json:"ended,omitempty"`
	// RunningUS is from started to ended (or to now).
	RunningUS int64 `json:"running_us"`
	// PhaseGapUS is the part of running_us no phase covered.
	PhaseGapUS int64        `json:"phase_gap_us"`
	Entries    []TraceEntry `json:"entries"` // the page asked for, by step
	Total      int          `json:"total"`   // entries in the whole trace
	// Next is the step to pass as from for the rest (0: none left).
	Next int `json:"next,omitempty"`
}
