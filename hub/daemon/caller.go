package daemon

import (
	"context"
	"os"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
)

// caller is who sent a request: the process that connected (SO_PEERCRED)
// and its start time, read when the daemon accepted the connection, so a
// pid reused since, or a connection handed to another process after its
// owner exited, is not taken for the process that connected.
type caller struct {
	pid   int
	start uint64
	known bool // the process was alive at accept, and start is its start time
	// sandboxed is the job whose sandbox the caller runs in ("" when none):
	// its shim is an ancestor of the caller and the job is fenced.
	sandboxed string
	// placeErr says the store could not tell whether it does.
	placeErr error
}

type callerKey struct{}

// noteCaller records who connected; rpc.Serve calls it before the
// connection's first message.
func (s *Server) noteCaller(ctx context.Context, c *rpc.Conn) {
	pid := c.PeerPID()
	start, err := proc.StartTime(pid)
	cl := caller{pid: pid, start: start, known: pid > 0 && err == nil}
	cl.sandboxed, cl.placeErr = s.sandboxOf(ctx, pid)
	c.SetValue(callerKey{}, cl)
}

// sandboxOf finds the fenced job (isolated, untrusted) pid works for: a
// worker that reached the daemon's socket from its sandbox (Landlock does
// not fence unix sockets by path). "" when none.
func (s *Server) sandboxOf(ctx context.Context, pid int) (string, error) {
	j, err := shim.WorkerOf(ctx, s.st, pid)
	if err != nil || j == nil || !engine.Sandboxed(j.Isolation) {
		return "", err
	}
	return j.ID, nil
}

// refuseSandboxed refuses every call from inside a fenced job's sandbox:
// the daemon could start a job at isolation worktree, or stop another, on
// its behalf, which is the host the sandbox keeps it from.
func refuseSandboxed(c *rpc.Conn) error {
	if c == nil {
		return nil
	}
	cl, ok := c.Value(callerKey{}).(caller)
	if ok && cl.placeErr != nil {
		return rpc.Errorf(protocol.CodeUnavailable, "see the daemon's log; `hub doctor` checks the store",
			"hub cannot tell whether this call comes from inside a sandboxed job (the store: %v)", cl.placeErr)
	}
	if ok && cl.sandboxed != "" {
		return rpc.Errorf(protocol.CodeRefused,
			"inside the sandbox `hub ask` and `hub progress` reach the job through HUB_SOCKET; nothing else of hub is open to it",
			"job %s runs sandboxed; its worker cannot use hub's daemon", cl.sandboxed)
	}
	return nil
}

// connKey is the context key of the connection a request came on.
type connKey struct{}

// withCaller puts c, and its caller, into ctx for the handlers.
func withCaller(ctx context.Context, c *rpc.Conn) context.Context {
	if c == nil {
		return ctx
	}
	ctx = context.WithValue(ctx, connKey{}, c)
	if cl, ok := c.Value(callerKey{}).(caller); ok {
		return context.WithValue(ctx, callerKey{}, cl)
	}
	return ctx
}

// refuseOwnWorker refuses to reply to, steer or stop (what) job j for j's
// own worker: a caller that is j's shim or runs below it. A worker asks
// and waits; only its supervisor answers. A caller hub cannot place (gone
// since it connected) is refused while j has a live shim; a peer with no
// pid in the daemon's namespace cannot be below a shim the daemon started.
func refuseOwnWorker(ctx context.Context, j *store.Job, what string) error {
	cl, ok := ctx.Value(callerKey{}).(caller)
	if !ok || cl.pid <= 0 || cl.pid == os.Getpid() {
		return nil // the daemon's own process is no job's worker
	}
	if j.ShimPID <= 0 || !proc.Same(j.ShimPID, j.ShimStart) {
		return nil // no shim runs the job, so no worker of it does either
	}
	if !cl.known || !proc.Same(cl.pid, cl.start) {
		return rpc.Errorf(protocol.CodeRefused, "send it from a process that stays alive until the answer comes",
			"hub cannot tell who asks to %s job %s: the process that connected (pid %d) is gone", what, j.ID, cl.pid)
	}
	if proc.IsDescendant(cl.pid, j.ShimPID) {
		return rpc.Errorf(protocol.CodeRefused,
			"a worker asks with `hub ask` (a blocker: `hub ask --kind blocker`), waits for the answer, and reports with `hub progress`; "+
				"only its supervisor replies to, steers or stops the job",
			"job %s's own worker cannot %s it", j.ID, what)
	}
	return nil
}
