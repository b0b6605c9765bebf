//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestSupervisorGemini: Gemini CLI (`gemini -p --output-format
// stream-json`), its model played by the scripted server over Google's
// generateContent wire, supervises hub through `hub mcp` as `hub install
// --client gemini` set it up: start, wait, result on an exec job, then the
// branch's head.
func TestSupervisorGemini(t *testing.T) { supGeminiScenario(t) }

func supGeminiScenario(t *testing.T) {
	bin := hubtest.AgentCLI(t, "gemini")
	f := newSupFixture(t, supGemini)
	// GEMINI_CLI_HOME stands in for the home directory: the settings are
	// in its .gemini folder, where install must find them too.
	geminiHome := filepath.Join(f.scratch, "gemini-home")
	// The user's own settings, which install keeps: nothing leaves the
	// machine (usage statistics, telemetry, the update check and its
	// notice); the model is the scripted one, reached with an API key (a
	// GOOGLE_GEMINI_BASE_URL alone makes Gemini CLI pick its gateway auth,
	// which it then refuses headless).
	f.writeFile("gemini-home/.gemini/settings.json", []byte(`{
  // offline
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
  "model": { "name": "scripted-supervisor" },
  "security": { "auth": { "selectedType": "gemini-api-key" } }
}
`))
	f.install("gemini", "GEMINI_CLI_HOME="+geminiHome)
	tmp := filepath.Join(f.scratch, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(f.baseEnv(),
		"GEMINI_CLI_HOME="+geminiHome,
		"GEMINI_API_KEY=scripted-dummy",
		"GOOGLE_GEMINI_BASE_URL="+f.srv.URL(),
		// Gemini CLI starts stdio MCP servers only in a trusted folder;
		// headless there is no one to ask.
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		// Its error reports go to the temporary folder: the test's own.
		"TMPDIR="+tmp,
	)
	// The job commits: the user's git identity, which hub mcp passes on
	// to the daemon it starts. Gemini CLI starts MCP servers with a
	// sanitised environment, so the identity is also where a user keeps
	// it: ~/.gitconfig, in every HOME the daemon may get.
	ident := map[string]string{}
	for _, kv := range f.w.env.Vars {
		if strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
		k, v, _ := strings.Cut(kv, "=")
		ident[k] = v
	}
	gitconfig := []byte("[user]\n\tname = " + ident["GIT_AUTHOR_NAME"] + "\n\temail = " + ident["GIT_AUTHOR_EMAIL"] + "\n")
	f.writeFile(".gitconfig", gitconfig)
	if home := ident["HOME"]; home != "" {
		if _, err := os.Stat(filepath.Join(home, ".gitconfig")); os.IsNotExist(err) {
			if err := os.WriteFile(filepath.Join(home, ".gitconfig"), gitconfig, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// No --yolo: the approval mode stays the default, and hub's calls run
	// because the entry install wrote trusts the server.
	r := f.run(90*time.Second, env, bin, "-m", "scripted-supervisor", "--output-format", "stream-json", "-p", supPrompt)
	if r.code != 0 {
		t.Errorf("gemini exited %d", r.code)
	}
	var final string
	var resultSeen bool
	calls := map[string]string{}  // tool id → tool
	status := map[string]string{} // tool → the status of its last result
	for _, ev := range supJSONLines(r.stdout) {
		switch ev["type"] {
		case "message":
			if ev["role"] == "assistant" {
				final += supStr(ev, "content")
			}
		case "tool_use":
			calls[supStr(ev, "tool_id")] = supStr(ev, "tool_name")
		case "tool_result":
			status[calls[supStr(ev, "tool_id")]] = supStr(ev, "status")
		case "error":
			t.Errorf("error event: %v", ev)
		case "result":
			resultSeen = true
			if ev["status"] != "success" {
				t.Errorf("result event: %v", ev)
			}
		}
	}
	if !resultSeen {
		t.Fatal("gemini printed no result event")
	}
	for _, tool := range []string{"mcp_hub_start", "mcp_hub_wait", "mcp_hub_result"} {
		if status[tool] != "success" {
			t.Errorf("tool_result of %s: status %q, want success (calls %v)", tool, status[tool], calls)
		}
	}
	f.check(final)
}
