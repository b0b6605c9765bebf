//go:build unix

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/internal/tomltext"
)

// TestSupervisorCodex: Codex (`codex exec --json`), its model played by the
// scripted server over the Responses wire, supervises hub through
// `hub mcp`: start, wait, result on an exec job, then the branch's head.
func TestSupervisorCodex(t *testing.T) { supCodexScenario(t) }

func supCodexScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "codex")
	f := newSupFixture(t, supCodex)
	codexHome := filepath.Join(f.scratch, "codex-home")
	// An unknown model slug: Codex then offers MCP tools up front instead
	// of behind its client-side tool search.
	config := strings.Join([]string{
		`model = "scripted-supervisor"`,
		`model_provider = "scripted"`,
		`approval_policy = "never"`,
		`sandbox_mode = "read-only"`,
		`check_for_update_on_startup = false`,
		``,
		`[model_providers.scripted]`,
		`name = "Scripted"`,
		`base_url = ` + tomltext.Value(f.srv.URL()+"/v1"),
		`wire_api = "responses"`,
		`env_key = "SCRIPTED_API_KEY"`,
		`request_max_retries = 0`,
		`stream_max_retries = 0`,
		``,
		`[mcp_servers.hub]`,
		`command = ` + tomltext.Value(f.w.bin),
		`args = ["mcp"]`,
		`env = ` + tomltext.Value(f.hubEnv()),
		`default_tools_approval_mode = "approve"`, // else approval_policy=never refuses every MCP call
		`startup_timeout_sec = 30`,
		``,
		`[analytics]`,
		`enabled = false`,
		``,
		`[features]`,
		`plugins = false`,
		`unbounded_connection_retries = false`,
		``,
	}, "\n")
	f.writeFile("codex-home/config.toml", []byte(config))
	env := append(f.baseEnv(), "CODEX_HOME="+codexHome, "SCRIPTED_API_KEY=scripted-dummy")
	r := f.run(60*time.Second, env, bin, "exec", "--json", "--ephemeral", supPrompt)
	if r.code != 0 {
		t.Errorf("codex exited %d", r.code)
	}
	var final string
	calls := map[string]string{} // tool → status
	completed := false
	for _, ev := range supJSONLines(r.stdout) {
		switch ev["type"] {
		case "item.completed":
			item, _ := ev["item"].(map[string]any)
			switch supStr(item, "type") {
			case "agent_message":
				final = supStr(item, "text")
			case "mcp_tool_call":
				if supStr(item, "server") == "hub" {
					calls[supStr(item, "tool")] = supStr(item, "status")
				}
			}
		case "turn.completed":
			completed = true
		case "turn.failed":
			t.Errorf("turn failed: %v", ev["error"])
		}
	}
	if !completed {
		t.Error("codex printed no turn.completed")
	}
	for _, tool := range []string{"start", "wait", "result"} {
		if calls[tool] != "completed" {
			t.Errorf("mcp_tool_call hub/%s: status %q, want completed (calls %v)", tool, calls[tool], calls)
		}
	}
	f.check(final)
}
