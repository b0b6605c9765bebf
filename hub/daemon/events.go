package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/sandbox"
	"github.com/hub-agents/hub/internal/micros"
)

func (s *Server) JobEvents(ctx context.Context, p protocol.EventsParams) (*protocol.EventsResult, error) {
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

// Subscribe replays the events after Since (when given), then sends every
// new event and job change. Replay and registration happen under the
// subscribers' lock, so no event is lost or sent twice between them.
func (s *Server) Subscribe(ctx context.Context, p protocol.SubscribeParams) (*protocol.SubscribeResult, error) {
	c, _ := ctx.Value(connKey{}).(*rpc.Conn)
	if c == nil {
		return nil, wrongState("subscribe on a connection to the daemon", "events/subscribe needs a connection to send notifications on")
	}
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if _, ok := s.subs[c]; ok {
		return nil, wrongState("subscribe once per connection", "this connection is already subscribed")
	}
	cur, err := s.st.LastCursor(ctx)
	if err != nil {
		return nil, internal(err)
	}
	sub := newSubscriber(c, cur)
	if p.Since > 0 && p.Since < cur {
		sub.last = p.Since
		for sub.last < cur {
			evs, err := s.st.Events(ctx, nil, sub.last, 1000)
			if err != nil {
				return nil, internal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				sub.send(notification{protocol.NotifyJobEvent, ev})
				if n, ok := questionNotice(ev); ok {
					sub.send(n)
				}
				sub.last = ev.Cursor
			}
		}
	}
	s.subs[c] = sub
	return &protocol.SubscribeResult{Cursor: cur}, nil
}

func (s *Server) EngineList(ctx context.Context, _ protocol.Empty) (*protocol.EnginesResult, error) {
	set, err := s.settings()
	if err != nil {
		return nil, err
	}
	month := s.now().Format("2006-01")
	tot, err := s.st.MonthTotals(ctx, month)
	if err != nil {
		return nil, internal(err)
	}
	running, queued, err := s.st.CountActive(ctx)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.EnginesResult{Month: month, SpentUSD: tot.ChargedMicros.USD(), ReservedUSD: tot.ReservedMicros.USD(),
		MonthlyCapUSD: set.MonthlyCapUSD, Running: running, MaxRunning: set.MaxRunning, Queued: queued}
	res.Limits = limitLines(set)
	quota, err := s.st.Quotas(ctx)
	if err != nil {
		return nil, internal(err)
	}
	t := s.now()
	capM := micros.FromUSD(set.MonthlyCapUSD)
	for _, e := range s.o.Engines.All() {
		a := e.Probe(ctx)
		info := protocol.EngineInfo{Name: e.Name(), Available: a.Available, Reason: a.Reason,
			Version: a.Version, Capabilities: e.Capabilities()}
		for _, q := range quota {
			if q.Engine == e.Name() {
				info.Quota = append(info.Quota, q)
			}
		}
		if info.Capabilities.Pays == protocol.PaysAPI {
			used := 100.0
			if capM > 0 {
				used = float64(tot.ChargedMicros+tot.ReservedMicros) / float64(capM) * 100
			}
			info.Quota = append(info.Quota, protocol.QuotaSignal{Engine: e.Name(), Name: "monthly_cap", UsedPct: used,
				Exhausted: tot.ChargedMicros+tot.ReservedMicros >= capM, Source: "hub ledger", ReadAt: t, Confidence: protocol.ConfidenceHigh})
		}
		info.Capacity = capacity(info, t)
		res.Engines = append(res.Engines, info)
	}
	return res, nil
}

// capacity is an engine's room in one line.
func capacity(e protocol.EngineInfo, t time.Time) string {
	var parts []string
	for _, q := range e.Quota {
		parts = append(parts, q.Router().Line(t))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, "; ")
	case e.Capabilities.Pays == protocol.PaysFree:
		return "free: no quota"
	}
	return "no quota signal yet (hub reads one from the engine's next run)"
}

// limitLines says what bounds a job at isolated and untrusted here: the
// limits hub's config sets, how this machine enforces each, and the port
// fence; then the file size every level's commit holds to.
func limitLines(set config.Settings) []string {
	l := limit.Limits{Processes: set.LimitProcesses, MemoryBytes: int64(set.LimitMemoryMB) << 20, DiskBytes: int64(set.LimitDiskMB) << 20}
	out := []string{"at isolated and untrusted, each job: " + l.String() + " (limit_processes, limit_memory_mb, limit_disk_mb)"}
	out = append(out, limit.Probe().Lines()...)
	switch a := sandbox.Probe(); {
	case !a.OK:
	case a.PortFence:
		out = append(out, "ports: at isolated a job binds TCP only on its own ten ports (and an ephemeral one), so it cannot take the pool from the others")
	default:
		out = append(out, "ports: not fenced here: "+a.NoPortFenceReason)
	}
	return append(out, fmt.Sprintf("files: at every level no file over %d MiB is committed (max_file_mb)", set.MaxFileMB))
}
