package router

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden explanations")

var now = time.Date(2026, 12, 2, 12, 30, 0, 0, time.UTC)

// machine is a typical snapshot: four agent engines ready, exec refusing
// a job without a command, $12 charged and $4 reserved of $100.
func machine() Snapshot {
	wt := []string{"worktree"}
	return Snapshot{Now: now, Money: Money{CapMicros: 100e6, ChargedMicros: 12e6, ReservedMicros: 4e6},
		Engines: []Engine{
			{Name: "builtin", Isolation: wt, ReadOnly: true, Pays: PaysAPI, Installed: true},
			{Name: "claude", Isolation: wt, ReadOnly: true, Pays: PaysAPI, Installed: true,
				Quota: []Quota{{Name: "five_hour", UsedPct: 35, ResetsAt: now.Add(2 * time.Hour), Source: "claude rate_limit_event",
					ReadAt: now.Add(-3 * time.Minute), Confidence: "high"}}},
			{Name: "codex", Isolation: []string{"worktree", "sandbox"}, ReadOnly: true, Pays: PaysAPI, Installed: true},
			{Name: "exec", Isolation: wt, Pays: PaysFree, Installed: true,
				Refusal: "the exec engine runs a command: pass exec"},
			{Name: "opencode", Isolation: wt, ReadOnly: true, Pays: PaysAPI, Installed: true},
		}}
}

func write() Request { return Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 2e6} }

func engineNamed(s *Snapshot, name string) *Engine {
	for i := range s.Engines {
		if s.Engines[i].Name == name {
			return &s.Engines[i]
		}
	}
	panic(name)
}

// calibrated is routing.json after a history where codex did well and
// cheaply on write jobs and builtin failed often.
func calibrated() Weights {
	return Weights{Stats: map[string]map[string]Stat{
		"codex":   {KindWrite: {Runs: 20, Success: 0.86, DurationS: 240, CostUSD: 0.3}},
		"builtin": {KindWrite: {Runs: 12, Success: 0.38, DurationS: 500, CostUSD: 0.35}},
		"claude":  {KindWrite: {Runs: 9, Success: 0.7, DurationS: 420, CostUSD: 1.2}},
	}}
}

// The golden explanations: one per situation a person must be able to
// read in seconds. Run with -update to rewrite them after a deliberate change.
func TestExplainGolden(t *testing.T) {
	tests := []struct {
		name string
		req  func() Request
		snap func() Snapshot
		w    func() Weights
	}{
		{"all_fine", write, machine, DefaultWeights},
		{"over_budget", func() Request { r := write(); r.MaxMicros = 1e6; return r }, machine, calibrated},
		{"quota_exhausted", write, func() Snapshot {
			s := machine()
			e := engineNamed(&s, "builtin")
			e.Installed, e.Why = false, "no default profile; hub profile set NAME --default"
			c := engineNamed(&s, "claude")
			c.Quota = []Quota{{Name: "five_hour", UsedPct: 100, Exhausted: true, ResetsAt: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC),
				Source: "claude rate_limit_event", ReadAt: now.Add(-12 * time.Minute), Confidence: "high"}}
			engineNamed(&s, "codex").Quota = []Quota{{Name: "primary", UsedPct: 80, ResetsAt: now.Add(time.Hour),
				Source: "codex session rollout", ReadAt: now.Add(-2 * time.Hour), Confidence: "high"}}
			return s
		}, DefaultWeights},
		{"isolation_one_engine", func() Request { r := write(); r.Isolation = "sandbox"; return r }, machine, DefaultWeights},
		{"nothing_fits", func() Request { r := write(); r.Isolation = "isolated"; return r }, machine, DefaultWeights},
		{"monthly_cap", func() Request { r := write(); r.MaxMicros = 10e6; return r }, func() Snapshot {
			s := machine()
			s.Money = Money{CapMicros: 100e6, ChargedMicros: 91e6, ReservedMicros: 6e6}
			return s
		}, DefaultWeights},
		{"monthly_cap_waits", func() Request { r := write(); r.MaxMicros = 5e6; return r }, func() Snapshot {
			s := machine()
			s.Money = Money{CapMicros: 100e6, ChargedMicros: 91e6, ReservedMicros: 6e6}
			return s
		}, DefaultWeights},
		{"read_only", func() Request {
			return Request{Kind: KindRead, Isolation: "worktree", ReadOnly: true, MaxMicros: 5e5}
		}, func() Snapshot {
			s := machine()
			engineNamed(&s, "exec").Refusal = ""
			return s
		}, DefaultWeights},
		{"preferred_unavailable", func() Request { r := write(); r.Engine = "opencode"; return r }, func() Snapshot {
			s := machine()
			e := engineNamed(&s, "opencode")
			e.Installed, e.Why = false, "opencode is not on PATH; install opencode-ai (npm i -g opencode-ai)"
			return s
		}, DefaultWeights},
		{"preferred_named", func() Request { r := write(); r.Engine = "claude"; return r }, machine, DefaultWeights},
		{"calibrated", write, machine, calibrated},
		{"legacy", write, machine, func() Weights { w := calibrated(); w.Mode = ModeLegacy; return w }},
		{"free_only", func() Request { r := write(); r.MaxMicros = 0; return r }, func() Snapshot {
			s := machine()
			engineNamed(&s, "exec").Refusal = ""
			return s
		}, DefaultWeights},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.req(), tt.snap(), tt.w()).Text()
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./router -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("explanation changed (-want +got); rerun with -update if deliberate:\n%s", diff)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		req        Request
		snap       Snapshot
		w          Weights
		chosen     string
		order      []string
		rejected   map[string]string // engine → code
		refusalHas string
	}{
		{name: "tie broken by the fixed order", req: write(), snap: machine(), w: DefaultWeights(),
			chosen: "builtin", order: []string{"builtin", "codex", "opencode", "claude"},
			rejected: map[string]string{"exec": RejectRefused}},
		{name: "sandbox only codex", req: Request{Kind: KindWrite, Isolation: "sandbox", MaxMicros: 2e6}, snap: machine(), w: DefaultWeights(),
			chosen: "codex", order: []string{"codex"},
			rejected: map[string]string{"builtin": RejectIsolation, "claude": RejectIsolation, "exec": RejectIsolation, "opencode": RejectIsolation}},
		{name: "calibration puts codex first", req: write(), snap: machine(), w: calibrated(),
			chosen: "codex", order: []string{"codex", "opencode", "claude", "builtin"}, rejected: map[string]string{"exec": RejectRefused}},
		{name: "legacy ignores calibration", req: write(), snap: machine(),
			w:      func() Weights { w := calibrated(); w.Mode = ModeLegacy; return w }(),
			chosen: "builtin", order: []string{"builtin", "claude", "codex", "opencode"}, rejected: map[string]string{"exec": RejectRefused}},
		{name: "legacy follows its own order", req: write(), snap: machine(),
			w:      Weights{Mode: ModeLegacy, Order: []string{"opencode", "codex"}},
			chosen: "opencode", order: []string{"opencode", "codex", "builtin", "claude"}, rejected: map[string]string{"exec": RejectRefused}},
		{name: "calibrated cost over budget", req: Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 1e6}, snap: machine(), w: calibrated(),
			chosen: "codex", order: []string{"codex", "opencode", "builtin"}, rejected: map[string]string{"claude": RejectBudget, "exec": RejectRefused}},
		{name: "exhausted quota whose reset passed is open again", req: write(), snap: func() Snapshot {
			s := machine()
			engineNamed(&s, "claude").Quota = []Quota{{Name: "five_hour", UsedPct: 100, Exhausted: true, ResetsAt: now.Add(-time.Minute), ReadAt: now.Add(-time.Hour)}}
			return s
		}(), w: DefaultWeights(), chosen: "builtin", order: []string{"builtin", "claude", "codex", "opencode"},
			rejected: map[string]string{"exec": RejectRefused}},
		{name: "cap", req: Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 89e6}, snap: machine(), w: DefaultWeights(),
			rejected:   map[string]string{"builtin": RejectCap, "claude": RejectCap, "codex": RejectCap, "opencode": RejectCap, "exec": RejectRefused},
			refusalHas: "ask for at most $88.00"},
		{name: "fits once open reservations close: waits", req: Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 86e6}, snap: machine(), w: DefaultWeights(),
			chosen: "builtin", order: []string{"builtin", "codex", "opencode", "claude"}, rejected: map[string]string{"exec": RejectRefused}},
		{name: "named engine refused says what auto would pick", req: Request{Kind: KindWrite, Isolation: "sandbox", MaxMicros: 2e6, Engine: "claude"},
			snap: machine(), w: DefaultWeights(), order: []string{"codex"},
			rejected:   map[string]string{"builtin": RejectIsolation, "claude": RejectIsolation, "exec": RejectIsolation, "opencode": RejectIsolation},
			refusalHas: "engine auto would pick codex"},
		{name: "unknown named engine", req: Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 2e6, Engine: "nope"},
			snap: machine(), w: DefaultWeights(), order: []string{"builtin", "codex", "opencode", "claude"},
			rejected: map[string]string{"exec": RejectRefused}, refusalHas: `engine "nope" is not one of hub's engines`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.req, tt.snap, tt.w)
			if d.Chosen != tt.chosen {
				t.Errorf("chosen %q, want %q\n%s", d.Chosen, tt.chosen, d.Text())
			}
			var order []string
			for _, c := range d.Candidates {
				order = append(order, c.Engine)
			}
			if diff := cmp.Diff(tt.order, order); diff != "" {
				t.Errorf("order (-want +got):\n%s\n%s", diff, d.Text())
			}
			got := map[string]string{}
			for _, r := range d.Rejected {
				got[r.Engine] = r.Code
			}
			if diff := cmp.Diff(tt.rejected, got); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
			if tt.refusalHas != "" && !contains(d.Refusal, tt.refusalHas) {
				t.Errorf("refusal %q does not say %q", d.Refusal, tt.refusalHas)
			}
			if (d.Chosen == "") != (d.Refusal != "") {
				t.Errorf("chosen %q with refusal %q: exactly one must be set", d.Chosen, d.Refusal)
			}
		})
	}
}

func TestNext(t *testing.T) {
	d := Decide(write(), machine(), DefaultWeights())
	var walk []string
	for e := d.Chosen; e != ""; e = d.Next(e) {
		walk = append(walk, e)
	}
	if diff := cmp.Diff([]string{"builtin", "codex", "opencode", "claude"}, walk); diff != "" {
		t.Errorf("fallback walk (-want +got):\n%s", diff)
	}
	named := Decide(Request{Kind: KindWrite, Isolation: "worktree", MaxMicros: 2e6, Engine: "codex"}, machine(), DefaultWeights())
	if n := named.Next("codex"); n != "" {
		t.Errorf("a named engine fell back to %q; it must not", n)
	}
}

func TestParseWeights(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{`{"mode":"legacy"}`, ""},
		{`{"mode":"utility","value_usd":10,"stats":{"codex":{"write":{"runs":3,"success":0.5,"duration_s":60,"cost_usd":0.1}}}}`, ""},
		{`{"mode":"fast"}`, `mode "fast" is not`},
		{`{"mdoe":"legacy"}`, `unknown field "mdoe"`},
		{`{"value_usd":-1}`, "value_usd must be a positive number"},
		{`{"order":["codex","codex"]}`, `engine "codex" is twice in order`},
		{`{"stats":{"codex":{"write":{"success":1.5}}}}`, "stats of codex/write are out of range"},
		{`not json`, "routing.json:"},
	} {
		_, err := ParseWeights([]byte(tt.in))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.err != "" && (err == nil || !contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one saying %q", tt.in, err, tt.err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestOverlaps: a job naming files a live job is already changing is told
// so, whichever engine takes it; one naming other files is not.
func TestOverlaps(t *testing.T) {
	snap := Snapshot{Engines: []Engine{{Name: "exec", Installed: true, Isolation: []string{"worktree"}, Pays: "free"}},
		Money: Money{CapMicros: 100_000_000},
		Live: []Live{{Job: "aaaa1111", Branch: "hub/aaaa1111", Touched: []string{"src/a.go", "README.md"}},
			{Job: "bbbb2222", Branch: "hub/bbbb2222", Touched: []string{"docs/x.md"}}}}
	req := Request{Kind: "write", Isolation: "worktree", Engine: "exec", Files: []string{"src/"}}
	d := Decide(req, snap, Weights{})
	if len(d.Overlaps) != 1 || d.Overlaps[0].Job != "aaaa1111" || len(d.Overlaps[0].Files) != 1 || d.Overlaps[0].Files[0] != "src/a.go" {
		t.Fatalf("overlaps %+v", d.Overlaps)
	}
	if len(d.Notes) == 0 || !strings.Contains(d.Notes[0], "job aaaa1111 (hub/aaaa1111) is already changing src/a.go") || !strings.Contains(d.Text(), "serialise them") {
		t.Errorf("notes %q", d.Notes)
	}
	req.Files = []string{"lib"}
	if d := Decide(req, snap, Weights{}); len(d.Overlaps) != 0 {
		t.Errorf("a job naming lib/: %+v", d.Overlaps)
	}
}
