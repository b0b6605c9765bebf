package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestStepCatchesFalseClaim: the supervisor did a step itself (a commit and
// an uncommitted change) and claims the tests pass; they do not. `job/step`
// checks out the work tree as it is, runs the check there, has the cheap
// model narrate it — a model that goes along with the claim — and still
// says the claim and the state disagree, because hub ran the check itself.
// The user's repository is as it was: HEAD, refs, index and files; the
// narration is a job of its own, booked and closed in the ledger.
func TestStepCatchesFalseClaim(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	u := scripted.Usage{Input: 900, Output: 60}
	// The model believes the claim: it says the tests pass.
	b := newBuiltinWorld(t, ctx, openaiWire, true,
		textTurn(u, `{"narration": "bug.txt now says fixed in the commit, and the work tree adds a note. The tests pass.", "judgements": [{"id": "c2", "status": "pass", "evidence": "bug.txt: fixed"}]}`))
	repo := b.repo
	since := hubtest.Git(t, repo, "rev-parse", "HEAD")
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bug.txt", "fixed\n")
	hubtest.Git(t, repo, "commit", "-qam", "fix the bug")
	write("notes.txt", "the fix, explained\n") // not committed: the step's state includes it
	write("test.sh", "grep -qx fixed bug.txt && grep -q 'test: ok' notes.txt\n")
	head, refs := hubtest.Git(t, repo, "rev-parse", "HEAD"), hubtest.Git(t, repo, "for-each-ref")
	status := hubtest.Git(t, repo, "status", "--porcelain")

	res := hubtest.Daemon(t, b.c).Step(ctx, protocol.StepParams{
		Title: "fix the bug", Claim: "Fixed the bug in bug.txt. All tests pass.", Repo: repo, Since: since, Check: "sh test.sh"})
	t.Logf("step %s (%s, $%.6f):\n%s", res.ID, res.State, res.Cost.USD, res.Text)
	if res.State != protocol.StateSucceeded || !res.Disagree {
		t.Fatalf("step: %+v", res)
	}
	for _, want := range []string{
		"disagrees: \"All tests pass.\" — `sh test.sh` exit 1", // hub's check, outranking the model
		`agrees: "Fixed the bug in bug.txt." — bug.txt: fixed (model)`,
		"observed: 1 commit(s), 3 file(s) changed", // bug.txt committed; notes.txt and test.sh not
		"verdict: the claim and the state disagree on 1 statement(s)",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("the account lacks %q", want)
		}
	}
	// The model was asked once, with the claim, the statement to judge, the
	// check's outcome and the uncommitted file.
	if n := len(b.model.Requests()); n != 1 {
		t.Fatalf("the model got %d requests, want 1", n)
	}
	req := b.model.request(0)
	brief := req.Messages[len(req.Messages)-1].Text
	for _, want := range []string{"Fixed the bug in bug.txt. All tests pass.", "- c2: Fixed the bug in bug.txt.", "Check `sh test.sh`: exit 1", "notes.txt", "fix the bug"} {
		if !strings.Contains(brief, want) {
			t.Errorf("the model's brief lacks %q:\n%s", want, brief)
		}
	}
	if req.MaxTokens == 0 || req.MaxTokens > 800 {
		t.Errorf("the narration's answer is not bounded: max tokens %d", req.MaxTokens)
	}
	// The user's repository is untouched.
	if hubtest.Git(t, repo, "rev-parse", "HEAD") != head || hubtest.Git(t, repo, "for-each-ref") != refs ||
		hubtest.Git(t, repo, "status", "--porcelain") != status {
		t.Errorf("the step changed the user's repository")
	}
	// A job of its own: read, on the step engine, its cost booked and closed once.
	st := hubtest.Daemon(t, b.c).JobStatus(ctx, protocol.IDParams{ID: res.ID})
	if st.Kind != protocol.KindRead || st.Engine != "step" || !st.Cost.Known || st.Cost.USD <= 0 {
		t.Errorf("the step's job: %+v", st)
	}
	// Its trace has the check and the model call under the worker, with the call's tokens.
	tr := hubtest.Daemon(t, b.c).JobTrace(ctx, protocol.TraceParams{ID: res.ID})
	kinds := map[protocol.TraceKind]int{}
	for _, e := range tr.Entries {
		if e.Parent != "worker" {
			continue // the phases, and the worker's own entry
		}
		kinds[e.Kind]++
		if e.Kind == protocol.TraceModel && (e.TokensIn != 900 || e.TokensOut != 60) {
			t.Errorf("the model call's trace entry: %+v", e)
		}
		if e.Kind == protocol.TraceCommand && (e.ExitCode == nil || *e.ExitCode != 1) {
			t.Errorf("the check's trace entry: %+v", e)
		}
	}
	if kinds[protocol.TraceModel] != 1 || kinds[protocol.TraceCommand] != 1 {
		t.Errorf("the step's trace: %+v", tr.Entries)
	}
	led := hubtest.Daemon(t, b.c).LedgerList(ctx, protocol.LedgerParams{})
	found := 0
	for _, r := range led.Entries {
		if r.ID == res.ID {
			found++
			if r.Open || r.ChargedUSD != st.Cost.USD {
				t.Errorf("ledger row: %+v, cost %v", r, st.Cost.USD)
			}
		}
	}
	if found != 1 {
		t.Errorf("the ledger has %d rows for the step, want 1", found)
	}
}

// TestStepBadInput: what step refuses, before anything is made.
func TestStepBadInput(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	b := newBuiltinWorld(t, ctx, openaiWire, true, textTurn(scripted.Usage{Input: 1, Output: 1}, "{}"))
	for _, c := range []struct {
		p     protocol.StepParams
		field string
	}{
		{protocol.StepParams{Title: "t", Repo: b.repo}, "claim"},
		{protocol.StepParams{Claim: "did it", Repo: "relative/path"}, "repo"},
		{protocol.StepParams{Title: "t", Claim: "did it", Repo: t.TempDir()}, "repo"},
		{protocol.StepParams{Title: "t", Claim: "did it", Repo: b.repo, Since: "nosuch"}, "since"},
		{protocol.StepParams{Title: "t", Claim: "did it", Repo: b.repo, Profile: "nosuch"}, "profile"},
	} {
		_, err := b.c.Daemon().Step(ctx, c.p)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error about %s", c.p, err, c.field)
		}
	}
	if l := hubtest.Daemon(t, b.c).JobList(ctx, protocol.ListParams{}); len(l.Jobs) != 0 {
		t.Errorf("a refused step made %d job(s)", len(l.Jobs))
	}
}
