package claude

import (
	"encoding/json"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
)

// quotaSource is where the engine's quota signals are read.
const quotaSource = "claude rate_limit_event"

// Claude Code (2.1.328) writes a rate_limit_event to its stream when what
// the anthropic-ratelimit-unified-* headers of a response say changes:
//
//	{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning",
//	 "resetsAt":1796257709,"rateLimitType":"five_hour","utilization":0.85,
//	 "isUsingOverage":false,"surpassedThreshold":0.75,"unifiedWindows":{
//	 "five_hour":{"utilization":0.85,"resetsAt":1796257709,"status":"allowed_warning"},
//	 "seven_day":{"utilization":0.3,"resetsAt":1796513309,"status":"allowed"}}},
//	 "uuid":"…","session_id":"…"}
//
// The top level is the limit that binds now (status says whether requests
// are refused; utilization is there only past a warning threshold);
// unifiedWindows has every window the response spoke of. The answer it
// makes up for a request the limiter refused carries the same info, as
// api_error_params.rate_limit_info. It reads those headers only for a
// claude.ai subscription or a Claude gateway token: under an API key (what
// hub's profiles give it) it sends none of this, whatever the headers say.

// rateLimitInfo is the event's rate_limit_info. Numbers are kept raw so a
// field of an unexpected type loses that field only.
type rateLimitInfo struct {
	Status        string                     `json:"status"`
	ResetsAt      json.RawMessage            `json:"resetsAt"`
	RateLimitType string                     `json:"rateLimitType"`
	Utilization   json.RawMessage            `json:"utilization"`
	Windows       map[string]json.RawMessage `json:"unifiedWindows"`
}

type window struct {
	Status      string          `json:"status"`
	ResetsAt    json.RawMessage `json:"resetsAt"`
	Utilization json.RawMessage `json:"utilization"`
}

// quotaSignals reads a rate_limit_info read at now: one signal per window,
// the binding limit merged into its window. ok is false when raw is not an
// object at all.
func quotaSignals(raw json.RawMessage, now time.Time) (sigs []protocol.QuotaSignal, ok bool) {
	var info rateLimitInfo
	if json.Unmarshal(raw, &info) != nil {
		// A member of an unexpected type: read what can be read.
		var loose map[string]json.RawMessage
		if json.Unmarshal(raw, &loose) != nil || loose == nil {
			return nil, false
		}
		_ = json.Unmarshal(loose["status"], &info.Status)
		_ = json.Unmarshal(loose["rateLimitType"], &info.RateLimitType)
		_ = json.Unmarshal(loose["unifiedWindows"], &info.Windows)
		info.ResetsAt, info.Utilization = loose["resetsAt"], loose["utilization"]
	}
	signal := func(name, status string, util, resets json.RawMessage) (protocol.QuotaSignal, bool) {
		s := protocol.QuotaSignal{Engine: Name, Name: name, Exhausted: status == "rejected",
			Source: quotaSource, ReadAt: now.UTC(), Confidence: protocol.ConfidenceHigh}
		u, hasUtil := number(util)
		if hasUtil {
			s.UsedPct = min(max(u*100, 0), 100)
			s.Exhausted = s.Exhausted || u >= 1
		}
		if t, ok := number(resets); ok && t > 0 && t < maxResetsAt {
			s.ResetsAt = time.Unix(int64(t), 0).UTC()
		}
		if s.Exhausted {
			s.UsedPct = 100
		}
		// A window without a share used says nothing the router can weigh.
		return s, hasUtil || s.Exhausted
	}
	names := make([]string, 0, len(info.Windows))
	for name := range info.Windows {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var w window
		if name == "" || json.Unmarshal(info.Windows[name], &w) != nil {
			continue
		}
		if s, ok := signal(name, w.Status, w.Utilization, w.ResetsAt); ok {
			sigs = append(sigs, s)
		}
	}
	// The binding limit: refused (status rejected), or past a warning.
	if info.RateLimitType == "" {
		return sigs, true
	}
	top, ok := signal(info.RateLimitType, info.Status, info.Utilization, info.ResetsAt)
	if i := slices.IndexFunc(sigs, func(s protocol.QuotaSignal) bool { return s.Name == info.RateLimitType }); i >= 0 {
		sigs[i].Exhausted = sigs[i].Exhausted || top.Exhausted
		if sigs[i].Exhausted {
			sigs[i].UsedPct = 100
		}
		if sigs[i].ResetsAt.IsZero() {
			sigs[i].ResetsAt = top.ResetsAt
		}
	} else if ok {
		sigs = append(sigs, top)
	}
	return sigs, true
}

// maxResetsAt is 10000-01-01 in Unix seconds: a reset time from then on is
// not in seconds (or not a time at all), and JSON could not carry it.
const maxResetsAt = 253402300800

// number reads a JSON number, or a string holding one.
func number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil || json.Unmarshal([]byte(s), &f) != nil {
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// quotaLog keeps the newest signal of each window a run's stream reported,
// newest last. The parser adds to it while it reads; Wait takes it once
// the stream is done.
type quotaLog struct {
	now func() time.Time

	mu   sync.Mutex
	sigs []protocol.QuotaSignal
}

func newQuotaLog(now func() time.Time) *quotaLog { return &quotaLog{now: now} }

// add reads one rate_limit_info; ok is false when it is unreadable.
func (q *quotaLog) add(raw json.RawMessage) (ok bool) {
	sigs, ok := quotaSignals(raw, q.now())
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range sigs {
		q.sigs = slices.DeleteFunc(q.sigs, func(old protocol.QuotaSignal) bool { return old.Name == s.Name })
		q.sigs = append(q.sigs, s)
	}
	return ok
}

func (q *quotaLog) signals() []protocol.QuotaSignal {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.sigs)
}

// run is a run of Claude Code whose outcome carries the quota its stream
// reported.
type run struct {
	engine.Run
	quota *quotaLog
}

func (r run) Wait() engine.Outcome {
	o := r.Run.Wait()
	o.Quota = append(o.Quota, r.quota.signals()...)
	return o
}
