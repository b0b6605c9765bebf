//go:build unix

package e2e

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// TestBuiltinHappyPath: the builtin worker, on a scripted model over each
// wire, reads bug.txt, fixes it with edit_file, runs the verify command with
// run_shell and answers. The job succeeds and verify passes on the branch;
// the evidence counts every model request, names the model, grades the
// rubric satisfied criterion by criterion, and prices the run when
// prices.json knows the model (and charges the reservation when it does
// not); the journal has live cost events from the run.
func TestBuiltinHappyPath(t *testing.T) {
	eachWire(t, func(t *testing.T, wr wire) {
		for _, priced := range []bool{true, false} {
			name := "priced"
			if !priced {
				name = "unpriced"
			}
			t.Run(name, func(t *testing.T) { testBuiltinHappyPath(t, wr, priced) })
		}
	})
}

func testBuiltinHappyPath(t *testing.T, wr wire, priced bool) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	u := scripted.Usage{Input: 1000, Output: 50}
	const verify = "grep -qx fixed bug.txt"
	b := newBuiltinWorld(t, ctx, wr, priced,
		toolTurn(u, "read_file", map[string]any{"path": "bug.txt"}),
		toolTurn(u, "edit_file", map[string]any{"path": "bug.txt", "old_text": "broken", "new_text": "fixed"}),
		toolTurn(u, "run_shell", map[string]any{"command": verify}),
		textTurn(u, "Fixed bug.txt: it now says fixed.\nChecked with the verify command."),
	)
	t0 := time.Now()
	r := b.start(ctx, protocol.StartParams{Task: "bug.txt says broken; make it say fixed", Verify: verify})
	st := b.waitEnd(ctx, r.ID)
	t.Logf("job %s ended %s in %s", r.ID, st.State, time.Since(t0).Round(time.Millisecond))
	if st.State != protocol.StateSucceeded || st.VerifyExit == nil || *st.VerifyExit != 0 {
		t.Fatalf("job ended %s (verify exit %s): %s", st.State, exitText(st.VerifyExit), st.Error)
	}

	// What the model saw: the key, the tools, and each tool's real result.
	reqs := b.model.Requests()
	if len(reqs) != 4 || b.model.Remaining(modelName) != 0 {
		t.Fatalf("the model got %d requests with %d turns left; want 4 and 0", len(reqs), b.model.Remaining(modelName))
	}
	if got := wr.key(reqs[0].Header); got != b.key {
		t.Errorf("the model was called with key %q, want the profile's key", got)
	}
	if reqs[0].Model != modelName {
		t.Errorf("request for model %q, want %q", reqs[0].Model, modelName)
	}
	for _, name := range []string{"read_file", "edit_file", "write_file", "run_shell", "ask_supervisor", "report_progress"} {
		if !slices.Contains(reqs[0].Tools, name) {
			t.Errorf("tool %s not offered; tools: %v", name, reqs[0].Tools)
		}
	}
	if res := lastToolResults(t, reqs[1]); !strings.Contains(res, "broken") {
		t.Errorf("read_file result lacks the file's content: %q", res)
	}
	if res := lastToolResults(t, reqs[2]); strings.HasPrefix(res, "error") {
		t.Errorf("edit_file failed: %q", res)
	}
	if res := lastToolResults(t, reqs[3]); !strings.Contains(res, "exit code 0") {
		t.Errorf("run_shell result: %q", res)
	}

	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("branch has bug.txt = %q", got)
	}
	if got := readFile(t, b.repo+"/bug.txt"); got != "broken" {
		t.Errorf("the user's checkout changed: bug.txt = %q", got)
	}

	rr := b.evidence(ctx, r.ID)
	ev := rr.Evidence
	if ev.Verify == nil || ev.Verify.ExitCode != 0 || ev.Verify.Commit != ev.Head || ev.Head == ev.Base {
		t.Errorf("verify %+v on head %s (base %s)", ev.Verify, ev.Head, ev.Base)
	}
	if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") {
		t.Errorf("claimed summary: %q", ev.Claimed.Report)
	}
	c := ev.Cost
	if c.Calls != len(reqs) || !slices.Equal(c.Models, []string{modelName}) || c.Tokens != int64(4*(u.Input+u.Output)) {
		t.Errorf("cost %+v; want %d calls, models [%s], %d tokens", c, len(reqs), modelName, 4*(u.Input+u.Output))
	}
	wantUSD := micros.Micros(4 * (u.Input + u.Output)).USD() // $1 per million tokens each way
	if priced {
		if !c.Known || math.Abs(c.USD-wantUSD) > 1e-9 || !st.Cost.Known || math.Abs(st.Cost.USD-wantUSD) > 1e-9 {
			t.Errorf("priced run: evidence cost %+v, status cost %v known %v; want known $%.6f", c, st.Cost.USD, st.Cost.Known, wantUSD)
		}
	} else if c.Known || c.USD != c.ReservedUSD || c.ReservedUSD <= 0 || st.Cost.Known {
		t.Errorf("unpriced run: evidence cost %+v, status known %v; want unknown, charged the reservation", c, st.Cost.Known)
	}

	rb := ev.Rubric
	if rb == nil || rb.Verdict != "satisfied" || len(rb.Criteria) != 2 {
		t.Fatalf("rubric: %+v", rb)
	}
	for _, kind := range []string{"verify", "changed"} {
		cr := rubricCriterion(rb, kind)
		if cr == nil || cr.Status != "pass" || cr.By != "hub" || cr.Evidence == "" || cr.ID == "" {
			t.Errorf("criterion %s: %+v", kind, cr)
		}
	}

	// Cost events came while the worker ran, one per model call.
	var costs []protocol.CostEvent
	exited := int64(-1)
	for _, e := range b.events(ctx, r.ID) {
		switch {
		case e.Kind == protocol.EventCost:
			if exited >= 0 {
				t.Errorf("cost event after the worker exited: %+v", e)
			}
			var ce protocol.CostEvent
			if err := json.Unmarshal(e.Data, &ce); err != nil {
				t.Fatalf("cost event data %s: %v", e.Data, err)
			}
			costs = append(costs, ce)
		case e.Kind == protocol.EventCommand && e.Text == "worker exited":
			exited = e.Cursor
		}
	}
	if exited < 0 || len(costs) != len(reqs) {
		t.Fatalf("journal has %d cost events (want %d) and worker exit at %d", len(costs), len(reqs), exited)
	}
	for i, ce := range costs {
		if ce.Calls != i+1 || ce.Known != priced || ce.Model != modelName || ce.Tokens != int64((i+1)*(u.Input+u.Output)) {
			t.Errorf("cost event %d: %+v", i+1, ce)
		}
	}
	if last := costs[len(costs)-1]; priced && math.Abs(last.USD-wantUSD) > 1e-9 {
		t.Errorf("last cost event says $%v, want $%v", last.USD, wantUSD)
	}
	checkLedger(t, b.world)
}
