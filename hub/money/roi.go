package money

import (
	"cmp"
	"slices"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// ROI aggregates the runs that ended in [since, until]: per engine and
// kind, and per engine over every kind. A success counts as verified only
// when the caller's verify ran on the result and passed; failures are the
// other endings (failed, timed out, cancelled). Times are from preparing to
// the end, over the runs that were admitted; percentiles are nearest-rank.
func ROI(runs []store.Run, since, until time.Time) protocol.ROIResult {
	type key struct {
		engine string
		kind   protocol.Kind
	}
	byKind := map[key][]store.Run{}
	byEngine := map[string][]store.Run{}
	for _, r := range runs {
		k := key{r.Engine, r.Kind}
		byKind[k] = append(byKind[k], r)
		byEngine[r.Engine] = append(byEngine[r.Engine], r)
	}
	res := protocol.ROIResult{Since: since, Until: until, Rows: []protocol.ROIRow{}, Engines: []protocol.ROIRow{}}
	for k, rs := range byKind {
		res.Rows = append(res.Rows, row(k.engine, k.kind, rs))
	}
	for e, rs := range byEngine {
		res.Engines = append(res.Engines, row(e, "", rs))
	}
	byName := func(a, b protocol.ROIRow) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Kind, b.Kind))
	}
	slices.SortFunc(res.Rows, byName)
	slices.SortFunc(res.Engines, byName)
	return res
}

// row sums one group of runs.
func row(engine string, kind protocol.Kind, runs []store.Run) protocol.ROIRow {
	r := protocol.ROIRow{Engine: engine, Kind: kind, Jobs: len(runs)}
	var spent micros.Micros
	var times []time.Duration
	for _, run := range runs {
		switch {
		case run.State == protocol.StateSucceeded && run.Verified:
			r.Verified++
		case run.State == protocol.StateSucceeded:
			r.Unverified++
		default:
			r.Failed++
		}
		spent += run.CostMicros
		if run.Duration > 0 {
			times = append(times, run.Duration)
		}
	}
	r.SpentUSD = spent.USD()
	if spent == 0 {
		r.Free = true
	} else {
		r.VerifiedPerUSD = float64(r.Verified) / spent.USD()
	}
	slices.Sort(times)
	r.MedianMS = percentile(times, 50).Milliseconds()
	r.P90MS = percentile(times, 90).Milliseconds()
	return r
}

// percentile is the nearest-rank p-th percentile of sorted (0 when empty).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ⌈p/100 · n⌉
	return sorted[max(rank, 1)-1]
}
