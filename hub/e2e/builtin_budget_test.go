//go:build unix

package e2e

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestBuiltinBudget: at a micro-dollar a token, the first call reports
// 100,010 tokens ($0.10001) against a budget of $0.1005; the second call's
// bound (a full answer of 8192 tokens alone is $0.008) could cross it, so it
// is never made. The job fails saying so, the model got exactly the one call
// that fit, and the cost charged is known and within the budget. What the
// worker wrote before is salvaged.
func TestBuiltinBudget(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	big := scripted.Usage{Input: 100_000, Output: 10}
	b := newBuiltinWorld(t, ctx, openaiWire, true,
		toolTurn(big, "write_file", map[string]any{"path": "partial.txt", "content": "started\n"}),
		textTurn(scripted.Usage{Input: 1, Output: 1}, "this call must never be made"),
	)
	maxUSD := 0.1005
	r := b.start(ctx, protocol.StartParams{Task: "an expensive job", MaxUSD: &maxUSD, Verify: "true"})
	st := b.waitEnd(ctx, r.ID)
	t.Logf("job %s ended %s: %s", r.ID, st.State, st.Error)
	if st.State != protocol.StateFailed || !strings.Contains(st.Error, "budget") {
		t.Fatalf("job ended %s: %q; want failed on the budget", st.State, st.Error)
	}
	if n, left := len(b.model.Requests()), b.model.Remaining(modelName); n != 1 || left != 1 {
		t.Fatalf("the model got %d requests (%d turns left); want exactly the 1 that fits", n, left)
	}
	const want = 0.10001
	if !st.Cost.Known || math.Abs(st.Cost.USD-want) > 1e-9 || st.Cost.USD > maxUSD {
		t.Errorf("charged $%v (known %v); want known $%v within $%v", st.Cost.USD, st.Cost.Known, want, maxUSD)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	if !ev.Cost.Known || ev.Cost.Calls != 1 || math.Abs(ev.Cost.USD-want) > 1e-9 || math.Abs(ev.Cost.ReservedUSD-maxUSD) > 1e-9 {
		t.Errorf("evidence cost: %+v", ev.Cost)
	}
	if !ev.Salvaged || ev.Verify != nil {
		t.Errorf("evidence: salvaged %v, verify %+v; want salvage and no verify", ev.Salvaged, ev.Verify)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":partial.txt"); got != "started" {
		t.Errorf("partial.txt on the branch: %q", got)
	}
	checkLedger(t, b.world)
}
