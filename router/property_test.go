package router

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hub-agents/hub/internal/micros"
)

var levels = []string{"worktree", "sandbox", "isolated", "untrusted"}

// randomSnapshot is a machine no one designed: engines with any isolation,
// installed or not, refusing or not, paying any way, with quotas fresh,
// stale, exhausted or reset, and a month anywhere from empty to over the cap.
func randomSnapshot(r *rand.Rand) Snapshot {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(86400)) * time.Second)
	s := Snapshot{Now: now}
	capM := micros.Micros(r.IntN(200)) * micros.PerUSD
	s.Money = Money{CapMicros: capM, ChargedMicros: micros.Micros(r.Int64N(int64(capM) + 2e6)), ReservedMicros: micros.Micros(r.Int64N(20e6))}
	n := 1 + r.IntN(7)
	for i := range n {
		e := Engine{Name: fmt.Sprintf("e%d", i), ReadOnly: r.IntN(2) == 0, Installed: r.IntN(5) > 0,
			Pays: []string{PaysFree, PaysAPI, PaysSubscription}[r.IntN(3)]}
		for _, l := range levels {
			if r.IntN(2) == 0 {
				e.Isolation = append(e.Isolation, l)
			}
		}
		if !e.Installed {
			e.Why = "missing"
		}
		if r.IntN(6) == 0 {
			e.Refusal = "no profile"
		}
		for q := range r.IntN(3) {
			used := float64(r.IntN(120))
			e.Quota = append(e.Quota, Quota{Name: fmt.Sprintf("w%d", q), UsedPct: used, Exhausted: r.IntN(4) == 0,
				ResetsAt: now.Add(time.Duration(r.IntN(7200)-3600) * time.Second), ReadAt: now.Add(-time.Duration(r.IntN(10000)) * time.Second),
				Source: "test", Confidence: "high"})
		}
		s.Engines = append(s.Engines, e)
	}
	return s
}

func randomRequest(r *rand.Rand, s Snapshot) Request {
	req := Request{Kind: []string{KindWrite, KindRead}[r.IntN(2)], Isolation: levels[r.IntN(len(levels))],
		MaxMicros: micros.Micros(r.IntN(6)) * 5e5, Effort: []string{"", "low", "medium", "high"}[r.IntN(4)]}
	req.ReadOnly = req.Kind == KindRead && r.IntN(2) == 0
	if r.IntN(4) == 0 && len(s.Engines) > 0 {
		req.Engine = s.Engines[r.IntN(len(s.Engines))].Name
	}
	return req
}

func randomWeights(r *rand.Rand, s Snapshot) Weights {
	w := Weights{Mode: []string{"", ModeLegacy}[r.IntN(2)], Stats: map[string]map[string]Stat{}}
	for _, e := range s.Engines {
		if r.IntN(2) == 0 {
			w.Stats[e.Name] = map[string]Stat{KindWrite: {Runs: r.IntN(30), Success: r.Float64(), DurationS: float64(r.IntN(3600)), CostUSD: r.Float64() * 3}}
		}
	}
	return w
}

// The promises of engine auto, over random machines: it never picks an
// engine that cannot enforce the isolation asked for, whose reservation
// would cross the monthly cap, that is not installed or refuses the job,
// whose quota is exhausted, or that pays per token on a $0 budget; it
// refuses with a reason exactly when nothing fits; and every engine is
// either a candidate or rejected, once.
func TestPropertyAutoNeverOversteps(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("HUB_ROUTER_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("HUB_ROUTER_SEED=%q is not a number", v)
		}
		seed = n
	}
	t.Logf("seed %d (replay with HUB_ROUTER_SEED)", seed)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	const cases = 20000
	picked := 0
	for i := range cases {
		snap := randomSnapshot(r)
		req := randomRequest(r, snap)
		d := Decide(req, snap, randomWeights(r, snap))
		fail := func(format string, args ...any) {
			t.Fatalf("case %d (seed %d): %s\nrequest %+v\n%s", i, seed, fmt.Sprintf(format, args...), req, d.Text())
		}
		seen := map[string]int{}
		for _, c := range d.Candidates {
			seen[c.Engine]++
		}
		for _, rj := range d.Rejected {
			seen[rj.Engine]++
			if rj.Reason == "" {
				fail("engine %s rejected without a reason", rj.Engine)
			}
		}
		for _, e := range snap.Engines {
			if seen[e.Name] != 1 {
				fail("engine %s appears %d times among candidates and rejections", e.Name, seen[e.Name])
			}
		}
		if (d.Chosen == "") == (d.Refusal == "") {
			fail("chosen %q and refusal %q: exactly one must be set", d.Chosen, d.Refusal)
		}
		for _, c := range d.Candidates {
			e := snap.Engines[slices.IndexFunc(snap.Engines, func(e Engine) bool { return e.Name == c.Engine })]
			switch {
			case !slices.Contains(e.Isolation, req.Isolation):
				fail("%s cannot enforce %s but is a candidate", e.Name, req.Isolation)
			case snap.Money.ChargedMicros+req.MaxMicros > snap.Money.CapMicros:
				fail("%s is a candidate though its reservation would cross the cap even with every open one closed", e.Name)
			case !e.Installed || e.Refusal != "":
				fail("%s is not installed or refuses, but is a candidate", e.Name)
			case req.ReadOnly && !e.ReadOnly:
				fail("%s cannot run read-only but is a candidate", e.Name)
			case e.Pays == PaysAPI && req.MaxMicros == 0:
				fail("%s pays per token on a $0 budget but is a candidate", e.Name)
			}
			if q, ok := exhausted(e.Quota, snap.Now); ok {
				fail("%s has quota %s exhausted but is a candidate", e.Name, q.Name)
			}
		}
		if d.Chosen != "" {
			picked++
			waits := snap.Money.ChargedMicros+snap.Money.ReservedMicros+req.MaxMicros > snap.Money.CapMicros
			if waits != (len(d.Notes) > 0) {
				fail("waits for money %v, but the notes say %q", waits, d.Notes)
			}
			if !req.Auto() && d.Chosen != req.Engine {
				fail("the caller named %s but %s was chosen", req.Engine, d.Chosen)
			}
			if d.Candidates[0].Engine != d.Chosen {
				fail("chosen %s is not the first candidate", d.Chosen)
			}
		}
	}
	if picked < cases/20 || picked > cases-cases/20 {
		t.Errorf("%d of %d random cases picked an engine: the generator explores too little", picked, cases)
	}
}
