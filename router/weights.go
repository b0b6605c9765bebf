package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Modes of routing.json.
const (
	// ModeUtility ranks by expected utility (the default).
	ModeUtility = "utility"
	// ModeLegacy ranks by a fixed order and ignores calibration, for those
	// who want the same engine every time it can take the job.
	ModeLegacy = "legacy"
)

// DefaultOrder names every engine hub has built in (config.json's agents
// may not take one of these names) in the fixed order: legacy mode's
// ranking, and the tie-break in utility mode. The built-in worker comes first because its
// fixed prompt is the smallest, so it spends the least on the same model.
// step comes last: it takes only the narrations hub step starts, and
// refuses every other job.
var DefaultOrder = []string{"builtin", "claude", "codex", "opencode", "gemini", "qwen", "exec", "step"}

// Weights is routing.json: how utility is weighed, and what hub learned
// from its own history (written by hub route calibrate).
type Weights struct {
	Mode  string   `json:"mode,omitempty"`
	Order []string `json:"order,omitempty"`
	// ValueUSD is what a verified success is worth to the user.
	ValueUSD float64 `json:"value_usd,omitempty"`
	// TimeUSDPerHour is the price of waiting for a result.
	TimeUSDPerHour float64 `json:"time_usd_per_hour,omitempty"`
	// QuotaUSD is what a fully used quota window costs a job (so a busy
	// subscription is spared while others have room).
	QuotaUSD float64 `json:"quota_usd,omitempty"`
	// Stats are fitted per engine and job kind.
	Stats        map[string]map[string]Stat `json:"stats,omitempty"`
	CalibratedAt time.Time                  `json:"calibrated_at,omitzero"`
}

// Stat is what an engine does on a kind of job: fitted from history and
// smoothed towards the prior.
type Stat struct {
	Runs      int     `json:"runs"`
	Success   float64 `json:"success"`    // probability of a verified success
	DurationS float64 `json:"duration_s"` // median seconds from admission to the end
	CostUSD   float64 `json:"cost_usd"`   // mean spend per job
}

// Priors are what the router assumes of an engine it has no history for.
var Priors = map[string]Stat{
	KindWrite: {Success: 0.6, DurationS: 600, CostUSD: 0.5},
	KindRead:  {Success: 0.7, DurationS: 180, CostUSD: 0.15},
}

// DefaultWeights are the weights without a routing.json.
func DefaultWeights() Weights { return Weights{}.withDefaults() }

func (w Weights) withDefaults() Weights {
	if w.Mode == "" {
		w.Mode = ModeUtility
	}
	if len(w.Order) == 0 {
		w.Order = DefaultOrder
	}
	if w.ValueUSD == 0 {
		w.ValueUSD = 5
	}
	if w.TimeUSDPerHour == 0 {
		w.TimeUSDPerHour = 6
	}
	if w.QuotaUSD == 0 {
		w.QuotaUSD = 2
	}
	return w
}

// stat is the engine's stat for kind, calibrated when hub has history and
// the mode uses it, else the prior.
func (w Weights) stat(engine, kind string) (Stat, string) {
	prior, ok := Priors[kind]
	if !ok {
		prior = Priors[KindWrite]
	}
	if w.Mode == ModeLegacy {
		return prior, "prior"
	}
	if st, ok := w.Stats[engine][kind]; ok && st.Runs > 0 {
		return st, "calibrated from " + plural(st.Runs, "run")
	}
	return prior, "prior"
}

// ParseWeights reads routing.json strictly: an unknown field or mode is an
// error that names it, so a typo does not silently change routing.
func ParseWeights(b []byte) (Weights, error) {
	var w Weights
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Weights{}, fmt.Errorf("routing.json: %v", err)
	}
	switch w.Mode {
	case "", ModeUtility, ModeLegacy:
	default:
		return Weights{}, fmt.Errorf("routing.json: mode %q is not %q or %q", w.Mode, ModeUtility, ModeLegacy)
	}
	for name, v := range map[string]float64{"value_usd": w.ValueUSD, "time_usd_per_hour": w.TimeUSDPerHour, "quota_usd": w.QuotaUSD} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return Weights{}, fmt.Errorf("routing.json: %s must be a positive number of dollars", name)
		}
	}
	for i, name := range w.Order {
		if slices.Contains(w.Order[:i], name) {
			return Weights{}, fmt.Errorf("routing.json: engine %q is twice in order", name)
		}
	}
	for engine, kinds := range w.Stats {
		for kind, st := range kinds {
			if st.Runs < 0 || st.Success < 0 || st.Success > 1 || st.DurationS < 0 || st.CostUSD < 0 {
				return Weights{}, fmt.Errorf("routing.json: stats of %s/%s are out of range (success is 0–1; runs, time and cost are not negative)", engine, kind)
			}
		}
	}
	return w, nil
}

// Marshal writes w as routing.json.
func (w Weights) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// plural is "1 run", "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
