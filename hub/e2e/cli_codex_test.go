package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// Codex's shell tool (unified exec) and hub's question tool, as Codex offers
// them on the Responses wire: MCP tools sit in namespace mcp__<server>.
const (
	codexShell = "exec_command"
	codexAsk   = "ask_supervisor"
	codexHubNS = "mcp__hub"
)

// codexRun is a call of Codex's shell tool.
func codexRun(cmd string) scripted.Turn {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: codexShell, Args: args}}}
}

// codexToolResults counts the tool results in a request's history.
func codexToolResults(r *scripted.Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.ToolResults)
	}
	return n
}

func newCodexWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	t.Setenv("HUB_CODEX", hubtest.AgentCLI(t, "codex"))
	return newCLIWorld(t, ctx, openaiWire, respond)
}

// codexNoKeyOnDisk fails when the model key is in any file under dir.
func codexNoKeyOnDisk(t *testing.T, dir, key string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), key) {
			t.Errorf("the model key is written in %s", p)
		}
		return nil
	})
}

// A write job asking for isolation sandbox goes to codex (the engine whose
// own sandbox enforces it): the model fixes bug.txt through Codex's shell,
// its try to write outside the worktree is refused by the sandbox, hub
// commits and verifies, and the evidence holds the command and the cost of
// the tokens.
func TestCLICodexEditsInItsSandbox(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	refused := make(chan string, 1)
	// Every answer carries Codex's rate-limit headers, as OpenAI's do: a
	// five-hour window 37% used. Codex records them in its session files,
	// hub reads them after the run, and the router sees them.
	resets := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	quota := map[string]string{"x-codex-primary-used-percent": "37", "x-codex-primary-window-minutes": "300",
		"x-codex-primary-reset-at": fmt.Sprint(resets.Unix())}
	b := newCodexWorld(t, ctx, withHeaders(quota, func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, codexShell) {
			return scripted.Turn{Text: "ok"}, true
		}
		if got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); got != os.Getenv(keyEnvName) {
			return scripted.Turn{Error: &scripted.HTTPError{Status: 401, Message: "wrong key"}}, true
		}
		switch codexToolResults(r) {
		case 0:
			return codexRun("echo fixed > bug.txt"), true
		case 1:
			return codexRun("echo escaped > " + outside), true
		}
		select {
		case refused <- lastMessage(r).ToolResults[0].Content:
		default:
		}
		return scripted.Turn{Text: "Fixed bug.txt: it now says fixed. Checked with cat."}, true
	}))
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Profile: "t",
		Isolation: protocol.IsolationSandbox, Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"})
	if r.Engine != "codex" {
		t.Fatalf("isolation sandbox went to engine %q, want codex", r.Engine)
	}
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	// Codex reports no command_execution for a command its sandbox refused:
	// the model's tool result says what happened.
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a command wrote %s, outside the worktree, through Codex's sandbox", outside)
	}
	select {
	case out := <-refused:
		if !strings.Contains(out, "Read-only file system") {
			t.Errorf("the write outside the worktree gave the model %q, not the sandbox's refusal", out)
		}
	default:
		t.Error("the model never saw the result of its write outside the worktree")
	}
	if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") {
		t.Errorf("summary %q", ev.Claimed.Report)
	}
	// Prices are a dollar a million tokens: the cost in micro-dollars is the token count.
	if c := ev.Cost; !c.Known || c.Tokens == 0 || micros.FromUSD(c.USD) != micros.Micros(c.Tokens) {
		t.Errorf("cost %+v, want known and priced from the tokens", c)
	}
	seen := false
	for _, c := range ev.Observed.Commands {
		seen = seen || (c.Command == "echo fixed > bug.txt" && c.ExitCode != nil && *c.ExitCode == 0)
	}
	if !seen {
		t.Errorf("evidence lacks the observed command: %+v", ev.Observed.Commands)
	}
	if !strings.Contains(log, "[command] exit 0: echo fixed > bug.txt") {
		t.Errorf("the worker log lacks the command the hub saw:\n%s", log)
	}
	zero := 0
	tracedCommand(t, b, r.ID, "echo fixed > bug.txt", &zero)
	codexNoKeyOnDisk(t, b.env.Home, b.key)

	// The quota Codex recorded is the router's now, with its source.
	eng := hubtest.Call[protocol.EnginesResult](t, ctx, b.c, protocol.MethodEngineList, struct{}{})
	var capacity string
	for _, e := range eng.Engines {
		if e.Name == "codex" {
			capacity = e.Capacity
		}
	}
	if !strings.Contains(capacity, "5h 37% used, resets ") || !strings.Contains(capacity, "(codex session rollout, read just now, high confidence)") {
		t.Errorf("codex's capacity after the run: %q", capacity)
	}
	ex := hubtest.Call[protocol.RouteExplainResult](t, ctx, b.c, protocol.MethodRouteExplain, protocol.StartParams{Repo: b.repo, Profile: "t",
		Isolation: protocol.IsolationSandbox})
	if !strings.Contains(ex.Text, "codex: 5h 37% used") || !strings.Contains(ex.Text, "−$0.74") {
		t.Errorf("route explain does not weigh codex's quota (37%% of $2.00 = $0.74):\n%s", ex.Text)
	}
}

// withHeaders sends headers with every answer of respond.
func withHeaders(h map[string]string, respond scripted.Responder) scripted.Responder {
	return func(r *scripted.Request) (scripted.Turn, bool) {
		t, ok := respond(r)
		t.Headers = h
		return t, ok
	}
}

// The worker asks through hub's MCP server (namespace mcp__hub); the job
// waits in needs_input, the reply reaches the model, the worker goes on.
func TestCLICodexAsksAndGoesOn(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	b := newCodexWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case !hasTool(r, codexShell):
			return scripted.Turn{Text: "ok"}, true
		case r.Namespaces[codexAsk] != codexHubNS:
			return scripted.Turn{Text: "hub's tools are missing: " + strings.Join(r.Tools, ", ")}, true
		case answerOf(r) != "":
			return codexRun("echo " + answerOf(r) + " > bug.txt"), true
		case lastMessage(r).Role == "tool":
			return scripted.Turn{Text: "Wrote the supervisor's word to bug.txt."}, true
		}
		args, _ := json.Marshal(map[string]string{"question": "Which word should bug.txt say?"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: codexAsk, Namespace: codexHubNS, Args: args}}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "codex", Profile: "t",
		Task: "make bug.txt say the word the supervisor wants", Verify: "grep -qx teal bug.txt", AskTimeoutS: 120})
	wr := hubtest.Call[protocol.WaitResult](t, ctx, b.c, protocol.MethodJobWait, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 60})
	if st := wr.Jobs[0]; st.State != protocol.StateNeedsInput || st.Question == nil || !strings.Contains(st.Question.Text, "Which word") {
		t.Fatalf("the worker's question did not reach the supervisor: %+v\n%s", st, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	hubtest.Call[protocol.ReplyResult](t, ctx, b.c, protocol.MethodJobReply, protocol.ReplyParams{ID: r.ID, Text: "teal"})
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "teal" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	if !strings.Contains(log, "[tool] mcp__hub__ask_supervisor") {
		t.Errorf("the worker log lacks the question's tool call:\n%s", log)
	}
}

// Stopping a worker whose model is slow ends it at once and salvages what
// it already wrote.
func TestCLICodexStopSalvages(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	slow := make(chan struct{}, 1)
	b := newCodexWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case !hasTool(r, codexShell):
			return scripted.Turn{Text: "ok"}, true
		case lastMessage(r).Role == "tool":
			select {
			case slow <- struct{}{}:
			default:
			}
			return scripted.Turn{Text: "never seen", DelayMS: 60_000}, true
		}
		return codexRun("echo half done > half.txt"), true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "codex", Profile: "t",
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

// Steering the worker never took (it called no hub tool after it came)
// resumes its Codex session with `codex exec resume`, which carries it out.
func TestCLICodexResumesWithSteering(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	ending, steered := make(chan struct{}, 1), make(chan struct{})
	b := newCodexWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		resumed := false
		for _, m := range r.Messages {
			resumed = resumed || (m.Role == "user" && strings.Contains(m.Text, "STEERING") && strings.Contains(m.Text, "say teal"))
		}
		switch {
		case !hasTool(r, codexShell):
			return scripted.Turn{Text: "ok"}, true
		case resumed && lastMessage(r).Role == "tool":
			return scripted.Turn{Text: "Took the steering: bug.txt says teal."}, true
		case resumed:
			return codexRun("echo teal > bug.txt"), true
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
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: "codex", Profile: "t",
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
	if ev := b.evidence(ctx, r.ID).Evidence; !strings.Contains(ev.Claimed.Report, "Took the steering") {
		t.Errorf("summary %q; log:\n%s", ev.Claimed.Report, log)
	}
	if !strings.Contains(log, "resuming session") {
		t.Errorf("no resume in the worker log:\n%s", log)
	}
}
