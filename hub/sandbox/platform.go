package sandbox

import "github.com/hub-agents/hub/hub/protocol"

// Refusal says why the platform goos (a runtime.GOOS value) cannot offer
// the isolation level at all, "" when it does not rule it out (Probe then
// checks the machine itself). Every refusal of a level for the platform's
// sake comes from here, so that Linux can test what macOS and Windows say.
//
//   - worktree needs nothing but git and processes: every platform.
//   - sandbox is an engine's own sandbox (Codex's: Landlock and seccomp on
//     Linux, Seatbelt on macOS): hub adds nothing of Linux's to it, so macOS
//     keeps it. On Windows hub has no engine sandbox it relies on.
//   - isolated and untrusted are hub's own sandbox: bubblewrap (Linux
//     namespaces) or Landlock (a Linux security module). Neither exists
//     elsewhere, and hub never runs such a job with less.
func Refusal(goos string, level protocol.Isolation) string {
	switch level {
	case protocol.IsolationSandbox:
		if goos == "windows" {
			return "isolation sandbox is not offered on Windows: hub runs no engine's own sandbox there; use worktree, or run the job on Linux or macOS"
		}
		return ""
	case protocol.IsolationIsolated, protocol.IsolationUntrusted:
		if goos == "linux" {
			return ""
		}
		name, instead := goos, "worktree (or sandbox, an engine's own)"
		switch goos {
		case "darwin":
			name = "macOS"
		case "windows":
			name, instead = "Windows", "worktree"
		}
		return "the isolated and untrusted levels need Linux: hub's sandbox is bubblewrap (Linux namespaces) or Landlock (a Linux security module), and " +
			name + " has neither; hub never runs the job with less. Use " + instead + ", or run the job on a Linux machine"
	}
	return ""
}
