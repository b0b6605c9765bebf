package router

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// history reads testdata/history.jsonl: 60 jobs of a recorded month in
// which codex succeeded often and fast, builtin was cheap but failed more,
// and claude did well at a high price.
func history(t *testing.T) []Run {
	t.Helper()
	f, err := os.Open("testdata/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var runs []Run
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Engine, Kind string
			Success      bool
			DurationS    float64 `json:"duration_s"`
			CostUSD      float64 `json:"cost_usd"`
			CostKnown    bool    `json:"cost_known"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, Run{Engine: r.Engine, Kind: r.Kind, Success: r.Success,
			Duration: time.Duration(r.DurationS * float64(time.Second)), CostUSD: r.CostUSD, CostKnown: r.CostKnown})
	}
	return runs
}

func order(d Decision) []string {
	var o []string
	for _, c := range d.Candidates {
		o = append(o, c.Engine)
	}
	return o
}

func TestCalibrationMovesRanking(t *testing.T) {
	snap := machine()
	engineNamed(&snap, "claude").Quota = nil
	before := Decide(write(), snap, DefaultWeights())
	if diff := cmp.Diff([]string{"builtin", "claude", "codex", "opencode"}, order(before)); diff != "" {
		t.Fatalf("uncalibrated order (-want +got):\n%s", diff)
	}
	w, changes := Calibrate(history(t), DefaultWeights(), now)
	if len(changes) == 0 {
		t.Fatal("calibration changed nothing")
	}
	after := Decide(write(), snap, w)
	if after.Chosen != "codex" {
		t.Errorf("after calibration chose %s, want codex (it succeeded most, fastest):\n%s", after.Chosen, after.Text())
	}
	pos := func(d Decision, e string) int {
		for i, c := range d.Candidates {
			if c.Engine == e {
				return i
			}
		}
		return -1
	}
	if pos(after, "builtin") <= pos(after, "codex") {
		t.Errorf("builtin (fails more) not below codex:\n%s", after.Text())
	}
	// An engine with no history keeps the prior, between the good and the bad.
	if st := after.Candidates[pos(after, "opencode")].Terms; st.Basis != "prior" {
		t.Errorf("opencode has no history but its basis is %q", st.Basis)
	}
	// Legacy mode ignores the fitted stats entirely.
	w.Mode = ModeLegacy
	legacy := Decide(write(), snap, w)
	if diff := cmp.Diff(order(before), order(legacy)); diff != "" {
		t.Errorf("legacy order moved with calibration (-uncalibrated +legacy):\n%s", diff)
	}
	// A second calibration on the same history changes nothing.
	w.Mode = ""
	if _, again := Calibrate(history(t), w, now); len(again) != 0 {
		t.Errorf("recalibrating the same history changed %d stats:\n%s", len(again), ChangesText(again))
	}
}

// Three runs must not swing an engine from the prior to their extreme.
func TestCalibrationSmooths(t *testing.T) {
	runs := []Run{
		{Engine: "codex", Kind: KindWrite, Success: false, Duration: time.Hour, CostUSD: 2, CostKnown: true},
		{Engine: "codex", Kind: KindWrite, Success: false, Duration: time.Hour, CostUSD: 2, CostKnown: true},
		{Engine: "codex", Kind: KindWrite, Success: false, Duration: time.Hour, CostUSD: 2, CostKnown: true},
	}
	w, _ := Calibrate(runs, DefaultWeights(), now)
	st := w.Stats["codex"][KindWrite]
	prior := Priors[KindWrite]
	if st.Success < prior.Success/2 {
		t.Errorf("three failures pulled success from %.2f to %.2f; smoothing should keep it above half the prior", prior.Success, st.Success)
	}
	if st.Success >= prior.Success {
		t.Errorf("three failures did not lower success (%.2f)", st.Success)
	}
	if st.Runs != 3 {
		t.Errorf("runs = %d", st.Runs)
	}
	// Unknown costs stay out of the mean.
	runs = append(runs, Run{Engine: "codex", Kind: KindWrite, Duration: time.Minute})
	w2, _ := Calibrate(runs, DefaultWeights(), now)
	if got, want := w2.Stats["codex"][KindWrite].CostUSD, w.Stats["codex"][KindWrite].CostUSD; got != want {
		t.Errorf("an unknown cost moved the mean: %.3f, want %.3f", got, want)
	}
}

func TestChangesText(t *testing.T) {
	old := DefaultWeights()
	old.Stats = map[string]map[string]Stat{"codex": {KindWrite: {Runs: 2, Success: 0.5, DurationS: 500, CostUSD: 0.4}}}
	_, cs := Calibrate(history(t), old, now)
	got := ChangesText(cs)
	for _, want := range []string{"engine   kind   runs", "codex    write  2 → 16", "claude   write  14"} {
		if !contains(got, want) {
			t.Errorf("changes text lacks %q:\n%s", want, got)
		}
	}
}
