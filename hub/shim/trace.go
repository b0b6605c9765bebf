package shim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/trace"
)

// trace records one entry of the job's trace, redacted and bounded.
func (s *shim) trace(ctx context.Context, e protocol.TraceEntry) {
	e = trace.Clean(s.red, e)
	e.Step, e.GapUS = 0, 0
	s.record(context.WithoutCancel(ctx), protocol.EventTrace, trace.Line(e), e)
}

// phase records one of hub's own phases, from start to now, and returns
// its end: where the next phase starts.
func (s *shim) phase(ctx context.Context, name string, start time.Time, result string, failed bool) time.Time {
	end := time.Now()
	s.phaseTo(ctx, name, start, end, result, failed)
	return end
}

func (s *shim) phaseTo(ctx context.Context, name string, start, end time.Time, result string, failed bool) {
	s.trace(ctx, protocol.TraceEntry{ID: name, Kind: protocol.TracePhase, Name: name, Start: start.UTC(),
		DurationUS: end.Sub(start).Microseconds(), Result: result, Failed: failed})
}

// workerStep is the id of the entry of the worker itself, the engine's
// run from its start to its end, which the steps it reports nest under.
const workerStep = "worker"

// attemptID makes an engine's step id unique in the job: the ids of an
// engine started again (a fallback) get its attempt as a prefix.
func (s *shim) attemptID(id string) string {
	if n := s.starts.Load(); n > 1 && id != "" {
		return fmt.Sprintf("%d.%s", n, id)
	}
	return id
}

// engineStep records a step an engine reported: under the worker's entry
// unless it names a parent step of its own.
func (s *shim) engineStep(ctx context.Context, e protocol.TraceEntry) {
	s.touch()
	e.ID, e.Parent = s.attemptID(e.ID), s.attemptID(e.Parent)
	if e.Parent == "" {
		e.Parent = s.attemptID(workerStep)
	}
	e.Start = e.Start.UTC()
	s.trace(ctx, e)
}

// workerEntry records the worker's own entry under the run phase: the
// engine from its start to its end, with how it ended.
func (s *shim) workerEntry(ctx context.Context, o engine.Outcome, ended time.Time, exit *int) {
	e := protocol.TraceEntry{ID: s.attemptID(workerStep), Parent: protocol.PhaseRun, Kind: protocol.TraceCommand, Name: o.Command,
		Start: s.engineAt.UTC(), DurationUS: ended.Sub(s.engineAt).Microseconds(), ExitCode: exit,
		Failed: exit == nil || *exit != 0, Result: o.Failure}
	if o.Signal != "" {
		e.Result = strings.TrimSpace("killed by " + o.Signal + "; " + o.Failure)
	}
	if o.Err != nil {
		e.Result = o.Err.Error()
	}
	if o.Calls > 0 {
		e.Args = fmt.Sprintf("%d model calls, %d tokens", o.Calls, o.Tokens)
	}
	s.trace(ctx, e)
}
