package daemon

import (
	"context"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/trace"
)

// JobTrace reads a job's trace from its journal: hub's phases and the
// engine's steps, ordered, summed and paged.
func (s *Server) JobTrace(ctx context.Context, p protocol.TraceParams) (*protocol.TraceResult, error) {
	if p.From < 0 {
		return nil, invalid("from", "pass a step number from 1, or leave from out for the start", "from is %d", p.From)
	}
	if p.Limit < 0 {
		return nil, invalid("limit", "pass 1 or more, or leave limit out for the whole trace", "limit is %d", p.Limit)
	}
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	evs, err := s.st.EventsOfKind(ctx, j.ID, protocol.EventTrace)
	if err != nil {
		return nil, internal(err)
	}
	entries := trace.Decode(evs)
	// The shim redacted what it stored; this is the second layer, with the
	// keys as they are now.
	red := s.secrets()
	for i := range entries {
		entries[i] = trace.Clean(red, entries[i])
	}
	res := trace.Page(trace.Build(j.ID, j.State, entries, j.PreparingAt, j.EndedAt, s.now()), p.From, p.Limit)
	if res.Entries == nil {
		res.Entries = []protocol.TraceEntry{}
	}
	return &res, nil
}
