package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The ACP engines' end-to-end tests run the real agents (pinned by
// scripts/agents.sh) over the Agent Client Protocol as workers of a real
// daemon and shim, against a scripted model on loopback: each engine edits
// and is verified, asks its supervisor and goes on with the reply, takes
// steering, and is stopped with its work salvaged. A user-defined agent in
// config.json (one of them under another name) does the same edit.

// acpAgent is one ACP agent as its model sees it.
type acpAgent struct {
	engine  string // the engine's name
	cli     string // the pinned CLI (hubtest.AgentCLI)
	pathEnv string // the variable that points the engine at it
	// provider and base make the profile: its provider, and its base URL
	// from the scripted server's.
	provider string
	base     func(url string) string
	// shell is the call of the agent's shell tool running command.
	shell func(command string) scripted.ToolCall
	// tool is the name the model calls hub's worker tool base by.
	tool func(base string) string
	// exitCodes: the agent says what its commands exited with (Gemini CLI
	// does not).
	exitCodes bool
}

var acpQwen = acpAgent{
	engine: "qwen", cli: "qwen", pathEnv: "HUB_QWEN", provider: profile.OpenAI,
	base: func(u string) string { return u + "/v1" },
	shell: func(c string) scripted.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
		return scripted.ToolCall{Name: "run_shell_command", Args: b}
	},
	tool:      func(base string) string { return "mcp__hub__" + base },
	exitCodes: true,
}

var acpGemini = acpAgent{
	engine: "gemini", cli: "gemini", pathEnv: "HUB_GEMINI", provider: profile.Gemini,
	base: func(u string) string { return u },
	shell: func(c string) scripted.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
		return scripted.ToolCall{Name: "run_shell_command", Args: b}
	},
	tool: func(base string) string { return "mcp_hub_" + base },
}

// newACPWorld is a world whose default profile "t" reaches a model played
// by respond; config, when set, is hub's config.json, written before the
// daemon starts.
func newACPWorld(t *testing.T, ctx context.Context, a acpAgent, config string, respond scripted.Responder) *builtinWorld {
	t.Helper()
	t.Setenv(a.pathEnv, hubtest.AgentCLI(t, a.cli))
	w := newWorld(t)
	b := &builtinWorld{world: w, keyEnv: keyEnvName}
	b.key = newModelKey(t, keyEnvName)
	b.model = &fakeModel{t: t, changed: make(chan struct{}), Server: scripted.New(nil)}
	b.model.SetResponder("", func(r *scripted.Request) (scripted.Turn, bool) {
		if len(r.Tools) == 0 {
			return scripted.Turn{Text: "side answer"}, true // a side request of the agent's own
		}
		return respond(r)
	})
	if err := b.model.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.model.Close() })
	st := profile.Store{Dir: w.hubConfigDir()}
	if err := st.Set(profile.Profile{Name: "t", Provider: a.provider, BaseURL: a.base(b.model.URL()), Model: modelName, KeyEnv: keyEnvName}); err != nil {
		t.Fatal(err)
	}
	w.setModelPrices(1, 1)
	if config != "" {
		if err := os.WriteFile(filepath.Join(w.hubConfigDir(), "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.c = w.connect(ctx)
	b.repo = sampleRepo(t, "repo")
	return b
}

// acpCalled reports whether the model called tool anywhere in r's history.
func acpCalled(r *scripted.Request, tool string) bool {
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == tool {
				return true
			}
		}
	}
	return false
}

// acpEdit: the model fixes bug.txt with the agent's shell tool; hub allows
// it (a command in the worktree), commits and verifies, and the evidence
// holds the command with its exit code, the summary and the tokens.
// A user-defined agent (config set) runs with the agent's own defaults: its
// side calls and deferred tools are its own business there.
func acpEdit(t *testing.T, a acpAgent, engineName, config string) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	shell := a.shell("echo fixed > bug.txt")
	b := newACPWorld(t, ctx, a, config, func(r *scripted.Request) (scripted.Turn, bool) {
		if acpCalled(r, shell.Name) {
			return scripted.Turn{Text: "Fixed bug.txt: it now says fixed."}, true
		}
		return scripted.Turn{ToolCalls: []scripted.ToolCall{shell}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: engineName, Profile: "t",
		Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"})
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded || end.VerifyExit == nil || *end.VerifyExit != 0 {
		t.Fatalf("job ended %s (verify exit %v): %s\n%s", end.State, end.VerifyExit, end.Error, log)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") || ev.Cost.Tokens == 0 || !ev.Cost.Known {
		t.Errorf("evidence: summary %q, cost %+v", ev.Claimed.Report, ev.Cost)
	}
	seen := false
	for _, c := range ev.Observed.Commands {
		seen = seen || (c.Command == "echo fixed > bug.txt" && c.Role == "worker command" && (!a.exitCodes || (c.ExitCode != nil && *c.ExitCode == 0)))
	}
	if !seen {
		t.Errorf("evidence lacks the observed command: %+v\n%s", ev.Observed.Commands, log)
	}
	var code *int
	if a.exitCodes {
		code = new(int)
	}
	tracedCommand(t, b, r.ID, "echo fixed > bug.txt", code)
	over := false
	for _, c := range ev.Observed.Commands {
		over = over || (c.Role == "worker" && strings.Contains(c.Command, "("+engineName+" over ACP") || strings.Contains(c.Command, "over ACP, profile t"))
	}
	if !over {
		t.Errorf("the worker is not recorded as run over ACP: %+v", ev.Observed.Commands)
	}
	if config != "" {
		return
	}
	// The agent got hub's worker tools through session/new.
	reqs := b.model.Requests()
	if len(reqs) == 0 || !hasTool(&reqs[0], a.tool("ask_supervisor")) {
		t.Errorf("hub's worker tools are not offered as %s: %v", a.tool("ask_supervisor"), reqs[0].Tools)
	}
	if n := len(reqs); n != 2 {
		t.Errorf("the model got %d requests, want 2 (the shell call, the summary): side calls are on", n)
	}
}

// acpAsks: the model asks its supervisor through hub's worker MCP server;
// the job waits in needs_input, the reply reaches the model, and the job
// succeeds with the answer.
func acpAsks(t *testing.T, a acpAgent) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	ask := a.tool("ask_supervisor")
	b := newACPWorld(t, ctx, a, "", func(r *scripted.Request) (scripted.Turn, bool) {
		switch {
		case acpCalled(r, "run_shell_command") || acpCalled(r, "shell"):
			return scripted.Turn{Text: "Wrote the supervisor's word to bug.txt."}, true
		case answerOf(r) != "":
			return scripted.Turn{ToolCalls: []scripted.ToolCall{a.shell("echo " + answerOf(r) + " > bug.txt")}}, true
		case !hasTool(r, ask):
			return scripted.Turn{Text: "hub's tools are missing"}, true
		}
		args, _ := json.Marshal(map[string]any{"question": "Which word should bug.txt say?"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: ask, Args: args}}}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: a.engine, Profile: "t",
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

// acpSteer: steering sent while the model takes its time cancels the
// agent's turn, and the next turn brings it; the agent acts on it in the
// same session.
func acpSteer(t *testing.T, a acpAgent) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	first := make(chan struct{}, 1)
	b := newACPWorld(t, ctx, a, "", func(r *scripted.Request) (scripted.Turn, bool) {
		last := lastMessage(r)
		switch {
		case acpCalled(r, "run_shell_command") || acpCalled(r, "shell"):
			return scripted.Turn{Text: "Steered: bug.txt says steered."}, true
		case last.Role == "user" && strings.Contains(last.Text, "STEERING from your supervisor"):
			return scripted.Turn{ToolCalls: []scripted.ToolCall{a.shell("echo steered > bug.txt")}}, true
		}
		select {
		case first <- struct{}{}:
		default:
		}
		return scripted.Turn{Text: "Still thinking.", DelayMS: 60_000}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: a.engine, Profile: "t",
		Task: "look at bug.txt", Verify: "grep -qx steered bug.txt"})
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the worker never asked the model")
	}
	t0 := time.Now()
	hubtest.Call[protocol.SteerResult](t, ctx, b.c, protocol.MethodJobSteer, protocol.SteerParams{ID: r.ID, Text: "write steered into bug.txt"})
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, b.paths.WorkerLog(r.ID))
	if end.State != protocol.StateSucceeded {
		for i, r := range b.model.Requests() {
			l := lastMessage(&r)
			t.Logf("request %d: %d messages, last %s %.200q", i, len(r.Messages), l.Role, l.Text)
		}
		t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
	}
	if d := time.Since(t0); d > 40*time.Second {
		t.Errorf("the steering took %s to act on: the slow turn was not cancelled", d)
	}
	if !strings.Contains(log, "cancelling the agent's turn to deliver it") {
		t.Errorf("the worker log does not show the cancel-and-continue:\n%s", log)
	}
	// The steered turn carries the steering and the task (an agent may
	// drop a cancelled turn from its history).
	var steered *scripted.Request
	for _, r := range b.model.Requests() {
		if l := lastMessage(&r); strings.Contains(l.Text, "STEERING from your supervisor") {
			steered = &r
			break
		}
	}
	if steered == nil || !strings.Contains(lastMessage(steered).Text, "write steered into bug.txt") || !strings.Contains(lastMessage(steered).Text, "look at bug.txt") {
		t.Errorf("the steered turn's request: %+v", steered)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "steered" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
}

// acpStop: stopped while the model takes its time, the job ends cancelled
// within seconds, what the worker had done salvaged onto its branch, and
// nothing of the agent left running.
func acpStop(t *testing.T, a acpAgent) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	slow := make(chan struct{}, 1)
	shell := a.shell("echo half done > half.txt")
	b := newACPWorld(t, ctx, a, "", func(r *scripted.Request) (scripted.Turn, bool) {
		if !acpCalled(r, shell.Name) {
			return scripted.Turn{ToolCalls: []scripted.ToolCall{shell}}, true
		}
		select {
		case slow <- struct{}{}:
		default:
		}
		return scripted.Turn{Text: "never seen", DelayMS: 60_000}, true
	})
	r := hubtest.Call[protocol.StartResult](t, ctx, b.c, protocol.MethodJobStart, protocol.StartParams{Repo: b.repo, Engine: a.engine, Profile: "t",
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
	if st.State != protocol.StateCancelled || !st.Salvaged || time.Since(t0) > 15*time.Second {
		t.Fatalf("stopped job: %+v after %s\n%s", st, time.Since(t0), readFile(t, b.paths.WorkerLog(r.ID)))
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
		t.Errorf("half.txt on the branch: %q", got)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	for _, l := range ev.Observed.Leftovers {
		if !l.Ended {
			t.Errorf("a process of the agent survived the stop: %+v", l)
		}
	}
}

func TestCLIGeminiEditsAndVerifies(t *testing.T) { acpEdit(t, acpGemini, "gemini", "") }
func TestCLIGeminiAsksAndGoesOn(t *testing.T)    { acpAsks(t, acpGemini) }
func TestCLIGeminiSteer(t *testing.T)            { acpSteer(t, acpGemini) }
func TestCLIGeminiStopSalvages(t *testing.T)     { acpStop(t, acpGemini) }

func TestCLIQwenEditsAndVerifies(t *testing.T) { acpEdit(t, acpQwen, "qwen", "") }
func TestCLIQwenAsksAndGoesOn(t *testing.T)    { acpAsks(t, acpQwen) }
func TestCLIQwenSteer(t *testing.T)            { acpSteer(t, acpQwen) }
func TestCLIQwenStopSalvages(t *testing.T)     { acpStop(t, acpQwen) }

// A user-defined agent: Qwen Code again, configured by config.json alone
// under another name, with its profile mapped into its own variables.
func TestCLIUserDefinedACPAgent(t *testing.T) {
	config := `{"agents": {"my-qwen": {"command": "` + hubtest.AgentCLI(t, "qwen") + `", "args": ["--acp", "--auth-type", "openai"],
		"provider": "openai", "env": {"OPENAI_API_KEY": "{key}", "OPENAI_BASE_URL": "{base_url}", "OPENAI_MODEL": "{model}"}}}}`
	acpEdit(t, acpQwen, "my-qwen", config)
}

// scriptAgent is a user-defined ACP agent written as a shell script: it
// answers initialize and session/new, then does what turn says when
// prompted (its own ids read from hub's requests).
func scriptAgent(t *testing.T, turn string) string {
	t.Helper()
	script := `#!/bin/sh
id() { echo "$1" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'; }
read -r l; printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"authMethods":[]}}\n' "$(id "$l")"
read -r l; printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$(id "$l")"
read -r l
` + turn + "\n"
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// User-defined agents that misbehave, through a real daemon and shim: one
// whose command is missing is listed as unavailable with the reason,
// refused at start with it, and passed over by `engine: auto`; one that
// crashes mid-turn fails with its exit, its work salvaged on the branch,
// nothing it started left running. (Silence, floods and escapes are the
// engine's own tests, with a scripted agent.)
func TestUserDefinedACPAgentsMisbehave(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	crash := scriptAgent(t, `echo 'half done' > half.txt
sleep 30 &
exit 3`)
	config := `{"agents": {
		"gone": {"command": "/nonexistent/acp-agent", "args": ["acp"], "install": "npm install -g gone-agent"},
		"crashy": {"command": "` + crash + `"}}}`
	w := newWorld(t)
	if err := os.MkdirAll(w.hubConfigDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.hubConfigDir(), "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")

	engines := hubtest.Call[protocol.EnginesResult](t, ctx, c, protocol.MethodEngineList, struct{}{})
	found := map[string]protocol.EngineInfo{}
	for _, e := range engines.Engines {
		found[e.Name] = e
	}
	if g, ok := found["gone"]; !ok || g.Available || !strings.Contains(g.Reason, "npm install -g gone-agent") {
		t.Errorf("the missing agent as listed: %+v", g)
	}
	if cr, ok := found["crashy"]; !ok || !cr.Available {
		t.Errorf("the script agent as listed: %+v", cr)
	}
	var res protocol.StartResult
	err := c.Call(ctx, protocol.MethodJobStart, protocol.StartParams{Repo: repo, Engine: "gone", Task: "x"}, &res)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/acp-agent is not on PATH") || !strings.Contains(err.Error(), "npm install -g gone-agent") {
		t.Errorf("start on the missing agent: %v", err)
	}
	explain := hubtest.Call[protocol.RouteExplainResult](t, ctx, c, protocol.MethodRouteExplain, protocol.StartParams{Repo: repo, Engine: "auto", Task: "x"})
	considered := false
	for _, r := range explain.Decision.Rejected {
		considered = considered || r.Engine == "gone"
	}
	for _, cand := range explain.Decision.Candidates {
		considered = considered || cand.Engine == "crashy"
		if cand.Engine == "gone" {
			t.Errorf("auto would run the missing agent: %+v", cand)
		}
	}
	if !considered {
		t.Errorf("auto did not consider the user's agents:\n%s", explain.Text)
	}

	r := hubtest.Call[protocol.StartResult](t, ctx, c, protocol.MethodJobStart, protocol.StartParams{Repo: repo, Engine: "crashy", Task: "do it", Verify: "true"})
	b := &builtinWorld{world: w, c: c}
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, w.paths.WorkerLog(r.ID))
	if end.State != protocol.StateFailed || !strings.Contains(end.Error, "the agent exited during its turn (exit code 3)") || !end.Salvaged {
		t.Fatalf("crashed agent: %+v\n%s", end, log)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
		t.Errorf("half.txt on the branch: %q", got)
	}
	ev := hubtest.Call[protocol.ResultResult](t, ctx, c, protocol.MethodJobResult, protocol.ResultParams{ID: r.ID, Evidence: true})
	for _, l := range ev.Evidence.Observed.Leftovers {
		if !l.Ended {
			t.Errorf("a process the agent left survived: %+v", l)
		}
	}
}
