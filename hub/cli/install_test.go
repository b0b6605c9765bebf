package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestInstallScripts runs the install*.txtar scripts with the real agent
// CLIs (Claude Code, Codex, OpenCode, Gemini CLI, Qwen Code, from
// HUB_TEST_AGENTS) on PATH, so the scripts can ask each client what it
// sees after hub install, and hub doctor can find them. Each script's $WORK
// is its HOME, so the clients write nowhere else.
func TestInstallScripts(t *testing.T) {
	bin := hubtest.MustBinary(t)
	clis := map[string]string{}
	var dirs []string
	for _, name := range []string{"claude", "codex", "opencode", "gemini", "qwen"} {
		clis[name] = hubtest.AgentCLI(t, name)
		dirs = append(dirs, filepath.Dir(clis[name]))
	}
	repo, err := filepath.Abs("../..") // the checkout's top: a plugin marketplace
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/script/install*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no install scripts: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".hub")
			env.Setenv("HUB_HOME", home)
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			// The clients stay off the network: no telemetry, updates or model lists.
			env.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
			env.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
			env.Setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
			env.Setenv("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
			env.Setenv("OPENCODE_DISABLE_SHARE", "1")
			// The scripts that need the clients skip unless this is set
			// ([!exec:$HUB_TEST_CLAUDE]): TestScripts runs them too, without
			// the clients, and testscript caches [exec:claude] per process.
			env.Setenv("HUB_TEST_CLAUDE", clis["claude"])
			env.Setenv("HUB_REPO", repo)
			path := append([]string{filepath.Dir(bin)}, dirs...)
			env.Setenv("PATH", strings.Join(append(path, env.Getenv("PATH")), string(os.PathListSeparator)))
			env.Defer(func() { stopDaemon(home) })
			return nil
		},
	})
}

// The repository's root is a Claude Code plugin (.claude-plugin/plugin.json,
// skills/) and its marketplace (.claude-plugin/marketplace.json): Claude
// Code's own validator passes it, warnings counted.
func TestInstallPluginValidates(t *testing.T) {
	claude := hubtest.AgentCLI(t, "claude")
	home := t.TempDir()
	cmd := exec.Command(claude, "plugin", "validate", "--strict", "../..")
	cmd.Env = append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude plugin validate --strict: %v\n%s", err, out)
	}
	for _, want := range []string{"mcpServers: hub stdio hub", "skills: hub:hub-delegate", "Validation passed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
