package shim

import (
	"context"
	"fmt"
	"time"

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

// engineStep records a step an engine reported: under the run phase unless
// it names a parent of its own; an engine started again (a fallback) has
// its ids prefixed with its attempt, so they stay unique in the job.
func (s *shim) engineStep(ctx context.Context, e protocol.TraceEntry) {
	s.touch()
	if n := s.starts.Load(); n > 1 {
		e.ID = fmt.Sprintf("%d.%s", n, e.ID)
		if e.Parent != "" {
			e.Parent = fmt.Sprintf("%d.%s", n, e.Parent)
		}
	}
	if e.Parent == "" {
		e.Parent = protocol.PhaseRun
	}
	e.Start = e.Start.UTC()
	s.trace(ctx, e)
}
