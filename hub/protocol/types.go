package protocol

import (
	"encoding/json"
	"strings"
	"time"
)

// State is a job's lifecycle state:
//
//	queued → preparing → running ⇄ needs_input → verifying → succeeded | failed | cancelled | timed_out
type State string

const (
	StateQueued     State = "queued"
	StatePreparing  State = "preparing"
	StateRunning    State = "running"
	StateNeedsInput State = "needs_input"
	StateVerifying  State = "verifying"
	StateSucceeded  State = "succeeded"
	StateFailed     State = "failed"
	StateCancelled  State = "cancelled"
	StateTimedOut   State = "timed_out"
)

// States lists every state in lifecycle order.
var States = []State{StateQueued, StatePreparing, StateRunning, StateNeedsInput, StateVerifying,
	StateSucceeded, StateFailed, StateCancelled, StateTimedOut}

// Terminal reports whether s is an ending: no further change will happen.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateCancelled, StateTimedOut:
		return true
	}
	return false
}

// Active reports whether a shim owns the job (it holds a slot).
func (s State) Active() bool {
	switch s {
	case StatePreparing, StateRunning, StateNeedsInput, StateVerifying:
		return true
	}
	return false
}

// Categories of a job that did not succeed: the step it failed at.
const (
	CategoryPrepare = "prepare" // hub could not make the job's checkout
	CategorySetup   = "setup"   // installing its dependencies or its setup command failed
	CategoryWorker  = "worker"  // the worker failed, or could not start
	CategoryCommit  = "commit"  // hub could not commit what the worker left
	CategoryVerify  = "verify"  // the check failed on the commit
	CategoryRubric  = "rubric"  // the definition of done was not met
	CategoryStopped = "stopped" // stopped by a caller, or hub shut it down
	CategoryTimeout = "timeout" // the job ran past its timeout
	CategoryRemote  = "remote"  // a remote queue could not run it, or its worker could not push its branch back
	CategoryLimit   = "limit"   // it hit one of its limits: processes, memory, disk, or a file too big to commit
)

// CategoryOf is why a job that ended in state did not succeed: category
// when one was named, else what the state says (a failure with no step
// named is the worker's); "" for a success.
func CategoryOf(state State, category string) string {
	switch {
	case state == StateSucceeded || !state.Terminal():
		return ""
	case category != "":
		return category
	case state == StateCancelled:
		return CategoryStopped
	case state == StateTimedOut:
		return CategoryTimeout
	}
	return CategoryWorker
}

// Categories lists every category.
var Categories = []string{CategoryPrepare, CategorySetup, CategoryWorker, CategoryCommit, CategoryVerify, CategoryRubric, CategoryStopped, CategoryTimeout, CategoryLimit}

// EnvStep is one step of making a job's checkout ready: a dependency tree
// (from hub's cache, your checkout, or installed), or the setup command.
type EnvStep struct {
	What       string   `json:"what"`                  // dependencies | setup
	Manager    string   `json:"manager,omitempty"`     // npm, pnpm, yarn, bun, go, pip, uv, cargo, custom
	Lockfile   string   `json:"lockfile,omitempty"`    // what pins the tree
	Command    string   `json:"command,omitempty"`     // the command that installs it, or the setup command
	Dirs       []string `json:"dirs,omitempty"`        // where the tree is in the checkout (node_modules, .venv)
	Source     string   `json:"source,omitempty"`      // hub's cache | your checkout | installed; empty when skipped
	Skipped    string   `json:"skipped,omitempty"`     // why nothing was put in
	Files      int      `json:"files,omitempty"`       // files put in the checkout
	DurationMS int64    `json:"duration_ms"`           // how long the step took
	Failed     bool     `json:"failed,omitempty"`      // it failed: the job did not run
	OutputTail string   `json:"output_tail,omitempty"` // a failed command's first error lines and the end of its output, redacted
}

// Kind is a job's kind: write or read.
type Kind string

// Kinds of job.
const (
	KindWrite Kind = "write" // changes code on a branch hub/<id>
	KindRead  Kind = "read"  // answers a question about the code; no branch, nothing kept
)

// Kinds lists every kind of job.
var Kinds = []Kind{KindWrite, KindRead}

// Efforts lists the efforts a start may ask of the engines that take one.
var Efforts = []string{"low", "medium", "high"}

// Isolation is an isolation level: what hub enforces around a job's worker.
type Isolation string

// Isolation levels, weakest first.
const (
	IsolationWorktree  Isolation = "worktree"  // own worktree and branch: prevents collisions, not a sandbox
	IsolationSandbox   Isolation = "sandbox"   // the engine's own sandbox
	IsolationIsolated  Isolation = "isolated"  // bubblewrap or Landlock: read-only system, private HOME
	IsolationUntrusted Isolation = "untrusted" // isolated, and no network for the worker's commands
)

// IsolationLevels lists the levels, weakest first.
var IsolationLevels = []Isolation{IsolationWorktree, IsolationSandbox, IsolationIsolated, IsolationUntrusted}

// JoinIsolation joins levels with sep, as messages list them.
func JoinIsolation(levels []Isolation, sep string) string {
	s := make([]string, len(levels))
	for i, l := range levels {
		s[i] = string(l)
	}
	return strings.Join(s, sep)
}

// Pays is how an engine pays for its work.
type Pays string

// How an engine pays.
const (
	PaysFree         Pays = "free"         // spends no money: books none unless the caller sets a budget
	PaysAPI          Pays = "api"          // spends dollars: each job reserves its budget against the monthly cap
	PaysSubscription Pays = "subscription" // a plan's quota windows, not dollars per job
)

// PaysModes lists every way an engine pays.
var PaysModes = []Pays{PaysFree, PaysAPI, PaysSubscription}

// InitializeParams opens a session.
type InitializeParams struct {
	ClientName      string `json:"client_name,omitempty"`      // who connects, for the daemon's log
	ClientVersion   string `json:"client_version,omitempty"`   // the client's version
	ProtocolVersion string `json:"protocol_version,omitempty"` // the protocol version the client was written for
}

// InitializeResult says who answers and what it can do.
type InitializeResult struct {
	ServerVersion   string   `json:"server_version"`   // hub's version
	ProtocolVersion string   `json:"protocol_version"` // the protocol version the daemon speaks
	PID             int      `json:"pid"`              // the daemon's process id
	Home            string   `json:"home"`             // HUB_HOME of this daemon
	Capabilities    []string `json:"capabilities"`     // what it offers; see Capabilities
	// Settings are the HUB_* settings of the environment the daemon was
	// started with, which hold for its whole life (config.json, read on
	// every request, does not need a restart).
	Settings map[string]string `json:"settings,omitempty"`
}

// StartParams describes one job. Only Task is required (plus Repo for a
// write job). Zero values mean the defaults written beside each field.
type StartParams struct {
	Task string `json:"task"` // what the worker should do, as you would tell a colleague (required)
	// Repo is the git repository the job works on (absolute or relative to the caller).
	Repo string `json:"repo,omitempty"`
	// Cwd is where a read job runs when it has no repo.
	Cwd string `json:"cwd,omitempty"`
	// Base is the revision the job starts from (default HEAD).
	Base string `json:"base,omitempty"`
	// Kind is write (default) or read.
	Kind Kind `json:"kind,omitempty"`
	// Files are where the worker should look first.
	Files []string `json:"files,omitempty"`
	// Engine names the engine (default auto: the router picks one that can take the job; hub route explain says why).
	Engine string `json:"engine,omitempty"`
	// Exec is the shell command the exec engine runs as the worker.
	Exec    string `json:"exec,omitempty"`
	Profile string `json:"profile,omitempty"` // the built-in worker's model profile (default: the default profile)
	Model   string `json:"model,omitempty"`   // the model, for engines that take one
	Effort  string `json:"effort,omitempty"`  // low, medium or high, for engines that take it
	// MaxUSD is the budget reserved before work (default from config; 0 means no spend).
	MaxUSD   *float64 `json:"max_usd,omitempty"`
	MaxTurns int      `json:"max_turns,omitempty"` // a turn limit for agent engines (0: the engine's own)
	// TimeoutS is the hard run timeout in seconds (default 1800).
	TimeoutS int `json:"timeout_s,omitempty"`
	// Isolation is worktree (default), sandbox, isolated or untrusted.
	Isolation Isolation `json:"isolation,omitempty"`
	// Verify is a shell command run on the head commit in a clean checkout.
	Verify string `json:"verify,omitempty"`
	// VerifyTimeoutS bounds verify (default 600).
	VerifyTimeoutS   int    `json:"verify_timeout_s,omitempty"`
	DefinitionOfDone string `json:"definition_of_done,omitempty"` // what done means; the rubric grades the result against it
	// AskTimeoutS is how long a question waits for a reply before the worker goes on (default 600).
	AskTimeoutS int `json:"ask_timeout_s,omitempty"`
	// StallTimeoutS is how long a worker may be silent, with no live command, before it is stopped (default 600).
	StallTimeoutS int `json:"stall_timeout_s,omitempty"`
	// Setup is a shell command run in the job's checkout (and verify's) after its dependencies are in, before the worker starts; it replaces the repository's (.hub.json). A failing setup fails the job with category setup.
	Setup string `json:"setup,omitempty"`
	// Deps says how dependencies are made ready: auto (default: from the lockfiles), off, or a shell command that installs them (cached like an install); it replaces the repository's (.hub.json).
	Deps string `json:"deps,omitempty"`
	// SetupTimeoutS bounds the dependencies' install and the setup command, each (default 900).
	SetupTimeoutS int `json:"setup_timeout_s,omitempty"`
	// Queue runs the job on a remote queue's workers (config.json queues) instead of this machine.
	Queue string `json:"queue,omitempty"`
	// Limits bound the job (each field left out: hub's config).
	Limits *Limits `json:"limits,omitempty"`
}

// Limits bound a job. Processes, memory and disk hold at isolated and
// untrusted, where hub's sandbox runs every command of the job (a job that
// hits one ends failed, category limit, naming it); FileMB holds at every
// level: no file larger is committed onto the job's branch.
type Limits struct {
	Processes int `json:"processes,omitempty"` // processes and threads at once (config limit_processes, default 1024)
	MemoryMB  int `json:"memory_mb,omitempty"` // memory of all its processes together (config limit_memory_mb, default 8192)
	DiskMB    int `json:"disk_mb,omitempty"`   // what its checkout, caches and scratch folders hold on disk (config limit_disk_mb, default 20480)
	FileMB    int `json:"file_mb,omitempty"`   // the largest file hub commits (config max_file_mb, default 100)
}

// StartResult is what start returns at once, before the job is prepared.
type StartResult struct {
	ID        string    `json:"id"`               // the new job's id
	State     State     `json:"state"`            // queued, or preparing when a slot was free
	Engine    string    `json:"engine"`           // the engine that runs it
	Branch    string    `json:"branch,omitempty"` // hub/<id>, for a write job
	Base      string    `json:"base,omitempty"`   // the resolved base commit
	Isolation Isolation `json:"isolation"`        // the isolation level it runs at
	// Notes say what the caller should know: uncommitted changes not carried,
	// isolation is not a sandbox, why an engine was picked.
	Notes []string `json:"notes,omitempty"`
}

// StartManyParams starts several jobs; each is validated and started on its own.
type StartManyParams struct {
	Jobs []StartParams `json:"jobs"` // the jobs to start, each as job/start takes it
}

// StartManyItem is one job's outcome: a StartResult, or an error.
type StartManyItem struct {
	*StartResult
	Error *ItemError `json:"error,omitempty"`
}

// ItemError is a per-item failure in a batch.
type ItemError struct {
	Code    int64  `json:"code"`            // an ErrorCodes value
	Message string `json:"message"`         // what went wrong
	Hint    string `json:"hint,omitempty"`  // what to do
	Field   string `json:"field,omitempty"` // the parameter at fault
}

// StartManyResult keeps the order of the request.
type StartManyResult struct {
	Results []StartManyItem `json:"results"` // one per job asked, in order
}

// IDParams names one job.
type IDParams struct {
	ID string `json:"id"` // the job id
}

// Question is a worker's pending question (or blocker).
type Question struct {
	ID      string    `json:"id"`                // the question id, for job/reply
	Kind    string    `json:"kind"`              // question | blocker
	Text    string    `json:"text"`              // what the worker asks
	Context string    `json:"context,omitempty"` // what the worker says it needs the answer for
	AskedAt time.Time `json:"asked_at"`          // when it was asked
	// ExpiresAt is when the worker stops waiting and goes on with its most conservative choice.
	ExpiresAt time.Time `json:"expires_at"`
	Cursor    int64     `json:"cursor"` // the cursor of its journal event
}

// JobStatus is the short view of a job.
type JobStatus struct {
	ID       string    `json:"id"`                 // the job id (8 characters); its branch is hub/<id>
	State    State     `json:"state"`              // where the job is in its lifecycle
	Kind     Kind      `json:"kind"`               // write or read
	Engine   string    `json:"engine"`             // the engine running it (the router's pick when started with auto)
	Model    string    `json:"model,omitempty"`    // the model, for engines that take one
	Repo     string    `json:"repo,omitempty"`     // the repository's top
	Branch   string    `json:"branch,omitempty"`   // hub/<id>, for a write job
	Base     string    `json:"base,omitempty"`     // the commit the job started from
	Head     string    `json:"head,omitempty"`     // the last commit hub recorded for the job (the branch tip at the end)
	Task     string    `json:"task"`               // first line, shortened
	Progress string    `json:"progress,omitempty"` // the worker's latest progress note
	Question *Question `json:"question,omitempty"` // the oldest pending question, while the state is needs_input
	// Cost is what it spent so far (the final cost once ended), the shape
	// the evidence has; known is false when an engine could not price a
	// call, and the whole reservation is then charged.
	Cost Cost `json:"cost"`
	// OldCostUSD and OldCostKnown are cost.usd and cost.known under their
	// names before 0.2, still sent for this release; read cost.
	OldCostUSD   float64 `json:"cost_usd"`
	OldCostKnown bool    `json:"cost_known"`
	// VerifyExit is verify's exit code, once it ran.
	VerifyExit *int       `json:"verify_exit,omitempty"`
	Salvaged   bool       `json:"salvaged,omitempty"` // hub committed what the worker left after an unclean end
	Error      string     `json:"error,omitempty"`    // why the job failed, was cancelled or timed out
	Category   string     `json:"category,omitempty"` // why it did not succeed, as one of Categories
	CreatedAt  time.Time  `json:"created_at"`         // when start accepted the job
	EndedAt    *time.Time `json:"ended_at,omitempty"` // when it ended
	ElapsedMS  int64      `json:"elapsed_ms"`         // milliseconds from creation to now, or to the end
	// Target is the branch the job's work would land on (the branch its base was on).
	Target string `json:"target,omitempty"`
	// Forecast is hub's prediction of landing it: conflicts with the target and with other live jobs.
	Forecast *Forecast `json:"forecast,omitempty"`
	// Landed is set once the job's work landed on a branch (hub land).
	Landed *Landing `json:"landed,omitempty"`
	// Rubric is the verdict of its definition of done once it ended
	// (satisfied | needs_revision | failed | unknown; see Rubric).
	Rubric string `json:"rubric,omitempty"`
	// Alerts name what the job did beyond its branch that its reader must
	// know: refs it moved in the user's repository, a stash it took, files
	// of the base it deleted. One line each.
	Alerts []string `json:"alerts,omitempty"`
	// Cursor is the cursor of the job's latest event.
	Cursor int64 `json:"cursor"`
}

// StepParams asks for an account of a step of work done in a repository
// (by the supervisor itself, or anyone): what its real state shows, and
// where the claim and the state disagree.
type StepParams struct {
	Title string `json:"title,omitempty"` // the step in a few words (default: the claim's first sentence)
	Claim string `json:"claim"`           // what you say the step did, as statements to check (required)
	Repo  string `json:"repo"`            // the repository, absolute (required; hub step defaults it to its directory)
	// Since is the commit the step started from (default HEAD: the
	// uncommitted work only).
	Since string `json:"since,omitempty"`
	// Check is a command hub runs on the work tree as it is (the tests):
	// its outcome outranks the claim's "tests pass".
	Check   string   `json:"check,omitempty"`
	Profile string   `json:"profile,omitempty"` // the model profile that narrates (default: the cheapest priced one with its key)
	MaxUSD  *float64 `json:"max_usd,omitempty"` // the most the narration may cost (default 0.05)
	// TimeoutS bounds the wait for the account (default 600): past it the
	// step's job keeps running and hub result <id> has it later.
	TimeoutS int `json:"timeout_s,omitempty"`
}

// StepResult is the account of a step.
type StepResult struct {
	ID    string `json:"id"`    // the step's job: hub result <id> --evidence has what hub observed
	State State  `json:"state"` // succeeded once narrated; running when the wait timed out
	// Text is the narration, what hub observed, then each statement of the
	// claim the state contradicts, could not settle or backs.
	Text string `json:"text"`
	// Disagree is true when the state contradicts a statement of the claim.
	Disagree bool `json:"disagree"`
	Cost     Cost `json:"cost"`
}

// ListParams filters job/list. Empty means every job, newest first.
type ListParams struct {
	States []State `json:"states,omitempty"` // only jobs in these states
	Repo   string  `json:"repo,omitempty"`   // only jobs of this repository (its top)
	Limit  int     `json:"limit,omitempty"`  // at most this many (0 or absent: every job)
}

// ListResult holds jobs newest first.
type ListResult struct {
	Jobs []JobStatus `json:"jobs"` // newest first
}

// WaitParams: wait until every job (or, with Any, one job) has ended or needs
// input, or until the timeout. A job that needs input counts only when its
// question came after Since, so a caller that saw a question can wait again
// for the others.
type WaitParams struct {
	IDs      []string `json:"ids"`                 // the jobs to wait for
	TimeoutS float64  `json:"timeout_s,omitempty"` // default 300, at most 3600
	Any      bool     `json:"any,omitempty"`       // return when the first one is ready, not all
	Since    int64    `json:"since,omitempty"`     // a cursor from an earlier wait: only questions newer than it count
}

// WaitResult is returned as soon as the condition holds, or at the timeout.
type WaitResult struct {
	Jobs []JobStatus `json:"jobs"` // the listed jobs, in the order asked
	// Unknown lists the ids hub has no job for.
	Unknown []string `json:"unknown,omitempty"`
	// Done says the condition held; false means the timeout came first.
	Done bool `json:"done"`
	// Cursor is the newest event cursor seen; pass it as Since next time.
	Cursor int64 `json:"cursor"`
}

// Event is one entry of a job's journal.
type Event struct {
	Cursor int64           `json:"cursor"`         // its place in hub's history: one counter for every job, only growing
	JobID  string          `json:"job_id"`         // the job it belongs to
	At     time.Time       `json:"at"`             // when it happened
	Kind   EventKind       `json:"kind"`           // one of EventKinds
	Text   string          `json:"text,omitempty"` // the text, by kind (see EventKinds)
	Data   json.RawMessage `json:"data,omitempty"` // structured data, by kind (see EventKinds)
}

// EventKind is the kind of a journal event: what its text and data hold.
type EventKind string

// Event kinds.
const (
	EventState     EventKind = "state"     // Text: the new state; Data: {"from":..., "reason":...}
	EventProgress  EventKind = "progress"  // Text: the worker's note
	EventQuestion  EventKind = "question"  // Data: Question
	EventAnswer    EventKind = "answer"    // Data: {"question_id":..., "expired":bool}
	EventSteer     EventKind = "steer"     // Text: the message, as queued
	EventDelivered EventKind = "delivered" // Text: steering delivered to the worker
	EventCommand   EventKind = "command"   // Data: {"command":..., "exit_code":..., "duration_ms":...} observed by hub
	EventOutput    EventKind = "output"    // Text: a line of worker output (redacted)
	EventCommit    EventKind = "commit"    // Data: {"sha":..., "salvage":bool}
	EventVerify    EventKind = "verify"    // Data: Verify
	EventError     EventKind = "error"     // Text: what went wrong
	EventNote      EventKind = "note"      // Text: something hub wants the reader to know
	EventCost      EventKind = "cost"      // Data: CostEvent; what a running job has spent so far
	EventConflict  EventKind = "conflict"  // Text: the forecast's conflicts in one line ("" when they cleared); Data: Forecast
	EventLand      EventKind = "land"      // Text: what landed where; Data: Landing
	EventTrace     EventKind = "trace"     // Text: the step in one line; Data: TraceEntry
)

// EventKinds lists every kind of event.
var EventKinds = []EventKind{EventState, EventProgress, EventQuestion, EventAnswer, EventSteer, EventDelivered,
	EventCommand, EventOutput, EventCommit, EventVerify, EventError, EventNote, EventCost, EventConflict, EventLand, EventTrace}

// CostEvent is a running job's spend so far, read from the provider's answers.
type CostEvent struct {
	USD    float64 `json:"usd"`
	Known  bool    `json:"known"` // false once a call had no known price
	Tokens int64   `json:"tokens"`
	Calls  int     `json:"calls"`
	Model  string  `json:"model,omitempty"` // the model of the last call
}

// EventsParams reads a job's journal from a cursor.
type EventsParams struct {
	ID    string `json:"id,omitempty"` // empty: every job
	Since int64  `json:"since,omitempty"`
	Limit int    `json:"limit,omitempty"` // default 500
}

// EventsResult holds events in cursor order.
type EventsResult struct {
	Events []Event `json:"events"` // oldest first
	Cursor int64   `json:"cursor"` // the cursor of the last event returned (since, when none); pass it as since to read on
}

// ResultParams asks for a job's result: the summary by default, the full
// text with Full, the evidence JSON with Evidence.
type ResultParams struct {
	ID       string `json:"id"`                 // the job id
	Full     bool   `json:"full,omitempty"`     // add the full text: the worker's own words, verify output, log tail
	Evidence bool   `json:"evidence,omitempty"` // add the evidence: what hub observed
}

// ResultResult carries what was asked for.
type ResultResult struct {
	ID       string    `json:"id"`                 // the job id
	State    State     `json:"state"`              // its state
	Summary  string    `json:"summary"`            // about ten lines: outcome, files, commits, verify, rubric, what is left to do
	Full     string    `json:"full,omitempty"`     // with full: the summary and everything behind it
	Evidence *Evidence `json:"evidence,omitempty"` // with evidence: what hub observed, apart from what the worker claimed
}

// Evidence is what hub observed of a job, kept apart from what the worker claimed.
type Evidence struct {
	ID    string `json:"id"`    // the job id
	State State  `json:"state"` // its state when the evidence was taken
	// OldStatus is state under its name before 0.2, still sent for this release; read state.
	OldStatus State        `json:"status,omitempty"`
	Kind      Kind         `json:"kind"`               // write or read
	Engine    string       `json:"engine"`             // the engine that ran it
	Model     string       `json:"model,omitempty"`    // the model that answered, when known
	Repo      string       `json:"repo,omitempty"`     // the repository's top
	Base      string       `json:"base,omitempty"`     // the commit it started from
	Head      string       `json:"head,omitempty"`     // the commit it ended on
	Branch    string       `json:"branch,omitempty"`   // its branch
	Isolation Isolation    `json:"isolation"`          // the isolation level it ran at
	Files     []FileChange `json:"files"`              // the files of base..head
	Commits   []Commit     `json:"commits"`            // the commits of base..head, oldest first
	Verify    *Verify      `json:"verify,omitempty"`   // the check's outcome on the head commit, when one ran
	Observed  Observed     `json:"observed"`           // what hub saw itself
	Claimed   Claimed      `json:"claimed"`            // what the worker said, unverified
	Cost      Cost         `json:"cost"`               // what it cost
	Timings   Timings      `json:"timings"`            // time spent in each phase
	Rubric    *Rubric      `json:"rubric,omitempty"`   // the grade against the definition of done
	Salvaged  bool         `json:"salvaged"`           // hub committed what the worker left after an unclean end
	Error     string       `json:"error,omitempty"`    // why it did not succeed
	Category  string       `json:"category,omitempty"` // why it did not succeed, as one of Categories
	// Env is how the job's checkout was made ready before the worker ran: each dependency tree and the setup command.
	Env   []EnvStep `json:"env,omitempty"`
	Notes []string  `json:"notes,omitempty"` // what the caller should know (isolation, routing, uncommitted changes left behind)
}

// Rubric is the grade of a result against its definition of done: what
// the hub checked itself (by "hub") outranks what a model judged (by "model").
type Rubric struct {
	Verdict  string            `json:"verdict"`  // satisfied | needs_revision | failed | unknown (nothing failed, a criterion could not be checked)
	Line     string            `json:"line"`     // the verdict in one line
	Criteria []RubricCriterion `json:"criteria"` // each criterion with its verdict and evidence
	// GraderError says why judgement criteria stayed unknown.
	GraderError string `json:"grader_error,omitempty"`
}

// RubricCriterion is one criterion with its verdict and the evidence for it.
type RubricCriterion struct {
	ID       string   `json:"id"`                 // c1, c2, …
	Text     string   `json:"text"`               // the criterion
	Kind     string   `json:"kind"`               // verify | changed | unchanged | only | judgement
	Status   string   `json:"status"`             // pass | fail | unknown
	Evidence string   `json:"evidence,omitempty"` // what decided it
	By       string   `json:"by,omitempty"`       // hub | model
	Paths    []string `json:"paths,omitempty"`    // the files it is about
}

// FileChange is one file of base..head.
type FileChange struct {
	Path    string `json:"path"`               // the path relative to the repository's top
	OldPath string `json:"old_path,omitempty"` // renames and copies
	Change  string `json:"change"`             // added | modified | deleted | renamed | copied | type_changed
	Added   int    `json:"added"`              // lines; -1 for binary
	Deleted int    `json:"deleted"`
}

// Commit is one commit of base..head, oldest first.
type Commit struct {
	SHA     string `json:"sha"`     // the full commit id
	Subject string `json:"subject"` // the first line of its message
	Author  string `json:"author"`  // "Name <email>"
	// ByHub marks a commit hub made of what the worker left uncommitted.
	ByHub   bool `json:"by_hub,omitempty"`
	Salvage bool `json:"salvage,omitempty"`
}

// Verify is the outcome of the caller's check on the head commit.
type Verify struct {
	Command    string `json:"command"`     // the shell command
	ExitCode   int    `json:"exit_code"`   // its exit code (-1 when it could not run or was killed)
	TimedOut   bool   `json:"timed_out"`   // it ran past its timeout and was killed
	DurationMS int64  `json:"duration_ms"` // how long it ran
	OutputTail string `json:"output_tail"` // the end of its output, redacted
	// Commit is the commit verify ran on.
	Commit string `json:"commit"`
	// Deps says, one line per dependency tree, what verify's checkout got:
	// the base's (the commit's manifests and lockfiles are the base's), or
	// a tree the worker changed, and how it was installed (at untrusted:
	// without the network).
	Deps []string `json:"deps,omitempty"`
}

// Observed is what hub saw itself.
type Observed struct {
	Commands []ObservedCommand `json:"commands"` // the processes hub ran or watched, with their outcome
	// Uncommitted says the user's checkout had uncommitted changes that the job did not get.
	UserCheckoutDirty bool `json:"user_checkout_dirty"`
	// RefChanges are refs other than the job's branch that moved while it ran
	// (checked when the worker runs unsandboxed, where it could move them).
	RefChanges []RefChange `json:"ref_changes,omitempty"`
	// GitRepairs are the parts of the job's git state the worker changed
	// (its HEAD, its .git file, its git dir's links or config) that hub put
	// back before it committed the worker's files onto the job's branch.
	GitRepairs []GitRepair `json:"git_repairs,omitempty"`
	// Leftovers are processes of the job still alive after the command
	// they belonged to (the worker, verify) ended: hub ended them, or says
	// it could not.
	Leftovers []LeftoverProcess `json:"leftover_processes,omitempty"`
	// RepoChanges are changes to the user's repository's shared git config
	// and hooks folder found while the job ran in a linked worktree (an
	// install's `git config core.hooksPath`, a hook script written): hub
	// put each back and kept what it replaced.
	RepoChanges []RepoChange `json:"repo_changes,omitempty"`
}

// RepoChange is one change to the user's repository's shared config or
// hooks folder that hub found across a job and put back.
type RepoChange struct {
	What  string `json:"what"`  // config | hooks
	Path  string `json:"path"`  // the file or folder that differed
	Found string `json:"found"` // what differed, e.g. "core.hooksPath = .husky/_ (was unset)"
	Done  string `json:"done"`  // what hub did: put back, and where it kept what it replaced
	// Others are the other jobs of the repository running then: the
	// change may be theirs (or the user's own).
	Others []string `json:"others,omitempty"`
}

// GitRepair is one part of a job's git state that the worker changed and
// hub put back.
type GitRepair struct {
	What  string `json:"what"`  // HEAD | .git | commondir | gitdir | config | hooks | objects | branch | nested repository | sparse checkout
	Found string `json:"found"` // what hub found, e.g. "detached at 1a2b3c4d5e6f"
	Done  string `json:"done"`  // what hub did about it
}

// LeftoverProcess is a process a command of the job left running after it
// exited.
type LeftoverProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its command line (redacted)
	Role    string `json:"role"`    // worker | verify
	Ended   bool   `json:"ended"`   // hub ended it; false: it survived, and this says so
}

// RefChange is one ref that moved while a job ran.
type RefChange struct {
	Ref    string `json:"ref"`              // refs/heads/main, refs/tags/v1, …
	Before string `json:"before,omitempty"` // empty: the ref was created
	After  string `json:"after,omitempty"`  // empty: the ref was deleted
}

// ObservedCommand is a process hub ran or watched, with its outcome.
type ObservedCommand struct {
	Command    string `json:"command"`             // the command line (redacted)
	Role       string `json:"role"`                // worker | verify | setup
	ExitCode   *int   `json:"exit_code,omitempty"` // its exit code, when it exited
	Signal     string `json:"signal,omitempty"`    // the signal that killed it, if one did
	DurationMS int64  `json:"duration_ms"`         // how long it ran
}

// Claimed is what the worker said, unverified.
type Claimed struct {
	Report   string   `json:"report,omitempty"`   // the worker's final report, in its words (redacted)
	Progress []string `json:"progress,omitempty"` // its progress notes, in order
	// OldSummary is report under its name before 0.2, still sent for this release; read report.
	OldSummary string `json:"summary,omitempty"`
}

// Cost of the job. Known is false when the engine could not report it; the
// whole reservation is then charged.
type Cost struct {
	USD         float64 `json:"usd"`          // the charge: the real cost, or the whole reservation when unknown
	Known       bool    `json:"known"`        // false when an engine could not price a call
	ReservedUSD float64 `json:"reserved_usd"` // what was reserved before work
	Tokens      int64   `json:"tokens"`       // tokens used, input and output
	// Calls counts model calls; Models lists the models that answered (fallbacks included).
	Calls  int      `json:"calls,omitempty"`
	Models []string `json:"models,omitempty"`
}

// Timings in milliseconds spent in each phase.
type Timings struct {
	QueuedMS    int64 `json:"queued_ms"`    // waiting for a slot
	PreparingMS int64 `json:"preparing_ms"` // making the worktree, setup included
	SetupMS     int64 `json:"setup_ms"`     // of which making its environment ready: dependencies and the setup command
	RunningMS   int64 `json:"running_ms"`   // the worker running, questions included
	// NeedsInputMS is the part of running_ms the worker waited for an answer.
	NeedsInputMS int64 `json:"needs_input_ms"`
	VerifyingMS  int64 `json:"verifying_ms"` // the check
	TotalMS      int64 `json:"total_ms"`     // from start to end
	// The phases are read from the job's state events, so queued, preparing,
	// running and verifying add up to total.
}

// ReplyParams answers a worker's pending question.
type ReplyParams struct {
	ID string `json:"id"` // the job id
	// QuestionID is optional: the pending question is answered when empty.
	QuestionID string `json:"question_id,omitempty"`
	Text       string `json:"text"` // the answer
}

// ReplyResult confirms the delivery.
type ReplyResult struct {
	ID         string `json:"id"`          // the job id
	QuestionID string `json:"question_id"` // the question answered
	Delivered  bool   `json:"delivered"`   // the shim handed the answer to the worker
}

// SteerParams redirects a running worker.
type SteerParams struct {
	ID   string `json:"id"`   // the job id
	Text string `json:"text"` // the message for the worker
}

// SteerResult says the message is queued; it reaches the worker at its next
// progress report or tool result (the job's events say when).
type SteerResult struct {
	ID     string `json:"id"`     // the job id
	Queued bool   `json:"queued"` // the message is stored for the worker
}

// CleanupParams removes an ended job's worktree; the branch is kept unless
// DeleteBranch.
type CleanupParams struct {
	ID           string `json:"id"`                      // the job id
	DeleteBranch bool   `json:"delete_branch,omitempty"` // also delete hub/<id>
	// Force removes a worktree whose HEAD is not on the job's branch, and
	// with delete_branch a branch whose work is merged nowhere (as gc's
	// force). A worktree with uncommitted changes is never removed.
	Force bool `json:"force,omitempty"`
}

// CleanupResult says what was removed.
type CleanupResult struct {
	ID              string `json:"id"`               // the job id
	WorktreeRemoved bool   `json:"worktree_removed"` // the worktree was there and is gone
	BranchDeleted   bool   `json:"branch_deleted"`   // the branch was deleted
	Branch          string `json:"branch,omitempty"` // the job's branch
}

// EngineCapabilities is what an engine can promise.
type EngineCapabilities struct {
	Isolation []Isolation `json:"isolation"` // levels it can enforce
	ReadOnly  bool        `json:"read_only"` // can run without writing
	Pays      Pays        `json:"pays"`      // free | api | subscription
	// IsolationWhyNot says, for levels it cannot enforce here, why not and what would change that.
	IsolationWhyNot map[Isolation]string `json:"isolation_why_not,omitempty"`
}

// EngineInfo is one engine as this machine has it.
type EngineInfo struct {
	Name         string             `json:"name"`              // the engine's name, as start takes it
	Available    bool               `json:"available"`         // it can run here now
	Reason       string             `json:"reason,omitempty"`  // why not available
	Version      string             `json:"version,omitempty"` // the installed version
	Capabilities EngineCapabilities `json:"capabilities"`      // what it can promise
	// Quota is what hub knows of the engine's room: provider windows it
	// reported, and hub's monthly cap for engines that pay in dollars.
	Quota []QuotaSignal `json:"quota,omitempty"`
	// Capacity says the same in one line, with source, freshness and confidence.
	Capacity string `json:"capacity"`
}

// EnginesResult lists engines and the money view.
type EnginesResult struct {
	Engines []EngineInfo `json:"engines"` // every engine hub knows, available or not
	// Spend this month against the cap.
	Month         string  `json:"month"`
	SpentUSD      float64 `json:"spent_usd"`       // charged this month
	ReservedUSD   float64 `json:"reserved_usd"`    // reserved by running jobs
	MonthlyCapUSD float64 `json:"monthly_cap_usd"` // the monthly cap
	Running       int     `json:"running"`         // jobs holding a slot
	MaxRunning    int     `json:"max_running"`     // slots in all
	Queued        int     `json:"queued"`          // jobs waiting for a slot
	// Limits say what bounds a job at isolated and untrusted on this
	// machine: each limit's default and how it is enforced (or why it is
	// not), and whether an isolated job is held to its own ports; one line
	// each.
	Limits []string `json:"limits,omitempty"`
}

// SubscribeParams subscribes the connection to notifications.
type SubscribeParams struct {
	// Since replays events after this cursor first (0: only new ones).
	Since int64 `json:"since,omitempty"`
}

// SubscribeResult gives the cursor the subscription starts after.
type SubscribeResult struct {
	Cursor int64 `json:"cursor"` // the newest event cursor when the subscription began
}

// AskParams is a worker's question to its supervisor.
type AskParams struct {
	Job      string `json:"job"`
	Question string `json:"question"`
	Context  string `json:"context,omitempty"`
	Kind     string `json:"kind,omitempty"` // question (default) | blocker
}

// AskResult carries the answer, or says the ask timed out.
type AskResult struct {
	QuestionID string `json:"question_id"`
	Answer     string `json:"answer,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	// Instruction is what the worker should do when no answer came.
	Instruction string `json:"instruction,omitempty"`
}

// ProgressParams is a worker's progress note.
type ProgressParams struct {
	Job  string `json:"job"`
	Note string `json:"note"`
}

// ProgressResult hands the worker any steering queued for it, oldest first.
type ProgressResult struct {
	Steer []string `json:"steer,omitempty"`
}

// ShimReplyParams delivers an answer to the shim.
type ShimReplyParams struct {
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
}

// ShimSteerParams tells the shim a steering message is queued in the store.
type ShimSteerParams struct {
	Text string `json:"text"`
}

// ShimStopParams asks the shim to stop the worker.
type ShimStopParams struct {
	Reason string `json:"reason,omitempty"`
}

// ShimChangedParams names the job whose records changed.
type ShimChangedParams struct {
	ID string `json:"id"`
}

// ProfileInfo is one model profile of the built-in worker. It never holds a key.
type ProfileInfo struct {
	Name     string `json:"name"`
	Provider string `json:"provider"` // openai | anthropic | ollama | scripted | copilot | chatgpt
	BaseURL  string `json:"base_url,omitempty"`
	Model    string `json:"model,omitempty"`
	// Fallbacks are tried in order when the model keeps failing.
	Fallbacks     []string `json:"fallbacks,omitempty"`
	KeyEnv        string   `json:"key_env,omitempty"` // the variable the key is read from
	MaxTokens     int      `json:"max_tokens,omitempty"`
	ContextWindow int      `json:"context_window,omitempty"`
	Script        string   `json:"script,omitempty"` // scripted provider: a script file, or "demo"
	// LoginURL is a login provider's server (copilot, chatgpt): a GitHub Enterprise host, or a test's.
	LoginURL string `json:"login_url,omitempty"`
	BuiltIn  bool   `json:"built_in,omitempty"`
	Default  bool   `json:"default,omitempty"`
	// Key says where the key comes from: environment, env file, login, not needed, or missing.
	Key string `json:"key,omitempty"`
}

// ProfileListResult lists the profiles, sorted by name.
type ProfileListResult struct {
	Profiles  []ProfileInfo `json:"profiles"`
	Default   string        `json:"default,omitempty"`
	ConfigDir string        `json:"config_dir"`
}

// ProfileSetParams adds or replaces a profile. Key, when given, is stored
// in the env file under the profile's key variable (mode 0600); it is never
// returned or logged.
type ProfileSetParams struct {
	Profile     ProfileInfo `json:"profile"`
	Key         string      `json:"key,omitempty"`
	MakeDefault bool        `json:"make_default,omitempty"`
}

// ProfileNameParams names a profile.
type ProfileNameParams struct {
	Name string `json:"name,omitempty"`
}

// ProviderStatus says whether a profile can be used from here.
type ProviderStatus struct {
	Profile   ProfileInfo `json:"profile"`
	KeySource string      `json:"key_source,omitempty"` // "" when the key is missing
	Reachable bool        `json:"reachable"`
	Usable    bool        `json:"usable"`
	Detail    string      `json:"detail"`
	// Login is a login provider's state: logged in, needs login, or pending (a login waits for its user).
	Login string `json:"login,omitempty"`
}

// ProfileLoginParams drive a profile's device-flow login, which the daemon
// runs. Without wait or cancel it starts one (replacing any that waits);
// wait waits up to timeout_s (default: until it ends) for it to end.
type ProfileLoginParams struct {
	Name     string  `json:"name"`
	Wait     bool    `json:"wait,omitempty"`
	TimeoutS float64 `json:"timeout_s,omitempty"`
	Cancel   bool    `json:"cancel,omitempty"`
}

// Login states.
const (
	LoginPending   = "pending"
	LoginDone      = "logged in"
	LoginDenied    = "denied"
	LoginExpired   = "expired"
	LoginReplaced  = "replaced"
	LoginCancelled = "cancelled"
	LoginFailed    = "failed"
	LoginNone      = "none" // no login was started since the daemon started
)

// ProfileLoginResult is a login's state. The address and the user code are
// for the user's eyes only (a terminal, an elicitation), never a model's;
// they are set while the login is pending.
type ProfileLoginResult struct {
	Name            string  `json:"name"`
	Provider        string  `json:"provider"`
	State           string  `json:"state"`
	VerificationURI string  `json:"verification_uri,omitempty"`
	UserCode        string  `json:"user_code,omitempty"`
	ExpiresInS      float64 `json:"expires_in_s,omitempty"`
	// Detail says what happened and, on failure, what to do next.
	Detail string `json:"detail,omitempty"`
}

// ProviderStatusResult checks profiles.
type ProviderStatusResult struct {
	Profiles []ProviderStatus `json:"profiles"`
}
