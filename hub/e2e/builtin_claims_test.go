package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestBuiltinClaimIsNotEvidence: what the worker says does not decide the
// job; what the hub observes does.
func TestBuiltinClaimIsNotEvidence(t *testing.T) {
	// The model says it is done and the tests pass, without touching
	// anything, three times (its answer and both revisions the self-check
	// asks for). Verify fails on the hub's own run: the job fails, and the
	// rubric says so, by the hub.
	t.Run("verify fails", func(t *testing.T) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		const claim = "All done, tests pass."
		b := newBuiltinWorld(t, ctx, openaiWire, true, textTurn(u, claim), textTurn(u, claim), textTurn(u, claim))
		repo := hubtest.Repo(t, t.TempDir()+"/repo", map[string]string{
			"bug.txt": "broken\n",
			"test.sh": "grep -qx fixed bug.txt || { echo 'FAIL: bug.txt still says broken'; exit 1; }\n",
		})
		r := b.start(ctx, protocol.StartParams{Task: "fix bug.txt so that test.sh passes", Repo: repo, Verify: "sh test.sh"})
		st := b.waitEnd(ctx, r.ID)
		if st.State != protocol.StateFailed || st.VerifyExit == nil || *st.VerifyExit != 1 || !strings.Contains(st.Error, "verify failed") {
			t.Fatalf("job ended %s (verify exit %s): %s", st.State, exitText(st.VerifyExit), st.Error)
		}
		// `hub result ID --evidence`, the real CLI, prints the evidence and
		// exits non-zero for a failed job.
		out, errOut, code := hubtest.Hub(t, "result", r.ID, "--evidence")
		if code == 0 {
			t.Errorf("hub result --evidence of a failed job exited 0")
		}
		var ev protocol.Evidence
		if err := json.Unmarshal([]byte(out), &ev); err != nil {
			t.Fatalf("hub result --evidence printed no evidence JSON (%v):\n%s\n%s", err, out, errOut)
		}
		if ev.ID != r.ID || ev.State != protocol.StateFailed {
			t.Errorf("evidence of %s is %s", ev.ID, ev.State)
		}
		if ev.Claimed.Report != claim {
			t.Errorf("claimed summary %q, want the worker's words kept as a claim", ev.Claimed.Report)
		}
		if ev.Rubric == nil || ev.Rubric.Verdict != "failed" {
			t.Fatalf("rubric: %+v", ev.Rubric)
		}
		v := rubricCriterion(ev.Rubric, "verify")
		if v == nil || v.Status != "fail" || v.By != "hub" || !strings.Contains(v.Evidence, "exit 1") {
			t.Errorf("verify criterion: %+v", v)
		}
		if c := rubricCriterion(ev.Rubric, "changed"); c == nil || c.Status != "fail" || c.By != "hub" {
			t.Errorf("changed criterion: %+v", c)
		}
		// The self-check sent the model back twice with the hub's findings.
		reqs := b.model.Requests()
		if len(reqs) != 3 {
			t.Fatalf("the model got %d requests, want 3 (an answer and two revisions)", len(reqs))
		}
		for _, req := range reqs[1:] {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != "user" || !strings.Contains(last.Text, "does not meet the definition of done") || !strings.Contains(last.Text, "bug.txt still says broken") {
				t.Errorf("revision request ends with %s message %q", last.Role, last.Text)
			}
		}
		selfChecks := 0
		for _, e := range b.events(ctx, r.ID) {
			if e.Kind == protocol.EventProgress && strings.HasPrefix(e.Text, "self-check: rubric: failed") {
				selfChecks++
			}
		}
		if selfChecks != 2 {
			t.Errorf("journal has %d self-check progress notes, want 2", selfChecks)
		}
	})

	// The definition of done forbids touching README.md; the model fixes
	// the bug (verify passes) but also edits README.md. The hub's rubric
	// fails the job and names the file.
	t.Run("definition of done broken", func(t *testing.T) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		b := newBuiltinWorld(t, ctx, openaiWire, true,
			toolTurn(u, "edit_file", map[string]any{"path": "bug.txt", "old_text": "broken", "new_text": "fixed"}),
			toolTurn(u, "write_file", map[string]any{"path": "README.md", "content": "# sample\n\nbug.txt is fixed.\n"}),
			textTurn(u, "Fixed bug.txt and noted it in README.md."),
		)
		// Effort low: no revision rounds, so the model's answer stands as it is.
		r := b.start(ctx, protocol.StartParams{Task: "fix bug.txt", Verify: "grep -qx fixed bug.txt",
			DefinitionOfDone: "do not change README.md", Effort: "low"})
		st := b.waitEnd(ctx, r.ID)
		if st.State != protocol.StateFailed || st.VerifyExit == nil || *st.VerifyExit != 0 || !strings.Contains(st.Error, "README.md") {
			t.Fatalf("job ended %s (verify exit %s): %q; want failed naming README.md with verify passing", st.State, exitText(st.VerifyExit), st.Error)
		}
		ev := b.evidence(ctx, r.ID).Evidence
		if ev.Rubric == nil || ev.Rubric.Verdict == "satisfied" || !strings.Contains(ev.Rubric.Line, "README.md") {
			t.Fatalf("rubric: %+v", ev.Rubric)
		}
		un := rubricCriterion(ev.Rubric, "unchanged")
		if un == nil || un.Status != "fail" || un.By != "hub" || !strings.Contains(un.Evidence, "README.md") {
			t.Errorf("unchanged criterion: %+v", un)
		}
		if v := rubricCriterion(ev.Rubric, "verify"); v == nil || v.Status != "pass" {
			t.Errorf("verify criterion: %+v", v)
		}
		if ev.State != protocol.StateFailed || !strings.Contains(ev.Error, "README.md") {
			t.Errorf("evidence status %s error %q", ev.State, ev.Error)
		}
		if n := len(b.model.Requests()); n != 3 {
			t.Errorf("the model got %d requests, want 3", n)
		}
	})
}
