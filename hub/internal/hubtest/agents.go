package hubtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentPins are the agent CLIs the tests run, at the versions
// scripts/agents.sh installs: the command, and its npm package@version.
var agentPins = map[string]string{
	"claude":        "@anthropic-ai/claude-code@2.1.328",
	"codex":         "@openai/codex@0.169.0",
	"opencode":      "opencode-ai@1.18.33",
	"gemini":        "@google/gemini-cli@0.61.0",
	"qwen":          "@qwen-code/qwen-code@0.24.4",
	"mcp-inspector": "@modelcontextprotocol/inspector@2.12.0",
}

// AgentCLI returns the path of an installed agent CLI (claude, codex,
// opencode, gemini, qwen, mcp-inspector) from the folder scripts/agents.sh installs into,
// named by HUB_TEST_AGENTS. A missing one fails the test, with the command
// that installs it: these tests prove hub against the real programs, and a
// skip would hide that they did not run. The one exception is make check's
// fast lane (-short), which installs nothing: there an unset
// HUB_TEST_AGENTS skips, saying so, and make test runs the test.
func AgentCLI(t testing.TB, name string) string {
	t.Helper()
	pkg, ok := agentPins[name]
	if !ok {
		t.Fatalf("hubtest: no pinned agent CLI %q", name)
	}
	dir := os.Getenv("HUB_TEST_AGENTS")
	if dir == "" {
		installsNothing(t, "the agent CLIs")
		t.Fatalf("HUB_TEST_AGENTS is not set: run the tests with `make test` (it installs the agent CLIs), " +
			"or export HUB_TEST_AGENTS=$(./scripts/agents.sh)")
	}
	p := filepath.Join(dir, strings.NewReplacer("/", "_", "@", "_").Replace(pkg), "node_modules", ".bin", name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		t.Fatalf("%s (%s) is not installed in %s: run ./scripts/agents.sh", name, pkg, dir)
	}
	return p
}

// installsNothing skips a test that needs what make test installs (what)
// when it runs in make check's fast lane (go test -short), which installs
// nothing; anywhere else it returns, and the caller fails the test.
func installsNothing(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s, which make test installs; make check (-short) installs nothing", what)
	}
}
