package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// Sandboxed reports whether a job at this isolation runs its commands in
// hub/sandbox.
func Sandboxed(isolation protocol.Isolation) bool {
	return isolation == protocol.IsolationIsolated || isolation == protocol.IsolationUntrusted
}

// AddSandboxLevels adds isolated and untrusted to c when the sandbox works
// here, or says why not.
func AddSandboxLevels(c *protocol.EngineCapabilities) {
	if c.IsolationWhyNot == nil {
		c.IsolationWhyNot = map[protocol.Isolation]string{}
	}
	a := sandbox.Probe()
	switch {
	case !a.OK:
		c.IsolationWhyNot[protocol.IsolationIsolated] = a.Reason
		c.IsolationWhyNot[protocol.IsolationUntrusted] = a.Reason
	case !a.Network:
		c.Isolation = append(c.Isolation, protocol.IsolationIsolated)
		c.IsolationWhyNot[protocol.IsolationUntrusted] = a.NoNetworkReason
	default:
		c.Isolation = append(c.Isolation, protocol.IsolationIsolated, protocol.IsolationUntrusted)
	}
}

// AddOwnSandboxLevel adds sandbox (the engine's own sandbox) to c where
// the platform offers it, or says why not.
func AddOwnSandboxLevel(c *protocol.EngineCapabilities) {
	if why := sandbox.Refusal(runtime.GOOS, protocol.IsolationSandbox); why != "" {
		if c.IsolationWhyNot == nil {
			c.IsolationWhyNot = map[protocol.Isolation]string{}
		}
		c.IsolationWhyNot[protocol.IsolationSandbox] = why
		return
	}
	c.Isolation = append(c.Isolation, protocol.IsolationSandbox)
}

// AddIsolatedLevel adds isolated to c when the sandbox works here, for an
// engine whose worker calls its model itself: untrusted would cut it off.
// noLandlock, when not empty, says why the engine cannot run under Landlock.
func AddIsolatedLevel(c *protocol.EngineCapabilities, name, noLandlock string) {
	if c.IsolationWhyNot == nil {
		c.IsolationWhyNot = map[protocol.Isolation]string{}
	}
	c.IsolationWhyNot[protocol.IsolationUntrusted] = name + " calls its model from inside the sandbox, so it cannot run without the network; use the builtin engine, whose model calls stay in hub"
	a := sandbox.Probe()
	switch {
	case !a.OK:
		c.IsolationWhyNot[protocol.IsolationIsolated] = a.Reason
	case a.Mechanism == sandbox.MechLandlock && noLandlock != "":
		c.IsolationWhyNot[protocol.IsolationIsolated] = "this machine's sandbox is Landlock (bubblewrap cannot make namespaces here), and " + noLandlock
	default:
		c.Isolation = append(c.Isolation, protocol.IsolationIsolated)
	}
}

// InstallRoot is the folder an installed program needs readable to run:
// the npm prefix it was installed under (the parent of its node_modules),
// else its own folder.
func InstallRoot(program string) string {
	p, err := filepath.EvalSymlinks(program)
	if err != nil {
		p = program
	}
	for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			return filepath.Dir(d)
		}
	}
	return filepath.Dir(p)
}

// SandboxCommand wraps argv in the job's sandbox: its worktree, its
// private git dir and its scratch folder writable, the user's object store
// readable, HOME in the scratch folder, the shim's socket reachable (for
// `hub ask`), readOnly readable, and the network only at isolated.
func SandboxCommand(spec Spec, argv []string, readOnly ...string) ([]string, error) {
	home := filepath.Join(spec.Scratch, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	sb := sandbox.Spec{Worktree: spec.Dir, Home: home, Network: spec.Params.Isolation == protocol.IsolationIsolated, ReadOnly: readOnly,
		Writable: []string{spec.Scratch}, Helper: spec.HubBinary, Limits: spec.Limits, Ports: spec.Ports}
	if spec.Cache != "" {
		if err := os.MkdirAll(spec.Cache, 0o700); err != nil {
			return nil, err
		}
		sb.Writable = append(sb.Writable, spec.Cache)
	}
	if c := spec.Checkout; c != nil {
		if !c.Private {
			return nil, fmt.Errorf("sandbox: the checkout %s is a linked worktree of the user's repository; a sandboxed job needs a private one", c.Dir)
		}
		sb.GitDir, sb.Objects = c.GitDir, c.ObjectDirs()
	}
	for _, kv := range spec.Env {
		if sock, ok := strings.CutPrefix(kv, "HUB_SOCKET="); ok && sock != "" {
			sb.ReadOnly = append(sb.ReadOnly, sock)
		}
	}
	return sb.Command(argv)
}
