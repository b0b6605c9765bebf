//go:build unix

package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// TestMain runs the package's tests, then checks that none of them touched
// the real user's home: the agent CLIs write ~/.claude*, ~/.codex and
// ~/.config|.local|.cache/opencode even for --version, and hub its own state,
// so only the scratch HOME (and CODEX_HOME, the XDG folders) every test and
// every worker gets keeps them out. Nothing may appear, vanish or change there.
func TestMain(m *testing.M) {
	homes := realHomes()
	before := map[string]map[string]string{}
	for _, h := range homes {
		before[h] = supHomeState(h)
	}
	code := hubtest.Main(m)
	for _, h := range homes {
		if d := supHomeDiff(before[h], supHomeState(h)); len(d) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the tests touched the real home %s:\n%s", h, supLines(d))
			code = 1
		}
	}
	os.Exit(code)
}
