package agent_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/internal/micros"
)

// Every model call and every tool call is a step, a role's sub-loop's
// steps nest under the role's tool call, and each nested step lies inside
// its parent's time.
func TestStepsOfARunWithRoles(t *testing.T) {
	r := newRig(t, rigOpts{prices: `{"models":{"test-model":{"input":1.0,"output":2.0}}}`},
		calls(call("implementer", `{"task":"create hello.txt saying hi"}`)),
		calls(call("write_file", `{"path":"hello.txt","content":"hi\n"}`)),
		final("created hello.txt"),
		calls(call("reviewer", `{"task":"check hello.txt"}`)),
		calls(call("write_file", `{"path":"x.txt","content":"no"}`)), // the reviewer has no write_file
		final("no findings"),
		final("hello.txt is there"))
	cfg := r.config()
	cfg.Roles = true
	res := r.run(cfg)
	if res.Stop != agent.StopDone {
		t.Fatalf("result %+v", res)
	}
	type row struct{ ID, Parent, Kind, Name, Loop string }
	var got []row
	byID := map[string]agent.Step{}
	var sum micros.Micros
	for _, s := range r.mb.steps {
		got = append(got, row{s.ID, s.Parent, s.Kind, s.Name, s.Loop})
		byID[s.ID] = s
		sum += s.Micros
	}
	// Steps are reported as they end: a role's call after its sub-loop's steps.
	want := []row{
		{"m1", "", "model", "test-model", "lead"},
		{"m3", "t2", "model", "test-model", "implementer"},
		{"t4", "t2", "tool", "write_file", "implementer"},
		{"m5", "t2", "model", "test-model", "implementer"},
		{"t2", "", "tool", "implementer", "lead"},
		{"m6", "", "model", "test-model", "lead"},
		{"m8", "t7", "model", "test-model", "reviewer"},
		{"t9", "t7", "tool", "write_file", "reviewer"},
		{"m10", "t7", "model", "test-model", "reviewer"},
		{"t7", "", "tool", "reviewer", "lead"},
		{"m11", "", "model", "test-model", "lead"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	if len(r.srv.Requests()) != 7 {
		t.Errorf("%d requests, 7 model steps", len(r.srv.Requests()))
	}
	if sum != res.Spend.Micros || sum == 0 {
		t.Errorf("the steps cost %d, the run %d", sum, res.Spend.Micros)
	}
	for _, s := range r.mb.steps {
		if s.Kind == agent.StepModel && (s.TokensIn == 0 || s.TokensOut == 0 || !s.CostKnown) {
			t.Errorf("model step %s without tokens or price: %+v", s.ID, s)
		}
		if s.Took <= 0 || s.Start.IsZero() {
			t.Errorf("step %s has no time: %+v", s.ID, s)
		}
		if p, ok := byID[s.Parent]; ok && (s.Start.Before(p.Start) || s.Start.Add(s.Took).After(p.Start.Add(p.Took))) {
			t.Errorf("step %s is not inside its parent %s", s.ID, p.ID)
		}
	}
	if w := byID["t4"]; w.Failed || !strings.Contains(w.Args, `"path":"hello.txt"`) || w.Result == "" {
		t.Errorf("the implementer's write: %+v", w)
	}
	if w := byID["t9"]; !w.Failed || !strings.Contains(w.Result, `no tool named "write_file"`) {
		t.Errorf("the reviewer's refused write: %+v", w)
	}
	if m := byID["m1"]; m.Result != "→ implementer" {
		t.Errorf("the first model step's result: %q", m.Result)
	}
}

// A step's arguments and result are shortened before they leave the loop.
func TestStepTextIsBounded(t *testing.T) {
	big := strings.Repeat("x", 20000)
	r := newRig(t, rigOpts{}, calls(call("write_file", `{"path":"big.txt","content":"`+big+`"}`)), final("done"))
	res := r.run(r.config())
	if res.Stop != agent.StopDone {
		t.Fatalf("result %+v", res)
	}
	for _, s := range r.mb.steps {
		if len(s.Args) > 4<<10+len("…") || len(s.Result) > 4<<10+len("…") {
			t.Errorf("step %s carries %d and %d bytes", s.ID, len(s.Args), len(s.Result))
		}
	}
}
