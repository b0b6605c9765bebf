package agentcli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// Pricing is what a Recorder needs to cost a run and to name it.
type Pricing struct {
	// Model is what the CLI was told to use, for pricing its tokens.
	Model string
	// Price prices the tokens when the CLI reports no cost of its own
	// (nil, or false: the cost is unknown).
	Price func(model string) (model.Price, bool)
	// Describe is what the hub records as the command it ran (no keys).
	Describe string
}

// Recorder collects what an agent's stream said (its Events) and reports
// it as it comes: notes to the job's mailbox, lines to the worker log, the
// cost so far. The CLI engines' parsers and the ACP engine report into it.
// Safe for concurrent use.
type Recorder struct {
	spec    engine.Spec
	pricing Pricing
	ctx     context.Context
	started time.Time

	mu        sync.Mutex
	sessionID string
	final     string
	failure   string
	usage     model.Usage
	calls     int
	cliCost   *float64
	tools     int
	commands  []protocol.ObservedCommand
	lastSaid  string
	unmetered bool
}

// NewRecorder returns a recorder for spec's run; ctx is what its mailbox
// calls run under (it must outlive a stop).
func NewRecorder(ctx context.Context, spec engine.Spec, p Pricing) *Recorder {
	return &Recorder{spec: spec, pricing: p, ctx: ctx, started: time.Now()}
}

// Log writes a line to the worker log.
func (rc *Recorder) Log(s string) {
	if w := rc.spec.Output; w != nil {
		fmt.Fprintln(w, s)
	}
}

// Note logs what the hub did or saw, and records it as the job's progress.
func (rc *Recorder) Note(s string) {
	rc.Log("[hub] " + s)
	if mb := rc.spec.Mailbox; mb != nil {
		mb.Note(rc.ctx, s)
	}
}

// SessionID is the session the stream named ("" if none yet).
func (rc *Recorder) SessionID() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.sessionID
}

func (rc *Recorder) Session(id string) {
	rc.mu.Lock()
	rc.sessionID = id
	rc.mu.Unlock()
}

func (rc *Recorder) Said(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	rc.Log("[worker] " + OneLine(text, 2000))
	note := OneLine(text, 200)
	rc.mu.Lock()
	same := note == rc.lastSaid
	rc.lastSaid = note
	rc.mu.Unlock()
	if !same && rc.spec.Mailbox != nil {
		rc.spec.Mailbox.Note(rc.ctx, note)
	}
}

func (rc *Recorder) Tool(name, input string) {
	rc.mu.Lock()
	rc.tools++
	id := fmt.Sprintf("t%d", rc.tools+len(rc.commands))
	rc.mu.Unlock()
	rc.Log("[tool] " + name + " " + OneLine(input, 300))
	// A CLI reports a tool call once, without its end: it has no duration.
	rc.trace(protocol.TraceEntry{ID: id, Kind: protocol.TraceTool, Name: name, Start: time.Now(), Args: input})
}

func (rc *Recorder) Command(cmd string, exitCode *int, started time.Time) {
	now := time.Now()
	oc := protocol.ObservedCommand{Command: OneLine(cmd, 500), Role: "worker command", ExitCode: exitCode}
	e := protocol.TraceEntry{Kind: protocol.TraceCommand, Name: cmd, Start: now, ExitCode: exitCode, Failed: exitCode != nil && *exitCode != 0}
	if !started.IsZero() && !started.After(now) {
		oc.DurationMS = now.Sub(started).Milliseconds()
		e.Start, e.DurationUS = started, now.Sub(started).Microseconds()
	}
	rc.mu.Lock()
	rc.commands = append(rc.commands, oc)
	e.ID = fmt.Sprintf("c%d", rc.tools+len(rc.commands))
	rc.mu.Unlock()
	code := "?"
	if exitCode != nil {
		code = fmt.Sprint(*exitCode)
	}
	rc.Log("[command] exit " + code + ": " + OneLine(cmd, 300))
	rc.trace(e)
}

// trace records a step in the job's trace (the mailbox redacts and bounds it).
func (rc *Recorder) trace(e protocol.TraceEntry) {
	if mb := rc.spec.Mailbox; mb != nil {
		mb.Trace(rc.ctx, e)
	}
}

func (rc *Recorder) Usage(u model.Usage) {
	rc.mu.Lock()
	rc.usage = rc.usage.Add(u)
	// A message without tokens is no model's answer (Claude Code writes
	// one for an API error it could not get past).
	if u.Total() > 0 {
		rc.calls++
	}
	rc.mu.Unlock()
	rc.spent()
}

func (rc *Recorder) Tokens(u model.Usage) {
	rc.mu.Lock()
	rc.usage = rc.usage.Add(u)
	rc.mu.Unlock()
	rc.spent()
}

func (rc *Recorder) Cost(usd float64) {
	rc.mu.Lock()
	rc.cliCost = &usd
	rc.mu.Unlock()
	rc.spent()
}

func (rc *Recorder) Final(text string) {
	rc.mu.Lock()
	rc.final = strings.TrimSpace(text)
	rc.mu.Unlock()
	rc.Log("[final] " + OneLine(text, 2000))
}

func (rc *Recorder) Failed(msg string) {
	rc.mu.Lock()
	if rc.failure == "" {
		rc.failure = strings.TrimSpace(msg)
	}
	rc.mu.Unlock()
	rc.Log("[failed] " + OneLine(msg, 1000))
}

// Unmetered marks a run the agent did work in without saying what it
// used: unless the agent reports its own cost, the run's cost is unknown.
func (rc *Recorder) Unmetered() {
	rc.mu.Lock()
	rc.unmetered = true
	rc.mu.Unlock()
}

// cost is what the run has cost so far: the CLI's own figure when it
// gives one, else its tokens priced; known false when neither is possible.
func (rc *Recorder) cost() (cost micros.Micros, known bool) {
	if rc.cliCost != nil {
		return micros.FromUSD(*rc.cliCost), true
	}
	if rc.unmetered {
		return 0, false
	}
	if rc.pricing.Price == nil {
		return 0, rc.calls == 0
	}
	p, ok := rc.pricing.Price(rc.pricing.Model)
	if !ok {
		return 0, rc.calls == 0
	}
	return p.Cost(rc.usage), true
}

// spent reports the cost so far to the mailbox.
func (rc *Recorder) spent() {
	mb := rc.spec.Mailbox
	if mb == nil {
		return
	}
	rc.mu.Lock()
	cost, known := rc.cost()
	ev := protocol.CostEvent{USD: cost.USD(), Known: known, Tokens: int64(rc.usage.Total()), Calls: rc.calls, Model: rc.pricing.Model}
	rc.mu.Unlock()
	mb.Spent(rc.ctx, cost, ev)
}

// Outcome settles the run from its last process's exit state and what the
// stream said. needFinal makes a clean exit without a final answer a
// failure (a stream that ended early).
func (rc *Recorder) Outcome(ps *os.ProcessState, waitErr error, needFinal bool) engine.Outcome {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	cost, known := rc.cost()
	m := rc.pricing.Model
	o := engine.Outcome{ExitCode: -1, Summary: rc.final, Model: m, CostMicros: cost, CostKnown: known,
		Tokens: int64(rc.usage.Total()), Calls: rc.calls, Duration: time.Since(rc.started), Command: rc.pricing.Describe}
	if m != "" && rc.calls > 0 {
		o.Models = []string{m}
	}
	o.Observed = append(o.Observed, rc.commands...)
	o.ExitCode, o.Signal = engine.ExitOf(ps)
	o.Err = engine.WaitError(waitErr)
	switch {
	case rc.failure != "" && o.ExitCode == 0:
		// The CLI said its run failed but exited 0 (Claude Code does): the run failed.
		o.ExitCode, o.Failure = 1, rc.failure
	case rc.failure != "":
		o.Failure = rc.failure
	case needFinal && o.ExitCode == 0 && rc.final == "" && o.Signal == "":
		o.ExitCode, o.Failure = 1, "the CLI exited without a final answer (its stream ended early)"
	}
	return o
}
