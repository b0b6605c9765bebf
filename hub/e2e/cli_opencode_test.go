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

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The opencode engine's row of the CLI scenarios (cli_scenarios_test.go).
// OpenCode takes 4–8 s a run here (far more on a loaded machine: a steered
// job runs it twice), so each scenario keeps its turns few.

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

// ocBash is a call of OpenCode's bash tool.
func ocBash(command string) scripted.ToolCall {
	return scriptCall("bash", map[string]any{"command": command})
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

// ocEdit: the model fixes bug.txt with OpenCode's edit tool and checks it
// with its bash tool. The prompt came whole, the title agent (which hub
// turns off) asked nothing, the config gives a write job its permissions,
// and the tools offered follow them.
func ocEdit(t *testing.T, e cliEngine, x *cliEdit) {
	x.steps = []scripted.ToolCall{
		scriptCall("edit", map[string]any{"filePath": "bug.txt", "oldString": "broken", "newString": "fixed"}),
		ocBash("grep -qx fixed bug.txt"),
	}
	x.command = "grep -qx fixed bug.txt"
	x.check = func(t *testing.T, j cliJob, ev *protocol.Evidence) {
		if !strings.Contains(j.log, "[tool] edit ") {
			t.Errorf("the worker log lacks the edit:\n%s", j.log)
		}
		// The prompt came whole (on stdin: OpenCode would quote an
		// argument), and the title agent asked nothing.
		reqs := j.b.model.Requests()
		if len(reqs) != 3 {
			t.Errorf("the model got %d requests, want 3 (edit, bash, summary)", len(reqs))
		}
		if first := reqs[0].Messages[0].Text; !strings.HasPrefix(first, "You are working one bounded task") || !strings.Contains(first, "`grep -qx fixed bug.txt`") {
			t.Errorf("the prompt OpenCode sent: %q", first)
		}
		cfg := ocConfig(t, j.b, j.id)
		perm, _ := cfg["permission"].(map[string]any)
		if perm["bash"] != "allow" || perm["edit"] != "allow" || perm["webfetch"] != "deny" {
			t.Errorf("a write job's permissions: %v", perm)
		}
		// A denied tool is not offered; grep and glob are off without
		// ripgrep (OpenCode would download it).
		_, err := exec.LookPath("rg")
		if hasTool(&reqs[0], "webfetch") || hasTool(&reqs[0], "grep") != (err == nil) || !hasTool(&reqs[0], "hub_report_progress") {
			t.Errorf("the tools offered (rg on PATH: %v): %v", err == nil, reqs[0].Tools)
		}
	}
}

// ocAsking: while the question waits, the config names the worker MCP
// server with a tool timeout past the ask timeout, and the key only by
// reference.
func ocAsking(t *testing.T, j cliJob) {
	cfg := ocConfig(t, j.b, j.id)
	hub, _ := cfg["mcp"].(map[string]any)["hub"].(map[string]any)
	if to, _ := hub["timeout"].(float64); to < 120_000 {
		t.Errorf("the worker MCP server's timeout is %v ms, shorter than the ask timeout", hub["timeout"])
	}
	if raw, _ := json.Marshal(cfg["provider"]); !strings.Contains(string(raw), `"apiKey":"{env:HUB_OPENCODE_API_KEY}"`) {
		t.Errorf("the provider's key is not taken from the environment: %s", raw)
	}
}

// ocSteered: hub continued the same OpenCode session (--session), whose
// history the resumed run carried from the task's prompt on.
func ocSteered(t *testing.T, j cliJob) {
	if !strings.Contains(j.log, "resuming session ses_") {
		t.Errorf("the worker log does not show the resume:\n%s", j.log)
	}
	reqs := j.b.model.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) < 4 || !strings.HasPrefix(last.Messages[0].Text, "You are working one bounded task") {
		t.Errorf("the resumed run's history: %+v", last.Messages)
	}
}
