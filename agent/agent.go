// Package agent is hub's built-in worker: a coding agent loop over a
// language model (package model) with tools confined to the job's worktree
// (package tool). It reads, edits, runs commands, asks its supervisor when a
// choice is not its own, obeys steering, stays inside its budget, keeps its
// context within the model's window, hands sub-tasks to role sub-loops
// (implementer, tester, reviewer), and grades its own result against the
// definition of done (package rubric) before it says it is done.
//
// It knows nothing of the hub's store, daemon or shim: the job's mailbox and
// the view of the worktree come in through Config. It must never touch a
// path outside the worktree, never spend past its budget on purpose, and
// never report a cost it did not read from the provider.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/tool"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/rubric"
)

// Model is what the loop needs of a model client (*model.Client has it).
// Implementations are safe for concurrent use: role sub-loops share one.
type Model interface {
	Generate(ctx context.Context, call model.Call) (*model.Reply, error)
	// Estimate bounds the cost of a call before it is made; known is false
	// when the price is unknown.
	Estimate(call model.Call) (cost micros.Micros, known bool)
	ContextWindow() int
	MaxTokens() int
	Model() string
}

// Mailbox is the job's line to its supervisor. Calls may block (Ask waits
// for a reply or the ask timeout). Implementations are safe for concurrent use.
type Mailbox interface {
	// Ask puts a question (kind "question") or a blocker (kind "blocker") to
	// the supervisor and waits for the answer, or for the ask timeout.
	Ask(ctx context.Context, kind, question, context string) (Answer, error)
	// Progress reports a note ("" to report nothing) and returns the
	// steering queued since the last call, oldest first.
	Progress(ctx context.Context, note string) ([]string, error)
	// Spent reports the cost so far, after every model call.
	Spent(ctx context.Context, s Spend)
	// Step reports a model call or a tool call once it ended, for the
	// job's trace. It must not block for long.
	Step(ctx context.Context, s Step)
}

// Answer is the supervisor's reply to Ask.
type Answer struct {
	Text     string
	TimedOut bool
	// Instruction says what to do when no answer came.
	Instruction string
}

// Spend is the money and tokens used so far.
type Spend struct {
	Micros micros.Micros
	Known  bool // false once any call had no price
	Tokens int64
	Calls  int
	Model  string // the model of the last call
}

// Stop says why a run ended.
type Stop string

const (
	StopDone      Stop = "done"      // the model finished (and the rubric had its say)
	StopMaxTurns  Stop = "max_turns" // the turn limit came first
	StopBudget    Stop = "budget"    // the next call could have crossed the budget
	StopBlocked   Stop = "blocked"   // a blocker got no answer
	StopCancelled Stop = "cancelled" // the context was cancelled (stop, timeout)
	StopError     Stop = "error"     // the model could not be reached, or the loop broke
)

// Config is one run.
type Config struct {
	Model     Model
	Workspace *tool.Workspace
	Mailbox   Mailbox
	Log       zerolog.Logger

	Task             string
	Files            []string // where to look first
	Write            bool     // a write job (false: answer a question, change nothing)
	DefinitionOfDone string
	Verify           string // the caller's check, for the model to know and the rubric to run

	// MaxTurns bounds model calls of the main loop (default 50); roles get their own, smaller bound.
	MaxTurns int
	// BudgetMicros is the most the run may spend; a call that could cross it is not made.
	BudgetMicros micros.Micros
	// Revisions bounds grade → revise rounds (default 2; negative: none).
	Revisions int
	// Observe, if set, tells the rubric what the worktree holds now: the
	// verify command's outcome on it and the files changed since base.
	Observe func(ctx context.Context) (rubric.Facts, error)
	// Grade asks the model to judge the criteria the hub cannot check mechanically.
	Grade bool
	// Roles offers the implementer, tester and reviewer sub-loops (write jobs).
	Roles bool
	// Transcript, if set, gets a line per model answer, tool call and tool
	// result, shortened: the job's worker log. Writes are serialised.
	Transcript io.Writer
}

// Result is how a run ended.
type Result struct {
	Stop    Stop
	Summary string // what the model said it did (claimed, not verified)
	Err     error
	Turns   int
	Spend   Spend
	// Models lists every model that answered, in first-use order.
	Models []string
	// Rubric is the last self-grade, when Observe was set.
	Rubric *rubric.Result
}

// Run runs the loop until the model is done, a limit is reached, or ctx ends.
func Run(ctx context.Context, cfg Config) Result {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 50
	}
	if cfg.Revisions == 0 {
		cfg.Revisions = 2
	}
	r := &runner{cfg: cfg, meter: &meter{budget: cfg.BudgetMicros, known: true}}
	res := r.main(ctx)
	res.Spend = r.meter.spend()
	res.Models = r.meter.models()
	if res.Stop == StopCancelled && res.Err == nil {
		res.Err = ctx.Err()
	}
	return res
}

// runner holds what the main loop and its roles share.
type runner struct {
	cfg   Config
	meter *meter
	steps atomic.Int64 // the last step id handed out

	transcriptMu sync.Mutex
}

// note writes one transcript line for loop.
func (r *runner) note(loop, format string, args ...any) {
	if r.cfg.Transcript == nil {
		return
	}
	r.transcriptMu.Lock()
	defer r.transcriptMu.Unlock()
	fmt.Fprintf(r.cfg.Transcript, "[%s] %s\n", loop, fmt.Sprintf(format, args...))
}

// meter adds up what the calls cost and guards the budget.
type meter struct {
	mu      sync.Mutex
	budget  micros.Micros
	spent   micros.Micros
	known   bool
	tokens  int64
	calls   int
	last    string
	usedSet map[string]bool
	used    []string
}

func (m *meter) add(r *model.Reply) Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.tokens += int64(r.Usage.Total())
	m.spent += r.CostMicros
	if !r.CostKnown {
		m.known = false
	}
	m.last = r.Model
	if m.usedSet == nil {
		m.usedSet = map[string]bool{}
	}
	if !m.usedSet[r.Model] {
		m.usedSet[r.Model] = true
		m.used = append(m.used, r.Model)
	}
	return Spend{Micros: m.spent, Known: m.known, Tokens: m.tokens, Calls: m.calls, Model: m.last}
}

func (m *meter) spend() Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Spend{Micros: m.spent, Known: m.known, Tokens: m.tokens, Calls: m.calls, Model: m.last}
}

func (m *meter) models() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.used...)
}

// ErrBudget is a call not made because it could cross the budget.
var ErrBudget = errors.New("budget")

// allow refuses a call whose estimated cost could cross the budget. A call
// with no known price is allowed: its cost is unknown, and hub charges the
// whole reservation for it.
func (m *meter) allow(estimate micros.Micros, known bool) error {
	if !known {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spent+estimate > m.budget {
		return fmt.Errorf("%w: $%.4f spent of $%.4f, and the next call could cost up to $%.4f", ErrBudget,
			m.spent.USD(), m.budget.USD(), estimate.USD())
	}
	return nil
}

// call makes one model call on behalf of a loop: budget check, the call,
// the meter, the live cost report, the step for the trace.
func (r *runner) call(ctx context.Context, loop string, c model.Call) (*model.Reply, error) {
	est, known := r.cfg.Model.Estimate(c)
	if err := r.meter.allow(est, known); err != nil {
		return nil, err
	}
	started := time.Now()
	rep, err := r.cfg.Model.Generate(ctx, c)
	st := modelStep(r.nextStep("m"), loop, c, started, rep, err)
	st.Parent = parentOf(ctx)
	if err != nil {
		r.step(ctx, st)
		return nil, err
	}
	sp := r.meter.add(rep)
	r.cfg.Log.Debug().Str("model", rep.Model).Int("in", rep.Usage.Input).Int("out", rep.Usage.Output).
		Int("tool_calls", len(rep.ToolCalls)).Dur("took", st.Took).Msg("model call")
	if len(rep.Failed) > 0 {
		r.cfg.Log.Warn().Strs("failed", rep.Failed).Str("answered", rep.Model).Msg("fell back to another model")
	}
	if r.cfg.Mailbox != nil {
		r.cfg.Mailbox.Spent(ctx, sp)
	}
	r.step(ctx, st)
	return rep, nil
}
