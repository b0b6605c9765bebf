package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// lastMessage is the last entry of a request's history.
func lastMessage(r *scripted.Request) scripted.Message {
	if len(r.Messages) == 0 {
		return scripted.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

func hasTool(r *scripted.Request, name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// newCLIWorld is a world whose profile "t" (the default) reaches a model
// played by respond, for an agent CLI worker.
func newCLIWorld(t *testing.T, ctx context.Context, wr wire, respond scripted.Responder) *builtinWorld {
	t.Helper()
	w := newWorld(t)
	b := &builtinWorld{world: w, keyEnv: keyEnvName}
	b.key = newModelKey(t, keyEnvName)
	b.model = &fakeModel{t: t, changed: make(chan struct{}), Server: scripted.New(nil)}
	b.model.SetResponder("", respond)
	if err := b.model.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.model.Close() })
	w.setModelProfile(wr, b.model, keyEnvName)
	w.setModelPrices(1, 1)
	b.c = w.connect(ctx)
	b.repo = sampleRepo(t, "repo")
	return b
}

func TestCLIClaudeWorker(t *testing.T) {
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	ctx := hubtest.Deadline(t, 120*time.Second)
	b := newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, "Bash") {
			return scripted.Turn{Text: "ok"}, true
		}
		if last := lastMessage(r); last.Role == "tool" {
			return scripted.Turn{Text: "Fixed bug.txt: it now says fixed. Checked with grep."}, true
		}
		args, _ := json.Marshal(map[string]string{"command": "echo fixed > bug.txt", "description": "fix the file"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "claude", Profile: "t",
		Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"})
	end := b.waitEnd(ctx, r.ID)
	ev := b.evidence(ctx, r.ID).Evidence
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") || !ev.Cost.Known {
		t.Errorf("evidence: summary %q, cost %+v", ev.Claimed.Report, ev.Cost)
	}
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if !strings.Contains(log, "[command] exit 0: echo fixed > bug.txt") {
		t.Errorf("the worker log lacks the command the hub saw:\n%s", log)
	}
	seen := false
	for _, c := range ev.Observed.Commands {
		seen = seen || (c.Command == "echo fixed > bug.txt" && c.ExitCode != nil && *c.ExitCode == 0)
	}
	if !seen {
		t.Errorf("evidence lacks the observed command: %+v", ev.Observed.Commands)
	}
	zero := 0
	tracedCommand(t, b, r.ID, "echo fixed > bug.txt", &zero)
}

// answerOf finds the supervisor's answer in the tool result a worker got
// from hub's worker MCP server.
func answerOf(r *scripted.Request) string {
	for _, tr := range lastMessage(r).ToolResults {
		if _, a, ok := strings.Cut(tr.Content, "Supervisor's answer: "); ok {
			return strings.TrimSpace(strings.SplitN(a, "\n", 2)[0])
		}
	}
	return ""
}

func TestCLIClaudeAsksAndGoesOn(t *testing.T) {
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	ctx := hubtest.Deadline(t, 120*time.Second)
	b := newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case !hasTool(r, "Bash"):
			return scripted.Turn{Text: "ok"}, true
		case answerOf(r) != "":
			args, _ := json.Marshal(map[string]string{"command": "echo " + answerOf(r) + " > bug.txt", "description": "write the answer"})
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}}, true
		case lastMessage(r).Role == "tool":
			return scripted.Turn{Text: "Wrote the supervisor's word to bug.txt."}, true
		}
		args, _ := json.Marshal(map[string]string{"question": "Which word should bug.txt say?"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "mcp__hub__ask_supervisor", Args: args}}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "claude", Profile: "t",
		Task: "make bug.txt say the word the supervisor wants", Verify: "grep -qx teal bug.txt", AskTimeoutS: 120})
	wr := hubtest.Call[protocol.WaitResult](t, ctx, b.c, protocol.MethodJobWait, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 60})
	if st := wr.Jobs[0]; st.State != protocol.StateNeedsInput || st.Question == nil || !strings.Contains(st.Question.Text, "Which word") {
		t.Fatalf("the worker's question did not reach the supervisor: %+v\n%s", st, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	hubtest.Call[protocol.ReplyResult](t, ctx, b.c, protocol.MethodJobReply, protocol.ReplyParams{ID: r.ID, Text: "teal"})
	end := b.waitEnd(ctx, r.ID)
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "teal" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
}

func TestCLIClaudeStopSalvages(t *testing.T) {
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	ctx := hubtest.Deadline(t, 120*time.Second)
	slow := make(chan struct{}, 1)
	b := newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case !hasTool(r, "Bash"):
			return scripted.Turn{Text: "ok"}, true
		case lastMessage(r).Role == "tool":
			select {
			case slow <- struct{}{}:
			default:
			}
			return scripted.Turn{Text: "never seen", DelayMS: 60_000}, true
		}
		args, _ := json.Marshal(map[string]string{"command": "echo half done > half.txt", "description": "start"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "claude", Profile: "t",
		Task: "a long job", Verify: "true"})
	select {
	case <-slow:
	case <-ctx.Done():
		t.Fatal("the worker never got to its slow turn")
	}
	t0 := time.Now()
	st := hubtest.Call[protocol.JobStatus](t, ctx, b.c, protocol.MethodJobStop, protocol.IDParams{ID: r.ID})
	if !st.State.Terminal() {
		st = b.waitEnd(ctx, r.ID)
	}
	if st.State != protocol.StateCancelled || !st.Salvaged || time.Since(t0) > 10*time.Second {
		t.Fatalf("stopped job: %+v after %s", st, time.Since(t0))
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
		t.Errorf("half.txt on the branch: %q", got)
	}
	if msg := hubtest.Git(t, b.repo, "log", "-1", "--format=%B", "hub/"+r.ID); !strings.Contains(msg, "Hub-Salvage: true") {
		t.Errorf("no salvage commit:\n%s", msg)
	}
}

// TestCLIClaudeResumesWithSteering: steering sent while Claude Code is on
// its last turn, which it never picks up through hub's tools, is delivered
// by resuming its session (--resume) once it ends.
func TestCLIClaudeResumesWithSteering(t *testing.T) {
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	ctx := hubtest.Deadline(t, 90*time.Second)
	ending, steered := make(chan struct{}, 1), make(chan struct{})
	b := newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		resumed := false
		for _, m := range r.Messages {
			resumed = resumed || (m.Role == "user" && strings.Contains(m.Text, "STEERING") && strings.Contains(m.Text, "say teal"))
		}
		switch {
		case !hasTool(r, "Bash"):
			return scripted.Turn{Text: "ok"}, true
		case resumed && lastMessage(r).Role == "tool":
			return scripted.Turn{Text: "Took the steering: bug.txt says teal."}, true
		case resumed:
			args, _ := json.Marshal(map[string]string{"command": "echo teal > bug.txt", "description": "steered"})
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}}, true
		}
		select {
		case ending <- struct{}{}:
		default:
		}
		select {
		case <-steered:
		case <-ctx.Done():
		}
		return scripted.Turn{Text: "Looked around; nothing to change."}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "claude", Profile: "t",
		Task: "look at bug.txt", Verify: "grep -qx teal bug.txt"})
	select {
	case <-ending:
	case <-ctx.Done():
		t.Fatal("the worker never got to its last turn")
	}
	hubtest.Call[protocol.SteerResult](t, ctx, b.c, protocol.MethodJobSteer, protocol.SteerParams{ID: r.ID, Text: "say teal in bug.txt"})
	close(steered)
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "teal" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	if !strings.Contains(log, "resuming session") {
		t.Errorf("no resume in the worker log:\n%s", log)
	}
}
