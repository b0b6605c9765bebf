//go:build unix

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestSupervisorQwen: Qwen Code (`qwen --output-format stream-json`), its
// model played by the scripted server over Chat Completions, supervises hub
// through `hub mcp` as `hub install --client qwen` set it up: start, wait,
// result on an exec job, then the branch's head.
func TestSupervisorQwen(t *testing.T) { supQwenScenario(t) }

func supQwenScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "qwen")
	f := newSupFixture(t, supQwen)
	qwenHome := filepath.Join(f.scratch, "qwen-home")
	// The user's own settings, which install keeps: nothing leaves the
	// machine (usage statistics, telemetry, the update check; a run traced
	// with strace connected to the scripted server and hub's socket only),
	// no side requests to the model (the memory agent that runs after a
	// session), no systemd-inhibit over D-Bus while it streams, and MCP
	// tools offered up front rather than behind tool_search.
	f.writeFile("qwen-home/settings.json", []byte(`{
  // offline
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false, "preventSystemSleep": false },
  "memory": { "enableManagedAutoMemory": false, "enableManagedAutoDream": false },
  "tools": { "toolSearch": { "enabled": false } }
}
`))
	f.install("qwen", "QWEN_HOME="+qwenHome)
	env := append(f.baseEnv(),
		"QWEN_HOME="+qwenHome,
		"OPENAI_API_KEY=scripted-dummy",
		"OPENAI_BASE_URL="+f.srv.URL()+"/v1",
		"OPENAI_MODEL=scripted-supervisor",
	)
	// The job commits: the user's git identity, which hub mcp passes on
	// to the daemon it starts.
	for _, kv := range f.w.env.Vars {
		if strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	// No --yolo: the approval mode stays the default, and hub's calls run
	// because the entry install wrote trusts the server.
	r := f.run(90*time.Second, env, bin, "--auth-type", "openai", "--output-format", "stream-json", supPrompt)
	if r.code != 0 {
		t.Errorf("qwen exited %d", r.code)
	}
	var final string
	var resultSeen bool
	calls := map[string]string{} // tool use id → tool
	done := map[string]bool{}    // tool → a result that is not an error
	for _, ev := range supJSONLines(r.stdout) {
		switch ev["type"] {
		case "system":
			if ev["subtype"] != "init" {
				continue
			}
			connected := false
			servers, _ := ev["mcp_servers"].([]any)
			for _, s := range servers {
				m, _ := s.(map[string]any)
				connected = connected || (supStr(m, "name") == "hub" && supStr(m, "status") == "connected")
			}
			if !connected {
				t.Errorf("init event: mcp_servers %v, want hub connected", servers)
			}
			// The skill install wrote is one of Qwen Code's skills.
			skill := false
			commands, _ := ev["slash_commands"].([]any)
			for _, c := range commands {
				skill = skill || c == "hub-delegate"
			}
			if !skill {
				t.Errorf("init event: slash_commands %v, want the hub-delegate skill", commands)
			}
		case "assistant", "user":
			msg, _ := ev["message"].(map[string]any)
			content, _ := msg["content"].([]any)
			for _, c := range content {
				part, _ := c.(map[string]any)
				switch supStr(part, "type") {
				case "tool_use":
					calls[supStr(part, "id")] = supStr(part, "name")
				case "tool_result":
					if part["is_error"] == false {
						done[calls[supStr(part, "tool_use_id")]] = true
					}
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
		t.Fatal("qwen printed no result event")
	}
	for _, tool := range []string{"mcp__hub__start", "mcp__hub__wait", "mcp__hub__result"} {
		if !done[tool] {
			t.Errorf("no result of %s that is not an error (calls %v)", tool, calls)
		}
	}
	f.check(final)
}
