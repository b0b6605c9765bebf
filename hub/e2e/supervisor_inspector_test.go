//go:build unix

package e2e

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestSupervisorMCPInspector: the MCP Inspector's CLI, a scripted MCP
// client, lists hub's eleven tools over stdio and calls engines.
func TestSupervisorMCPInspector(t *testing.T) { supInspectorScenario(t) }

func supInspectorScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "mcp-inspector")
	f := newSupFixture(t, supDialect{cli: "mcp-inspector"})
	env := append(f.baseEnv(), "npm_config_update_notifier=false")
	// The inspector starts the server with a few variables of its own
	// (HOME, PATH, …); -e adds the world's.
	var serverEnv []string
	for k, v := range f.hubEnv() {
		serverEnv = append(serverEnv, "-e", k+"="+v)
	}
	inspect := func(args ...string) map[string]any {
		t.Helper()
		argv := append([]string{"--cli"}, serverEnv...)
		argv = append(argv, f.w.bin, "mcp")
		r := f.run(60*time.Second, env, bin, append(argv, args...)...)
		if r.code != 0 {
			t.Fatalf("mcp-inspector %s exited %d", strings.Join(args, " "), r.code)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("mcp-inspector %s: output is not JSON: %v", strings.Join(args, " "), err)
		}
		return out
	}

	list := inspect("--method", "tools/list")
	tools, _ := list["tools"].([]any)
	var names []string
	for _, tl := range tools {
		m, _ := tl.(map[string]any)
		names = append(names, supStr(m, "name"))
		if _, ok := m["inputSchema"].(map[string]any); !ok {
			t.Errorf("tool %s has no input schema", supStr(m, "name"))
		}
	}
	sort.Strings(names)
	want := []string{"cleanup", "engines", "land", "profiles", "reply", "result", "start", "start_many", "status", "steer", "step", "stop", "wait"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	res := inspect("--method", "tools/call", "--tool-name", "engines")
	if isErr, _ := res["isError"].(bool); isErr {
		t.Fatalf("engines: tool error: %v", res)
	}
	var text string
	content, _ := res["content"].([]any)
	for _, c := range content {
		m, _ := c.(map[string]any)
		text += supStr(m, "text")
	}
	if !strings.Contains(text, "exec ready") {
		t.Errorf("engines text lacks %q:\n%s", "exec ready", text)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	engines, _ := sc["engines"].([]any)
	exec := false
	for _, e := range engines {
		m, _ := e.(map[string]any)
		exec = exec || (supStr(m, "name") == "exec" && m["available"] == true)
	}
	if !exec {
		t.Errorf("structured engines lack an available exec: %v", sc)
	}
	f.checkHubHome()
}
