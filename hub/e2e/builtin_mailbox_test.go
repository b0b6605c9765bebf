//go:build unix

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// steeringHeader is the line the builtin worker puts before steering in a tool result.
const steeringHeader = "STEERING from your supervisor (this overrides earlier guidance):"

// TestBuiltinAskSupervisor: the model calls ask_supervisor; the job needs
// input and wait returns it with the question; the reply through the daemon
// reaches the model as the tool's result in its next request, and the job
// goes on to use it.
func TestBuiltinAskSupervisor(t *testing.T) {
	eachWire(t, func(t *testing.T, wr wire) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		const question = "Which colour should the button be?"
		b := newBuiltinWorld(t, ctx, wr, true,
			toolTurn(u, "ask_supervisor", map[string]any{"question": question, "context": "the task does not say"}),
			toolTurn(u, "write_file", map[string]any{"path": "colour.txt", "content": "teal\n"}),
			textTurn(u, "Wrote the colour the supervisor chose to colour.txt."),
		)
		r := b.start(ctx, protocol.StartParams{Task: "write the button colour to colour.txt", Verify: "grep -qx teal colour.txt", AskTimeoutS: 120})
		wres := hubtest.Daemon(t, b.c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30})
		if !wres.Done || len(wres.Jobs) != 1 {
			t.Fatalf("wait: %+v", wres)
		}
		st := wres.Jobs[0]
		if st.State != protocol.StateNeedsInput || st.Question == nil || st.Question.Text != question || st.Question.Kind != "question" {
			t.Fatalf("job should wait for an answer: %+v (question %+v)", st, st.Question)
		}
		if st.Question.Context != "the task does not say" {
			t.Errorf("question context: %q", st.Question.Context)
		}
		if n := len(b.model.Requests()); n != 1 {
			t.Fatalf("the model got %d requests while the question was pending, want 1", n)
		}
		rep := hubtest.Daemon(t, b.c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "teal, please"})
		if !rep.Delivered || rep.QuestionID != st.Question.ID {
			t.Errorf("reply: %+v", rep)
		}
		end := b.waitEnd(ctx, r.ID)
		if end.State != protocol.StateSucceeded {
			t.Fatalf("job ended %s: %s", end.State, end.Error)
		}
		if res := lastToolResults(t, b.model.request(1)); !strings.Contains(res, "teal, please") {
			t.Errorf("the answer did not reach the model; tool result: %q", res)
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":colour.txt"); got != "teal" {
			t.Errorf("colour.txt on the branch: %q", got)
		}
		var asked, answered bool
		for _, e := range b.events(ctx, r.ID) {
			asked = asked || (e.Kind == protocol.EventQuestion && e.Text == question)
			answered = answered || e.Kind == protocol.EventAnswer
		}
		if !asked || !answered {
			t.Errorf("journal: question %v, answer %v", asked, answered)
		}
	})
}

// TestBuiltinSteer: a steering message sent while the model is thinking
// (a delayed turn) is appended, under the steering header, to the tool
// result the model gets in its next request.
func TestBuiltinSteer(t *testing.T) {
	eachWire(t, func(t *testing.T, wr wire) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		slow := toolTurn(u, "list_dir", map[string]any{})
		slow.DelayMS = 2000
		b := newBuiltinWorld(t, ctx, wr, true,
			slow,
			toolTurn(u, "write_file", map[string]any{"path": "steered.txt", "content": "yes\n"}),
			textTurn(u, "Wrote steered.txt as the supervisor said."),
		)
		r := b.start(ctx, protocol.StartParams{Task: "look around, then write a file"})
		b.model.waitTurns(ctx, 1) // the model is in its delayed turn
		const steer = "Write your answer to steered.txt and nowhere else."
		sr := hubtest.Daemon(t, b.c).JobSteer(ctx, protocol.SteerParams{ID: r.ID, Text: steer})
		if !sr.Queued {
			t.Fatalf("steer not queued: %+v", sr)
		}
		if n := len(b.model.Requests()); n != 1 {
			t.Fatalf("the steer came too late to test anything: the model already got %d requests", n)
		}
		end := b.waitEnd(ctx, r.ID)
		if end.State != protocol.StateSucceeded {
			t.Fatalf("job ended %s: %s", end.State, end.Error)
		}
		res := lastToolResults(t, b.model.request(1))
		i := strings.Index(res, steeringHeader)
		if i < 0 || !strings.Contains(res[i:], steer) {
			t.Fatalf("the next tool result does not carry the steering:\n%s", res)
		}
		if !strings.Contains(res[:i], "bug.txt") {
			t.Errorf("the steering replaced the tool's own result instead of following it:\n%s", res)
		}
		delivered := false
		for _, e := range b.events(ctx, r.ID) {
			delivered = delivered || (e.Kind == protocol.EventDelivered && e.Text == steer)
		}
		if !delivered {
			t.Error("the journal has no delivered event for the steering")
		}
	})
}

// TestBuiltinStopDuringModelCall: stopping a job while the model takes its
// time (a 60 s turn) cancels it within seconds; what the worker wrote before
// is committed on the branch as salvage.
func TestBuiltinStopDuringModelCall(t *testing.T) {
	eachWire(t, func(t *testing.T, wr wire) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		b := newBuiltinWorld(t, ctx, wr, true,
			toolTurn(u, "write_file", map[string]any{"path": "half.txt", "content": "half done\n"}),
			scripted.Turn{Text: "this answer never comes", DelayMS: 60000},
		)
		r := b.start(ctx, protocol.StartParams{Task: "a long job", Verify: "true"})
		b.model.waitTurns(ctx, 2)
		t0 := time.Now()
		st := hubtest.Daemon(t, b.c).JobStop(ctx, protocol.IDParams{ID: r.ID})
		if !st.State.Terminal() {
			st = b.waitEnd(ctx, r.ID)
		}
		took := time.Since(t0)
		t.Logf("stop took %s", took.Round(time.Millisecond))
		if st.State != protocol.StateCancelled || !st.Salvaged {
			t.Fatalf("stopped job: %+v", st)
		}
		if took > 5*time.Second {
			t.Errorf("stop took %s", took)
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
			t.Errorf("half.txt on the branch: %q", got)
		}
		if msg := hubtest.Git(t, b.repo, "log", "-1", "--format=%B", "hub/"+r.ID); !strings.Contains(msg, "Hub-Salvage: true") {
			t.Errorf("the branch head is not a salvage commit:\n%s", msg)
		}
		ev := b.evidence(ctx, r.ID).Evidence
		if !ev.Salvaged || ev.Verify != nil || ev.State != protocol.StateCancelled {
			t.Errorf("evidence: salvaged %v, verify %+v, status %s", ev.Salvaged, ev.Verify, ev.State)
		}
		salvage := false
		for _, c := range ev.Commits {
			salvage = salvage || (c.Salvage && c.ByHub)
		}
		if !salvage {
			t.Errorf("evidence commits have no salvage commit: %+v", ev.Commits)
		}
		if n := len(b.model.Requests()); n != 2 {
			t.Errorf("the model got %d requests, want 2", n)
		}
		checkLedger(t, b.world)
	})
}

// TestBuiltinSlowModelIsNotAStall: a model call that takes longer than the
// stall timeout keeps the job alive; the worker is waiting, not stuck.
func TestBuiltinSlowModelIsNotAStall(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	u := scripted.Usage{Input: 100, Output: 10}
	slow := toolTurn(u, "write_file", map[string]any{"path": "slow.txt", "content": "thought long\n"})
	slow.DelayMS = 3500
	b := newBuiltinWorld(t, ctx, openaiWire, true, slow, textTurn(u, "Wrote slow.txt after a long think."))
	r := b.start(ctx, protocol.StartParams{Task: "think long, then write slow.txt", Verify: "test -f slow.txt", StallTimeoutS: 2})
	end := b.waitEnd(ctx, r.ID)
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s", end.State, end.Error)
	}
}
