package shim

import (
	"context"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// mailbox is the job's mailbox for an engine running inside the shim: the
// same paths an exec worker takes through `hub ask` and `hub progress`.
type mailbox struct{ s *shim }

var _ engine.Mailbox = mailbox{}

func (m mailbox) Ask(ctx context.Context, p protocol.AskParams) (*protocol.AskResult, error) {
	return m.s.WorkerAsk(ctx, p)
}

func (m mailbox) Progress(ctx context.Context, note string) ([]string, error) {
	r, err := m.s.WorkerProgress(ctx, protocol.ProgressParams{Note: note})
	if err != nil {
		return nil, err
	}
	return r.Steer, nil
}

// Spent records the run's cost so far: a cost event and the job's live cost.
func (m mailbox) Spent(ctx context.Context, spent micros.Micros, c protocol.CostEvent) {
	s := m.s
	s.touch()
	now := time.Now().UTC()
	_, err := s.st.ReportCost(ctx, s.job.ID, spent, c, now)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("record cost")
		return
	}
	s.poke()
}

// Trace records a step of the run in the job's trace.
func (m mailbox) Trace(ctx context.Context, e protocol.TraceEntry) { m.s.engineStep(ctx, e) }

// Note records a progress note without taking the job's queued steering,
// which waits for the worker's own next call.
func (m mailbox) Note(ctx context.Context, note string) {
	s := m.s
	note = s.red.String(note)
	if note == "" {
		return
	}
	s.touch()
	s.claimedMu.Lock()
	s.claimed = append(s.claimed, note)
	s.claimedMu.Unlock()
	s.record(ctx, protocol.EventProgress, note, nil)
}
