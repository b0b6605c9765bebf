package protocol

import (
	"time"

	"github.com/hub-agents/hub/router"
)

// Quota confidence: how far a signal can be trusted as the engine's room now.
const (
	ConfidenceHigh   = "high"   // the provider said it, just now
	ConfidenceMedium = "medium" // the provider said it, a while ago
	ConfidenceLow    = "low"    // inferred (from hub's own ledger, or stale)
)

// QuotaSignal is one thing hub learned about an engine's remaining quota:
// a provider's rate-limit window (Claude's five-hour and seven-day limits,
// Codex's primary and secondary windows) or hub's own monthly cap.
type QuotaSignal struct {
	Engine string `json:"engine"` // the engine it is about
	// Name of the window or limit: five_hour, seven_day, primary, secondary, monthly_cap, …
	Name string `json:"name"`
	// UsedPct is how much of the window is used, 0–100.
	UsedPct float64 `json:"used_pct"`
	// Exhausted: the provider refused work, or UsedPct reached 100.
	Exhausted bool      `json:"exhausted,omitempty"`
	ResetsAt  time.Time `json:"resets_at,omitzero"` // when the window resets, if known
	// Source says where it was read ("claude rate_limit_event", "codex session rollout", "hub ledger").
	Source     string    `json:"source"`
	ReadAt     time.Time `json:"read_at"`              // when hub read it
	Confidence string    `json:"confidence,omitempty"` // high, medium or low
}

// Router is the signal as the router reads it.
func (q QuotaSignal) Router() router.Quota {
	return router.Quota{Name: q.Name, UsedPct: q.UsedPct, Exhausted: q.Exhausted, ResetsAt: q.ResetsAt,
		Source: q.Source, ReadAt: q.ReadAt, Confidence: q.Confidence}
}
