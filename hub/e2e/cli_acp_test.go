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

// The ACP engines' rows of the CLI scenarios (cli_scenarios_test.go) run
// the real agents over the Agent Client Protocol; a user-defined agent in
// config.json (one of them under another name) does the edit. Misbehaving
// user-defined agents have their own test here.

// acpAgent is one ACP agent as its model sees it.
type acpAgent struct {
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
}

var acpQwen = acpAgent{
	cli: "qwen", pathEnv: "HUB_QWEN", provider: profile.OpenAI,
	base: func(u string) string { return u + "/v1" },
	shell: func(c string) scripted.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
		return scripted.ToolCall{Name: "run_shell_command", Args: b}
	},
	tool: func(base string) string { return "mcp__hub__" + base },
}

var acpGemini = acpAgent{
	cli: "gemini", pathEnv: "HUB_GEMINI", provider: profile.Gemini,
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

// acpAgentWorld makes newACPWorld's worlds for a's row of the scenario
// table.
func acpAgentWorld(a acpAgent) func(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	return func(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
		t.Helper()
		return newACPWorld(t, ctx, a, "", respond)
	}
}

// myQwenWorld is a world whose config.json defines agent my-qwen: Qwen Code
// again, with its profile mapped into its own variables.
func myQwenWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	config := `{"agents": {"my-qwen": {"command": "` + hubtest.AgentCLI(t, "qwen") + `", "args": ["--acp", "--auth-type", "openai"],
		"provider": "openai", "env": {"OPENAI_API_KEY": "{key}", "OPENAI_BASE_URL": "{base_url}", "OPENAI_MODEL": "{model}"}}}}`
	return newACPWorld(t, ctx, acpQwen, config, respond)
}

// acpEditChecks: the agent got hub's worker tools through session/new, and
// hub turned its side calls off.
func acpEditChecks(t *testing.T, e cliEngine, x *cliEdit) {
	x.check = func(t *testing.T, j cliJob, ev *protocol.Evidence) {
		reqs := j.b.model.Requests()
		if len(reqs) == 0 {
			t.Fatal("the model got no request")
		}
		if !e.offersHub(&reqs[0], "ask_supervisor") {
			t.Errorf("hub's worker tools are not offered as %s: %v", e.hubName("ask_supervisor"), reqs[0].Tools)
		}
		if n := len(reqs); n != 2 {
			t.Errorf("the model got %d requests, want 2 (the shell call, the summary): side calls are on", n)
		}
	}
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

	engines := hubtest.Daemon(t, c).EngineList(ctx, protocol.Empty{})
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
	_, err := c.Daemon().JobStart(ctx, protocol.StartParams{Repo: repo, Engine: "gone", Task: "x"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/acp-agent is not on PATH") || !strings.Contains(err.Error(), "npm install -g gone-agent") {
		t.Errorf("start on the missing agent: %v", err)
	}
	explain := hubtest.Daemon(t, c).RouteExplain(ctx, protocol.StartParams{Repo: repo, Engine: "auto", Task: "x"})
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

	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Repo: repo, Engine: "crashy", Task: "do it", Verify: "true"})
	b := &builtinWorld{world: w, c: c}
	end := b.waitEnd(ctx, r.ID)
	log := readFile(t, w.paths.WorkerLog(r.ID))
	if end.State != protocol.StateFailed || !strings.Contains(end.Error, "the agent exited during its turn (exit code 3)") || !end.Salvaged {
		t.Fatalf("crashed agent: %+v\n%s", end, log)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
		t.Errorf("half.txt on the branch: %q", got)
	}
	ev := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	for _, l := range ev.Evidence.Observed.Leftovers {
		if !l.Ended {
			t.Errorf("a process the agent left survived: %+v", l)
		}
	}
}
