package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestOpenCodeACPAgainstJSON measures what hub gets of OpenCode through
// its two headless modes, on the same task and model: the opencode engine
// (`opencode run --format json`) and OpenCode's ACP mode (`opencode acp`)
// as a user-defined agent given the same provider config. The engine keeps
// the mode that tells hub more; docs/engines.md has the figures.
func TestOpenCodeACPAgainstJSON(t *testing.T) {
	oc := hubtest.AgentCLI(t, "opencode")
	ctx := hubtest.Deadline(t, 120*time.Second)
	respond := func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, "bash") {
			return scripted.Turn{Text: "Hub job"}, true // OpenCode's title request
		}
		if acpCalled(r, "bash") {
			return scripted.Turn{Text: "Fixed bug.txt: it now says fixed."}, true
		}
		return ocCall("bash", map[string]any{"command": "echo fixed > bug.txt && grep -qx fixed bug.txt", "description": "fix"}), true
	}
	// OpenCode's ACP mode as a user's agent: the provider config hub's
	// engine would write, in a file the agent's OPENCODE_CONFIG names.
	cfgDir := t.TempDir()
	config := `{"agents": {"opencode-acp": {"command": "` + oc + `", "args": ["acp"], "provider": "openai",
		"env": {"OPENCODE_CONFIG": "` + filepath.Join(cfgDir, "opencode.json") + `", "HUB_OC_KEY": "{key}", "HUB_OC_BASE": "{base_url}",
		"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1"}}}}`
	t.Setenv("HUB_OPENCODE", oc)
	b := newACPWorld(t, ctx, acpQwen, config, respond)
	ocConfig, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": "hub/" + modelName, "small_model": "hub/" + modelName,
		"enabled_providers": []string{"hub"}, "autoupdate": false, "share": "disabled", "snapshot": false,
		"provider": map[string]any{"hub": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "hub",
			"options": map[string]any{"baseURL": "{env:HUB_OC_BASE}", "apiKey": "{env:HUB_OC_KEY}"},
			"models":  map[string]any{modelName: map[string]any{"name": modelName, "tool_call": true}}}},
		"permission": map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny", "websearch": "deny", "grep": "deny", "glob": "deny"},
		"agent":      map[string]any{"title": map[string]any{"disable": true}},
	})
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), ocConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	type got struct {
		state            protocol.State
		summary          string
		tokens           int64
		known            bool
		commands, exits  int
		seconds          float64
		requests, events int
	}
	run := func(engine string) got {
		before := len(b.model.Requests())
		t0 := time.Now()
		r := hubtest.Daemon(t, b.c).JobStart(ctx, protocol.StartParams{Repo: b.repo, Engine: engine, Profile: "t",
			Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"})
		end := b.waitEnd(ctx, r.ID)
		g := got{state: end.State, seconds: time.Since(t0).Seconds(), requests: len(b.model.Requests()) - before}
		if end.State != protocol.StateSucceeded {
			t.Errorf("%s: job ended %s: %s\n%s", engine, end.State, end.Error, readFile(t, b.paths.WorkerLog(r.ID)))
			return g
		}
		ev := b.evidence(ctx, r.ID).Evidence
		g.summary, g.tokens, g.known = ev.Claimed.Report, ev.Cost.Tokens, ev.Cost.Known
		for _, c := range ev.Observed.Commands {
			if c.Role == "worker command" {
				g.commands++
				if c.ExitCode != nil {
					g.exits++
				}
			}
		}
		log := readFile(t, b.paths.WorkerLog(r.ID))
		g.events = strings.Count(log, "\n")
		if os.Getenv("HUB_ACP_DEBUG") != "" {
			t.Logf("%s log:\n%s", engine, log)
		}
		return g
	}
	jsonMode, acpMode := run("opencode"), run("opencode-acp")
	t.Logf("opencode run --format json: %+v", jsonMode)
	t.Logf("opencode acp:               %+v", acpMode)
	// What each tells hub. Both finish the task with the same model
	// requests and give the command with its exit code; the JSON stream
	// gives every model call's tokens, the ACP mode (OpenCode 1.18.33) only
	// its last one's, so hub's cost of a run would be short: the engine
	// keeps the JSON mode.
	if jsonMode.tokens == 0 || jsonMode.exits != jsonMode.commands || jsonMode.commands == 0 {
		t.Errorf("the JSON mode told hub less than it used to: %+v", jsonMode)
	}
	if acpMode.state != protocol.StateSucceeded || acpMode.exits != acpMode.commands || acpMode.requests != jsonMode.requests {
		t.Errorf("OpenCode's ACP mode: %+v", acpMode)
	}
	if acpMode.tokens >= jsonMode.tokens {
		t.Errorf("OpenCode's ACP mode now reports all its tokens (%d, the JSON mode %d): measure again which mode the engine should keep", acpMode.tokens, jsonMode.tokens)
	}
}
