package e2e

import (
	"path/filepath"
	"testing"
)

// TestSupervisorRealHomeUntouched runs every supervisor scenario and checks
// that the real user's home (from the password database, and the HOME the
// tests started with) holds the same Claude, Codex and OpenCode state before
// and after: nothing appeared, vanished or changed size or mtime there. The
// CLIs write to ~/.claude*, ~/.codex and ~/.config|.local|.cache/opencode even
// for --version, so only a scratch HOME (and CODEX_HOME, OPENCODE_CONFIG, the
// XDG dirs) keeps them out.
func TestSupervisorRealHomeUntouched(t *testing.T) {
	homes := []string{supRealHome(t)}
	if supInitialHome != "" && filepath.Clean(supInitialHome) != filepath.Clean(homes[0]) {
		homes = append(homes, supInitialHome)
	}
	before := map[string]map[string]string{}
	for _, h := range homes {
		before[h] = supHomeState(t, h)
	}
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"claude", supClaudeScenario},
		{"codex", supCodexScenario},
		{"opencode", supOpenCodeScenario},
		{"mcp-inspector", supInspectorScenario},
	} {
		t.Run(sc.name, sc.run)
	}
	for _, h := range homes {
		if d := supHomeDiff(before[h], supHomeState(t, h)); len(d) > 0 {
			t.Errorf("the supervisor runs touched the real home %s:\n%s", h, supLines(d))
		}
	}
}
