package daemon

import (
	"context"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

func (s *Server) events(ctx context.Context, p protocol.EventsParams) (*protocol.EventsResult, error) {
	var ids []string
	if p.ID != "" {
		if _, err := s.st.Job(ctx, p.ID); err != nil {
			return nil, notFound(p.ID, err)
		}
		ids = []string{p.ID}
	}
	limit := p.Limit
	if limit <= 0 || limit > 5000 {
		limit = 500
	}
	evs, err := s.st.Events(ctx, ids, p.Since, limit)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.EventsResult{Events: evs, Cursor: p.Since}
	if res.Events == nil {
		res.Events = []protocol.Event{}
	}
	if len(evs) > 0 {
		res.Cursor = evs[len(evs)-1].Cursor
	}
	return res, nil
}

func (s *Server) subscribe(ctx context.Context, c *rpc.Conn, p protocol.SubscribeParams) (*protocol.SubscribeResult, error) {
	cur, err := s.st.LastCursor(ctx)
	if err != nil {
		return nil, internal(err)
	}
	if p.Since > 0 && p.Since < cur {
		evs, err := s.st.Events(ctx, nil, p.Since, 5000)
		if err != nil {
			return nil, internal(err)
		}
		for _, ev := range evs {
			_ = c.Notify(ctx, protocol.NotifyJobEvent, ev)
		}
	}
	s.subsMu.Lock()
	s.subs[c] = true
	s.subsMu.Unlock()
	return &protocol.SubscribeResult{Cursor: cur}, nil
}

func (s *Server) engines(ctx context.Context) (*protocol.EnginesResult, error) {
	set, err := config.Load()
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeUnavailable, "fix hub's config file", "%v", err)
	}
	month := now().Format("2006-01")
	tot, err := s.st.MonthTotals(ctx, month)
	if err != nil {
		return nil, internal(err)
	}
	running, queued, err := s.st.CountActive(ctx)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.EnginesResult{Month: month, SpentUSD: config.USD(tot.ChargedMicros), ReservedUSD: config.USD(tot.ReservedMicros),
		MonthlyCapUSD: set.MonthlyCapUSD, Running: running, MaxRunning: set.MaxRunning, Queued: queued}
	for _, e := range s.o.Engines.All() {
		a := e.Probe(ctx)
		res.Engines = append(res.Engines, protocol.EngineInfo{Name: e.Name(), Available: a.Available, Reason: a.Reason,
			Version: a.Version, Capabilities: e.Capabilities()})
	}
	return res, nil
}
