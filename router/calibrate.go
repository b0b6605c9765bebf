package router

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Run is one ended job of hub's history, as calibration reads it.
type Run struct {
	Engine string
	Kind   string
	// Success: the job succeeded, and passed verify when it had one.
	Success  bool
	Duration time.Duration
	// CostUSD is what it cost; CostKnown false leaves it out of the mean.
	CostUSD   float64
	CostKnown bool
}

// Smoothing is how many runs' worth of weight the prior keeps: with three
// runs the fit moves less than halfway from the prior to what they show.
const Smoothing = 4

// Change is how one engine's stat for one kind moved.
type Change struct {
	Engine string `json:"engine"`
	Kind   string `json:"kind"`
	Old    *Stat  `json:"old,omitempty"` // nil when there was none
	New    Stat   `json:"new"`
}

// Calibrate fits each engine's stats per kind from runs, smoothed towards
// the prior, and returns w with them (everything else kept) and what
// changed. It ignores w's old stats: the fit is over the history given.
func Calibrate(runs []Run, w Weights, now time.Time) (Weights, []Change) {
	type group struct {
		n, ok int
		durs  []float64
		costs []float64
	}
	groups := map[[2]string]*group{}
	for _, r := range runs {
		if r.Engine == "" {
			continue
		}
		kind := r.Kind
		if _, ok := Priors[kind]; !ok {
			kind = KindWrite
		}
		k := [2]string{r.Engine, kind}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		g.n++
		if r.Success {
			g.ok++
		}
		if r.Duration > 0 {
			g.durs = append(g.durs, r.Duration.Seconds())
		}
		if r.CostKnown {
			g.costs = append(g.costs, r.CostUSD)
		}
	}
	out := w
	out.Stats = map[string]map[string]Stat{}
	for k, g := range groups {
		prior := Priors[k[1]]
		st := Stat{Runs: g.n}
		st.Success = (float64(g.ok) + Smoothing*prior.Success) / float64(g.n+Smoothing)
		st.DurationS = blend(median(g.durs), len(g.durs), prior.DurationS)
		st.CostUSD = blend(mean(g.costs), len(g.costs), prior.CostUSD)
		st.Success, st.DurationS, st.CostUSD = round3(st.Success), math.Round(st.DurationS), round3(st.CostUSD)
		if out.Stats[k[0]] == nil {
			out.Stats[k[0]] = map[string]Stat{}
		}
		out.Stats[k[0]][k[1]] = st
	}
	out.CalibratedAt = now.UTC()

	var changes []Change
	for engine, kinds := range out.Stats {
		for kind, st := range kinds {
			c := Change{Engine: engine, Kind: kind, New: st}
			if old, ok := w.Stats[engine][kind]; ok {
				if old == st {
					continue
				}
				c.Old = &old
			}
			changes = append(changes, c)
		}
	}
	sort.Slice(changes, func(i, j int) bool {
		if changes[i].Engine != changes[j].Engine {
			return changes[i].Engine < changes[j].Engine
		}
		return changes[i].Kind < changes[j].Kind
	})
	return out, changes
}

// blend moves from the prior towards v as n grows.
func blend(v float64, n int, prior float64) float64 {
	return (v*float64(n) + prior*Smoothing) / float64(n+Smoothing)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
