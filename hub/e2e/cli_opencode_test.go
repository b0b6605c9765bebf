package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The opencode engine's end-to-end tests run the real OpenCode (pinned by
// scripts/agents.sh) as the worker of a real daemon and shim, against a
// scripted model on loopback. OpenCode takes 4–8 s a run here, so each test
// keeps its turns few.

// newOpenCodeWorld is a CLI world whose model is played by respond for
// OpenCode's agent requests; any other request (the title or summary
// agents, which are offered no tools) gets a short text.
func newOpenCodeWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	t.Setenv("HUB_OPENCODE", hubtest.AgentCLI(t, "opencode"))
	return newCLIWorld(t, ctx, openaiWire, func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, "bash") {
			return scripted.Turn{Text: "Hub job"}, true
		}
		return respond(r)
	})
}

// ocCall is a turn that calls one of OpenCode's tools.
func ocCall(name string, args map[string]any) scripted.Turn {
	b, _ := json.Marshal(args)
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: name, Args: b}}}
}

// ocLastCall is the tool the model called last in r's history ("" if none).
func ocLastCall(r *scripted.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return ""
}

// ocConfig reads the opencode.json the engine wrote for job id, and fails
// when the model key is in any file of the job's engine folder.
func ocConfig(t *testing.T, b *builtinWorld, id string) map[string]any {
	t.Helper()
	home := b.paths.EngineHome(id)
	_ = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), b.key) {
			t.Errorf("the model key is written in %s", p)
		}
		return nil
	})
	data, err := os.ReadFile(filepath.Join(home, "home", ".config", "opencode", "opencode.json"))
	if err != nil {
		t.Fatalf("the engine wrote no OpenCode config: %v", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The model fixes bug.txt with OpenCode's edit tool and checks it with its
// bash tool; hub commits and verifies, and the evidence holds the command
// the hub saw with its exit code, the worker's summary and a known cost.
func TestCLIOpenCodeEditsAndVerifies(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	b := newOpenCodeWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		switch ocLastCall(r) {
		case "":
			return ocCall("edit", map[string]any{"filePath": "bug.txt", "oldString": "broken", "newString": "fixed"}), true
		case "edit":
			return ocCall("bash", map[string]any{"command": "grep -qx fixed bug.txt"}), true
		}
		return scripted.Turn{Text: "Fixed bug.txt: it now says fixed. Checked with grep."}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "opencode", Profile: "t",
		Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"})
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") || !ev.Cost.Known || ev.Cost.Tokens == 0 {
		t.Errorf("evidence: summary %q, cost %+v", ev.Claimed.Report, ev.Cost)
	}
	if !strings.Contains(log, "[command] exit 0: grep -qx fixed bug.txt") || !strings.Contains(log, "[tool] edit ") {
		t.Errorf("the worker log lacks what the hub saw:\n%s", log)
	}
	seen := false
	for _, c := range ev.Observed.Commands {
		seen = seen || (c.Command == "grep -qx fixed bug.txt" && c.ExitCode != nil && *c.ExitCode == 0)
	}
	if !seen {
		t.Errorf("evidence lacks the observed command: %+v", ev.Observed.Commands)
	}
	zero := 0
	tracedCommand(t, b, r.ID, "grep -qx fixed bug.txt", &zero)
	// The prompt came whole (on stdin: OpenCode would quote an argument),
	// and the title agent, which hub turns off, asked nothing.
	reqs := b.model.Requests()
	if len(reqs) != 3 {
		t.Errorf("the model got %d requests, want 3 (edit, bash, summary)", len(reqs))
	}
	if first := reqs[0].Messages[0].Text; !strings.HasPrefix(first, "You are working one bounded task") || !strings.Contains(first, "`grep -qx fixed bug.txt`") {
		t.Errorf("the prompt OpenCode sent: %q", first)
	}
	cfg := ocConfig(t, b, r.ID)
	perm, _ := cfg["permission"].(map[string]any)
	if perm["bash"] != "allow" || perm["edit"] != "allow" || perm["webfetch"] != "deny" {
		t.Errorf("a write job's permissions: %v", perm)
	}
	// A denied tool is not offered; grep and glob are off without ripgrep
	// (OpenCode would download it).
	_, err := exec.LookPath("rg")
	if hasTool(&reqs[0], "webfetch") || hasTool(&reqs[0], "grep") != (err == nil) || !hasTool(&reqs[0], "hub_report_progress") {
		t.Errorf("the tools offered (rg on PATH: %v): %v", err == nil, reqs[0].Tools)
	}
}

// The model asks its supervisor through hub's worker MCP server (OpenCode
// names its tool hub_ask_supervisor); the job waits in needs_input, the
// reply reaches the model as the tool's result, and the job goes on to
// succeed with the answer.
func TestCLIOpenCodeAsksAndGoesOn(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	b := newOpenCodeWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case answerOf(r) != "":
			return ocCall("bash", map[string]any{"command": "echo " + answerOf(r) + " > bug.txt"}), true
		case ocLastCall(r) == "bash":
			return scripted.Turn{Text: "Wrote the supervisor's word to bug.txt."}, true
		case !hasTool(r, "hub_ask_supervisor"):
			return scripted.Turn{Text: "hub's tools are missing"}, true
		}
		return ocCall("hub_ask_supervisor", map[string]any{"question": "Which word should bug.txt say?"}), true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "opencode", Profile: "t",
		Task: "make bug.txt say the word the supervisor wants", Verify: "grep -qx teal bug.txt", AskTimeoutS: 120})
	wr := hubtest.Call[protocol.WaitResult](t, ctx, b.c, protocol.MethodJobWait, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 40})
	if st := wr.Jobs[0]; st.State != protocol.StateNeedsInput || st.Question == nil || !strings.Contains(st.Question.Text, "Which word") {
		t.Fatalf("the worker's question did not reach the supervisor: %+v\n%s", st, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	// While it waits: the config names the worker MCP server with a tool
	// timeout past the ask timeout, and the key only by reference.
	cfg := ocConfig(t, b, r.ID)
	hub, _ := cfg["mcp"].(map[string]any)["hub"].(map[string]any)
	if to, _ := hub["timeout"].(float64); to < 120_000 {
		t.Errorf("the worker MCP server's timeout is %v ms, shorter than the ask timeout", hub["timeout"])
	}
	if raw, _ := json.Marshal(cfg["provider"]); !strings.Contains(string(raw), `"apiKey":"{env:HUB_OPENCODE_API_KEY}"`) {
		t.Errorf("the provider's key is not taken from the environment: %s", raw)
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

// Stopped while the model takes its time, the job ends cancelled within
// seconds, and what the worker had done is salvaged onto its branch.
func TestCLIOpenCodeStopSalvages(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	slow := make(chan struct{}, 1)
	b := newOpenCodeWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		if ocLastCall(r) == "" {
			return ocCall("bash", map[string]any{"command": "echo half done > half.txt"}), true
		}
		select {
		case slow <- struct{}{}:
		default:
		}
		return scripted.Turn{Text: "never seen", DelayMS: 60_000}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "opencode", Profile: "t",
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
		t.Fatalf("stopped job: %+v after %s\n%s", st, time.Since(t0), readFile(t, b.paths.WorkerLog(r.ID)))
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
		t.Errorf("half.txt on the branch: %q", got)
	}
	if msg := hubtest.Git(t, b.repo, "log", "-1", "--format=%B", "hub/"+r.ID); !strings.Contains(msg, "Hub-Salvage: true") {
		t.Errorf("no salvage commit:\n%s", msg)
	}
}

// Steering queued while the worker runs, and never taken by it (it asked
// no hub tool), is delivered when OpenCode ends: hub continues the same
// OpenCode session (--session) with it, and the worker acts on it.
func TestCLIOpenCodeResumesWithSteering(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	first := make(chan struct{}, 1)
	b := newOpenCodeWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		last := lastMessage(r)
		switch {
		case last.Role == "user" && strings.HasPrefix(last.Text, "STEERING"):
			return ocCall("bash", map[string]any{"command": "echo steered > bug.txt"}), true
		case ocLastCall(r) == "bash":
			return scripted.Turn{Text: "Steered: bug.txt says steered."}, true
		}
		select {
		case first <- struct{}{}:
		default:
		}
		return scripted.Turn{Text: "First pass: nothing to change.", DelayMS: 2000}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "opencode", Profile: "t",
		Task: "look at bug.txt", Verify: "grep -qx steered bug.txt"})
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the worker never asked the model")
	}
	hubtest.Call[protocol.SteerResult](t, ctx, b.c, protocol.MethodJobSteer, protocol.SteerParams{ID: r.ID, Text: "write steered into bug.txt"})
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	if !strings.Contains(log, "resuming session ses_") {
		t.Errorf("the worker log does not show the resume:\n%s", log)
	}
	// The resumed run carried the first run's history: one session.
	reqs := b.model.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) < 4 || !strings.HasPrefix(last.Messages[0].Text, "You are working one bounded task") {
		t.Errorf("the resumed run's history: %+v", last.Messages)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "steered" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	if ev := b.evidence(ctx, r.ID).Evidence; !strings.Contains(ev.Claimed.Report, "Steered") {
		t.Errorf("summary %q", ev.Claimed.Report)
	}
}
