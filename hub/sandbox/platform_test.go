package sandbox

import (
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestRefusal: what each platform refuses and why, answered on Linux for
// all three. worktree runs everywhere; sandbox (an engine's own) everywhere
// but Windows; isolated and untrusted on Linux only, and the reason names
// the platform and what it lacks, and what to use instead.
func TestRefusal(t *testing.T) {
	type want struct {
		refused bool
		says    []string
	}
	linuxOnly := []string{"need Linux", "bubblewrap", "Landlock"}
	cases := []struct {
		goos  string
		level protocol.Isolation
		want  want
	}{
		{"linux", protocol.IsolationWorktree, want{}},
		{"linux", protocol.IsolationSandbox, want{}},
		{"linux", protocol.IsolationIsolated, want{}},
		{"linux", protocol.IsolationUntrusted, want{}},
		{"darwin", protocol.IsolationWorktree, want{}},
		{"darwin", protocol.IsolationSandbox, want{}},
		{"darwin", protocol.IsolationIsolated, want{true, append(linuxOnly, "macOS has neither", "Use worktree (or sandbox")}},
		{"darwin", protocol.IsolationUntrusted, want{true, append(linuxOnly, "macOS has neither")}},
		{"windows", protocol.IsolationWorktree, want{}},
		{"windows", protocol.IsolationSandbox, want{true, []string{"not offered on Windows", "use worktree"}}},
		{"windows", protocol.IsolationIsolated, want{true, append(linuxOnly, "Windows has neither", "Use worktree, or")}},
		{"windows", protocol.IsolationUntrusted, want{true, append(linuxOnly, "Windows has neither")}},
		{"freebsd", protocol.IsolationIsolated, want{true, append(linuxOnly, "freebsd has neither")}},
	}
	for _, c := range cases {
		got := Refusal(c.goos, c.level)
		if (got != "") != c.want.refused {
			t.Errorf("Refusal(%s, %s) = %q; want refused=%v", c.goos, c.level, got, c.want.refused)
			continue
		}
		for _, s := range c.want.says {
			if !strings.Contains(got, s) {
				t.Errorf("Refusal(%s, %s) = %q; want it to say %q", c.goos, c.level, got, s)
			}
		}
	}
}

// TestProbeRefusesByPlatform: Probe answers from Refusal before it looks
// at the machine, so on a platform without hub's sandbox the isolated and
// untrusted levels are refused with that reason, never run with less.
func TestProbeRefusesByPlatform(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		a := probeFor(goos)
		if a.OK || a.Reason != Refusal(goos, protocol.IsolationIsolated) {
			t.Errorf("probe on %s = %+v; want refused with Refusal's reason", goos, a)
		}
	}
}
