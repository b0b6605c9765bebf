//go:build unix

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestSupervisorClaude: Claude Code in print mode, its model played by the
// scripted server, supervises hub through `hub mcp`: it calls start, wait and
// result on an exec job and reports the head of the job's branch.
func TestSupervisorClaude(t *testing.T) { supClaudeScenario(t) }

func supClaudeScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "claude")
	f := newSupFixture(t, supClaude)
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"hub": map[string]any{
		"type": "stdio", "command": f.w.bin, "args": []string{"mcp"}, "env": f.hubEnv(),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.writeFile("mcp.json", mcpConfig)
	env := append(f.baseEnv(),
		"ANTHROPIC_BASE_URL="+f.srv.URL(),
		"ANTHROPIC_API_KEY=scripted-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", // no DNS, no telemetry, no update check
		"ENABLE_TOOL_SEARCH=false",                   // MCP tools up front, not behind ToolSearch
		"CLAUDE_CODE_MAX_RETRIES=0",                  // a model failure ends the run at once
		"MCP_TIMEOUT=30000",                          // ms for `hub mcp` to start, on a busy machine
	)
	r := f.run(60*time.Second, env, bin, "-p", supPrompt,
		"--mcp-config", cfg, "--strict-mcp-config",
		"--allowedTools", "mcp__hub__*",
		"--output-format", "stream-json", "--verbose")
	if r.code != 0 {
		t.Errorf("claude exited %d", r.code)
	}
	var final string
	var resultSeen bool
	for _, ev := range supJSONLines(r.stdout) {
		switch ev["type"] {
		case "system":
			if ev["subtype"] == "init" {
				connected := false
				servers, _ := ev["mcp_servers"].([]any)
				for _, s := range servers {
					m, _ := s.(map[string]any)
					connected = connected || (supStr(m, "name") == "hub" && supStr(m, "status") == "connected")
				}
				if !connected {
					t.Errorf("init event: mcp_servers %v, want hub connected", servers)
				}
			}
		case "result":
			resultSeen = true
			final = supStr(ev, "result")
			if ev["subtype"] != "success" || ev["is_error"] != false {
				t.Errorf("result event: subtype %v, is_error %v", ev["subtype"], ev["is_error"])
			}
			if d, _ := ev["permission_denials"].([]any); len(d) > 0 {
				t.Errorf("permission denials: %v", d)
			}
		}
	}
	if !resultSeen {
		t.Fatal("claude printed no result event")
	}
	f.check(final)
}
