//go:build unix

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestSupervisorOpenCode: OpenCode (`opencode run --format json`), its model
// played by the scripted server over Chat Completions, supervises hub
// through `hub mcp`: start, wait, result on an exec job, then the branch's
// head.
func TestSupervisorOpenCode(t *testing.T) { supOpenCodeScenario(t) }

func supOpenCodeScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "opencode")
	f := newSupFixture(t, supOpenCode)
	config, err := json.Marshal(map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"model":      "scripted/supervisor",
		"autoupdate": false,
		"share":      "disabled",
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible", // bundled in the binary
			"name":    "Scripted",
			"options": map[string]any{"baseURL": f.srv.URL() + "/v1", "apiKey": "scripted-dummy"},
			"models":  map[string]any{"supervisor": map[string]any{"name": "Supervisor", "tool_call": true}},
		}},
		"mcp": map[string]any{"hub": map[string]any{
			"type": "local", "command": []string{f.w.bin, "mcp"}, "enabled": true, "environment": f.hubEnv(),
			"timeout": 30000, // ms for MCP requests (default 5000), on a busy machine
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.writeFile("opencode.json", config)
	// OpenCode installs @opencode-ai/plugin in its config dir at every
	// start, from the npm registry, in the background. A lock file and a
	// package.json naming the installed version make it skip that; the
	// registry is pointed at the scripted server besides, so an install it
	// tries anyway fails at once (a 404) and offline.
	const plugin = `{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}`
	f.writeFile(".config/opencode/package.json", []byte(plugin))
	f.writeFile(".config/opencode/package-lock.json", []byte(`{"name":"opencode","lockfileVersion":3,"requires":true,"packages":{"":`+plugin+
		`,"node_modules/@opencode-ai/plugin":{"version":"1.18.33"}}}`))
	f.writeFile(".config/opencode/node_modules/@opencode-ai/plugin/package.json", []byte(`{"name":"@opencode-ai/plugin","version":"1.18.33"}`))
	env := append(f.baseEnv(),
		"OPENCODE_CONFIG="+cfg,
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"npm_config_registry="+f.srv.URL()+"/no-npm-registry/",
		"npm_config_update_notifier=false",
	)
	r := f.run(60*time.Second, env, bin, "run", "--format", "json", supPrompt)
	if r.code != 0 {
		t.Errorf("opencode exited %d", r.code)
	}
	var final string
	calls := map[string]string{} // tool → status
	for _, ev := range supJSONLines(r.stdout) {
		part, _ := ev["part"].(map[string]any)
		switch ev["type"] {
		case "text":
			final += supStr(part, "text")
		case "tool_use":
			calls[supStr(part, "tool")] = supStr(part, "state", "status")
		case "error":
			t.Errorf("error event: %v", ev)
		}
	}
	for _, tool := range []string{"hub_start", "hub_wait", "hub_result"} {
		if calls[tool] != "completed" {
			t.Errorf("tool_use %s: status %q, want completed (calls %v)", tool, calls[tool], calls)
		}
	}
	f.check(final)
}
