// Package execengine is the exec engine: any shell command as the worker.
// It runs `sh -c <command>` in the job's worktree, in its own process group,
// with the environment the shim built (HUB_JOB, HUB_SOCKET, HUB_TASK and the
// running hub binary first on PATH). It costs nothing. At isolation
// isolated or untrusted it runs the command inside hub/sandbox (bubblewrap);
// it has no sandbox of its own to offer at level sandbox.
package execengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/pgroup"
	"github.com/hub-agents/hub/internal/text"
)

// Name is the engine's name.
const Name = "exec"

// Engine runs shell commands. The zero value is ready to use.
type Engine struct{}

// New returns the exec engine.
func New() *Engine { return &Engine{} }

func (*Engine) Name() string { return Name }

func (*Engine) Capabilities() protocol.EngineCapabilities {
	c := protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree}, ReadOnly: false, Pays: protocol.PaysFree,
		IsolationWhyNot: map[protocol.Isolation]string{protocol.IsolationSandbox: "a plain command has no sandbox of its own; ask for isolated (bubblewrap)"}}
	engine.AddSandboxLevels(&c)
	return c
}

func (*Engine) Probe(ctx context.Context) engine.Availability {
	p, err := exec.LookPath("sh")
	if err != nil {
		return engine.Availability{Reason: "no sh on PATH"}
	}
	return engine.Availability{Available: true, Version: p}
}

func (e *Engine) Check(spec protocol.StartParams) error {
	if strings.TrimSpace(spec.Exec) == "" {
		return errors.New("engine exec needs a command: pass `exec` (the shell command the worker runs)")
	}
	if strings.ContainsRune(spec.Exec, 0) {
		return errors.New("exec command contains a NUL byte")
	}
	return nil
}

// Start runs the command.
func (e *Engine) Start(ctx context.Context, spec engine.Spec) (engine.Run, error) {
	argv := []string{"sh", "-c", spec.Params.Exec}
	if engine.Sandboxed(spec.Params.Isolation) {
		var ro []string
		if spec.HubBinary != "" {
			ro = append(ro, spec.HubBinary) // hub ask, hub progress
		}
		var err error
		if argv, err = engine.SandboxCommand(spec, argv, ro...); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = nil // /dev/null
	r := &run{command: spec.Params.Exec}
	tail := &text.Tail{Max: 4096}
	var out io.Writer = tail
	if spec.Output != nil {
		out = io.MultiWriter(tail, spec.Output)
	}
	// The output goes through a pipe of hub's own, so Wait returns once the
	// worker itself exits, even while a child it left (a `hub ask`, a test
	// run) still holds its output open: the outcome is the worker's exit,
	// and the shim then stops the rest of the group. (Through a plain
	// writer, os/exec's Wait would block on that child, or with a
	// WaitDelay report the clean exit as a failure to run.)
	pipe, err := engine.NewOutputPipe(func(rd io.Reader) { _, _ = io.Copy(out, rd) })
	if err != nil {
		return nil, fmt.Errorf("start sh: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pipe.File(), pipe.File()
	r.tail = tail
	r.started = time.Now()
	err = pgroup.Start(cmd)
	pipe.Started()
	if err != nil {
		pipe.Drain(0)
		return nil, fmt.Errorf("start sh: %w", err)
	}
	r.cmd = cmd
	r.start, _ = proc.ChildStartTime(cmd.Process.Pid) // before Wait: the pid is still the worker's
	r.done = make(chan struct{})
	go func() {
		r.err = cmd.Wait()
		pipe.Drain(outputDelay)
		close(r.done)
	}()
	return r, nil
}

// outputDelay is how long output of a worker's children is still read
// after the worker itself exited.
const outputDelay = 2 * time.Second

type run struct {
	cmd     *exec.Cmd
	start   uint64 // the worker's start time (0: unknown)
	command string
	tail    *text.Tail
	started time.Time
	done    chan struct{}
	err     error
}

func (r *run) PGID() int { return r.cmd.Process.Pid }

// LeaderStart is the start time of the group's leader (the worker's sh),
// read before it could be reaped: what proc.KillGroup and
// proc.EndLeftovers need for PGID, even once the worker is gone (0:
// unknown). Not part of engine.Run: a caller asks for it with
// interface{ LeaderStart() uint64 }.
func (r *run) LeaderStart() uint64 { return r.start }

func (r *run) Heartbeat() bool { return false }

func (r *run) Wait() engine.Outcome {
	<-r.done
	o := engine.Outcome{ExitCode: -1, CostKnown: true, Duration: time.Since(r.started), Command: r.command}
	o.ExitCode, o.Signal = engine.ExitOf(r.cmd.ProcessState)
	o.Err = engine.WaitError(r.err)
	o.Summary = lastLines(r.tail.String(), 5)
	return o
}

func (r *run) Stop(grace time.Duration) {
	pgid := r.cmd.Process.Pid
	_ = pgroup.Signal(pgid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(grace):
	}
	_ = pgroup.Signal(pgid, syscall.SIGKILL)
	<-r.done
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			kept = append([]string{strings.TrimRight(lines[i], "\r ")}, kept...)
		}
	}
	return strings.Join(kept, "\n")
}
