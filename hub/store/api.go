package store

// This file fixes the store's API: the types and the method set the daemon
// and the shim use. The implementation lives beside it.

import (
	"errors"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// Sentinel errors; callers check them with errors.Is.
var (
	ErrNotFound   = errors.New("not found")
	ErrWrongState = errors.New("wrong state")
)

// Job is one job's record. Times are UTC; a zero time means "not yet".
type Job struct {
	ID        string
	Seq       int64 // creation order
	State     protocol.State
	Kind      protocol.Kind
	Engine    string
	Model     string
	Isolation protocol.Isolation

	Repo     string // top level of the user's repo ("" for a cwd read job)
	Cwd      string
	BaseRef  string // as the caller gave it
	BaseSHA  string
	Branch   string // hub/<id>, "" for read jobs
	Worktree string // absolute path under HUB_HOME
	Task     string
	// Spec is the normalized protocol.StartParams as JSON.
	Spec []byte

	MaxMicros micros.Micros // reservation asked for

	CreatedAt   time.Time
	PreparingAt time.Time
	RunningAt   time.Time
	VerifyingAt time.Time
	EndedAt     time.Time
	UpdatedAt   time.Time

	HeadSHA  string
	Salvaged bool
	Error    string
	// Category is why a job that ended did not succeed (protocol.Category*).
	Category string
	Progress string // latest progress note
	Summary  string // the worker's final claim
	Notes    []string

	CostMicros micros.Micros
	CostKnown  bool
	Tokens     int64

	ShimPID     int
	ShimStart   uint64 // process start time in clock ticks since boot (/proc/<pid>/stat field 22)
	EnginePGID  int
	EngineStart uint64

	Verify   []byte // protocol.Verify JSON, once verify ran
	Evidence []byte // protocol.Evidence JSON, once the job ended

	Cursor int64 // cursor of the job's latest event

	// Route is the router's decision at start, as JSON (router.Decision):
	// the ranked candidates a failed start falls back along, and why.
	Route []byte

	// Target is the branch the job's work lands on by default: the branch
	// its base was on when it started ("" for a detached base).
	Target string
	// Forecast is hub's latest forecast of landing it (protocol.Forecast
	// JSON); Landed the record of its landing (protocol.Landing JSON).
	Forecast []byte
	Landed   []byte

	// Rubric is the verdict of the job's rubric once it ended (satisfied,
	// needs_revision, failed, unknown; "" when it was not graded); Alerts
	// are what it did beyond its branch, one line each (view.Alerts).
	Rubric string
	Alerts []string
}

// Event is a stored journal event (protocol.Event with the data raw).
type Event = protocol.Event

// Question is a worker's question as stored.
type Question struct {
	ID         string
	JobID      string
	Kind       string
	Text       string
	Context    string
	AskedAt    time.Time
	ExpiresAt  time.Time
	AnsweredAt time.Time
	Answer     string
	Expired    bool
	Cursor     int64
}

// Steer is a queued steering message.
type Steer struct {
	ID          int64
	JobID       string
	Text        string
	CreatedAt   time.Time
	DeliveredAt time.Time
}

// Limits bound admission: slots across every process, money per month.
type Limits struct {
	MaxRunning int // this machine's jobs at once
	MonthlyCap micros.Micros
	// QueueSlots are each remote queue's jobs at once; a remote job takes
	// its queue's slot, not one of this machine's.
	QueueSlots map[string]int
}

// Admission is the outcome of Admit.
type Admission struct {
	Admitted bool
	// Reason says why not (slots full, cap reached) when not admitted.
	Reason string
}

// Ending closes a job: its terminal state and what it left.
type Ending struct {
	State      protocol.State // terminal
	HeadSHA    string
	Salvaged   bool
	Error      string
	Category   string // why it did not succeed (protocol.Category*); empty when it did
	Summary    string
	CostMicros micros.Micros
	CostKnown  bool // false: the whole reservation is charged
	Tokens     int64
	// Evidence is what hub observed; Finish stamps its state and its
	// timings (from the job's state events, in the same transaction) and
	// stores it. Nil stores none.
	Evidence *protocol.Evidence
	Text     string // the state event's text (reason)
	// Rubric is its rubric's verdict and Alerts what it did beyond its
	// branch (Job.Rubric, Job.Alerts).
	Rubric string
	Alerts []string
}

// LedgerRow is one reservation.
type LedgerRow struct {
	JobID string
	Month string // "2026-12", UTC
	// ReservedMicros is what the job asked for, plus OverrunMicros: what it
	// really cost beyond that, added when the reservation closed.
	ReservedMicros micros.Micros
	ChargedMicros  micros.Micros
	OverrunMicros  micros.Micros
	Closed         bool
	ClosedAt       time.Time
	CostKnown      bool
}

// MonthTotals is the money view of one month.
type MonthTotals struct {
	Month          string
	ChargedMicros  micros.Micros // closed reservations, charged amounts
	ReservedMicros micros.Micros // open reservations
}
