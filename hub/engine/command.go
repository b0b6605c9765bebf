package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/internal/pgroup"
	"github.com/hub-agents/hub/internal/text"
)

// Command is a command hub runs for a job itself, outside the worker: the
// job's verify, the built-in worker's self-check. RunCommand runs it.
type Command struct {
	// Argv is the command, already wrapped in the job's sandbox by the
	// caller when the job is sandboxed (SandboxCommand).
	Argv []string
	Dir  string
	// Env is the command's environment (nil: hub's own, which a job's
	// command should never get). Marker is appended when it is missing
	// (overriding an entry of the same name).
	Env []string
	// Timeout ends the command once it ran this long (0: none).
	Timeout time.Duration
	// Stop ends the command when a reason comes, or when it is closed
	// (reason "stopped"; nil: never).
	Stop <-chan string
	// Grace is the time between SIGTERM and SIGKILL, when the command is
	// ended and for what it leaves behind (0: proc.DefaultGrace, 5s).
	Grace time.Duration
	// OutputMax is how many bytes of output are kept, head and tail
	// (0: text.DefaultOutputMax).
	OutputMax int
	// Log, when set, gets every byte of the output as well, as it comes.
	Log io.Writer
	// Marker is an environment entry ("HUB_JOB=<id>") by which a process
	// the command started is found after it left the command's process
	// group and the subreaper's tree (proc.LeftoverOptions.Marker; "": none).
	Marker string
	// Subreaper is the pid of the child subreaper the command runs under:
	// the shim's own pid after proc.BecomeSubreaper succeeded (0: none).
	// Everything under it that starts while the command runs is taken for
	// the command's and ended with it, so the caller runs nothing else
	// meanwhile (see proc.LeftoverOptions.Subreaper) — or names it in
	// Exclude.
	Subreaper int
	// Exclude, when set, is asked for the processes that run under the
	// same subreaper meanwhile and are not the command's (hub's own
	// background work, such as an install filling its cache) when the
	// command's leftovers are ended: they and their descendants are left
	// alone (proc.LeftoverOptions.Exclude).
	Exclude func() []int
	// Started, when set, is told the leader's pid once it started.
	Started func(pid int)
}

// CommandResult is how a command ended.
type CommandResult struct {
	// ExitCode is the leader's exit status, whatever its children did
	// after; -1 when a signal ended it or it never started. (A caller that
	// records 124 for a timeout sets it itself.)
	ExitCode int
	Signal   string // the signal that ended the leader ("terminated", "killed"), if one did
	TimedOut bool   // Timeout ended it
	Stopped  string // the reason from Stop, when a stop ended it
	// Cancelled is the context's cause, when a cancelled ctx ended it.
	Cancelled error
	// Err says the command could not start (or not be waited for); the
	// other fields then say nothing.
	Err error
	// Duration runs from the start to the leader's exit.
	Duration time.Duration
	// Output is the head and tail of stdout and stderr, interleaved, as
	// valid UTF-8 (HeadTail). It is as the command wrote it: the caller
	// redacts it.
	Output string
	// Leftovers are the processes the command left that had to be ended
	// beyond its group's SIGTERM (proc.EndLeftovers): found outside the
	// group, or outliving the grace; Ended false for one that survived.
	// Their command lines are unredacted.
	Leftovers []proc.Leftover
}

// Timing of RunCommand's output after the leader exited.
const (
	// outputDrain is how long output is still read once the command's
	// processes are ended: a survivor holding the pipe must not hold hub.
	outputDrain = time.Second
)

// RunCommand runs c and returns once it ended, with everything it left
// behind, and its output read. The command runs as the leader of a process
// group of its own (pgroup.Start: killed should hub die, where the platform
// can), stdin /dev/null,
// stdout and stderr on one pipe of hub's own. Its outcome is the leader's:
// when the leader exits, RunCommand ends the group and whatever else of the
// command it finds (proc.EndLeftovers: SIGTERM, Grace, SIGKILL) — a
// background child is never waited for, and never turns an exit into a
// timeout. Timeout, Stop and a cancelled ctx end the group the same way
// (SIGTERM, Grace, SIGKILL), and the result says which did. Then it reads
// what is left of the output, for at most a second, and returns.
//
// It blocks for at most Timeout (or until Stop or ctx) plus two graces and
// a few seconds. It never returns while a process of the command it found
// is alive, unless that one survived SIGKILL (its Leftover says so).
func RunCommand(ctx context.Context, c Command) CommandResult {
	res := CommandResult{ExitCode: -1}
	if len(c.Argv) == 0 {
		res.Err = errors.New("no command to run")
		return res
	}
	if ctx.Err() != nil {
		res.Cancelled = context.Cause(ctx) // never started
		return res
	}
	grace := c.Grace
	if grace <= 0 {
		grace = proc.DefaultGrace
	}
	out := &text.HeadTail{Max: c.OutputMax}
	var sink io.Writer = out
	if c.Log != nil {
		sink = io.MultiWriter(out, c.Log)
	}
	pipe, err := NewOutputPipe(func(r io.Reader) { _, _ = io.Copy(sink, r) })
	if err != nil {
		res.Err = fmt.Errorf("make the output pipe: %w", err)
		return res
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	if c.Marker != "" && !slices.Contains(env, c.Marker) {
		env = append(slices.Clip(env), c.Marker)
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir, cmd.Env = c.Dir, env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = pipe.File(), pipe.File()
	started := time.Now()
	err = pgroup.Start(cmd)
	pipe.Started()
	if err != nil {
		pipe.Drain(0)
		res.Err = fmt.Errorf("start %s: %w", c.Argv[0], err)
		return res
	}
	pgid := cmd.Process.Pid
	if c.Started != nil {
		c.Started(pgid)
	}
	// Not waited for yet: the pid is still the leader's, zombie or not.
	leaderStart, serr := proc.ChildStartTime(pgid)
	killGroup := func(sig syscall.Signal) {
		if serr != nil { // no /proc to check against: the leader is not reaped yet, its pid is its own
			_ = pgroup.Signal(pgid, sig)
			return
		}
		_ = proc.KillGroup(pgid, leaderStart, sig)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// end stops the group while its leader runs: SIGTERM, then SIGKILL
	// after grace (or at once, once the leader is gone).
	end := func() error {
		killGroup(syscall.SIGTERM)
		g := time.NewTimer(grace)
		defer g.Stop()
		select {
		case err := <-exited:
			return err
		case <-g.C:
		}
		killGroup(syscall.SIGKILL)
		return <-exited
	}
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timeout:
		res.TimedOut = true
		waitErr = end()
	case reason, ok := <-c.Stop:
		if !ok || reason == "" {
			reason = "stopped"
		}
		res.Stopped = reason
		waitErr = end()
	case <-ctx.Done():
		res.Cancelled = context.Cause(ctx)
		waitErr = end()
	}
	res.Duration = time.Since(started)
	var exclude []int
	if c.Exclude != nil {
		exclude = c.Exclude()
	}
	res.Leftovers = proc.EndLeftovers(proc.LeftoverOptions{PGID: pgid, LeaderStart: leaderStart, Grace: grace,
		Subreaper: c.Subreaper, Marker: c.Marker, Exclude: exclude})
	pipe.Drain(outputDrain)
	res.Output = out.String()

	res.ExitCode, res.Signal = ExitOf(cmd.ProcessState)
	if waitErr != nil && !isExit(waitErr) {
		res.Err = fmt.Errorf("wait for %s: %w", c.Argv[0], waitErr)
	}
	return res
}

// ExitOf reads how a process ended: its exit status, or -1 and the signal
// that ended it (-1 and "" when ps says neither, or is nil).
func ExitOf(ps *os.ProcessState) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	if st, ok := ps.Sys().(syscall.WaitStatus); ok {
		switch {
		case st.Exited():
			return st.ExitStatus(), ""
		case st.Signaled():
			return -1, st.Signal().String()
		}
	}
	return -1, ""
}

// isExit reports whether a Wait error only says the process exited
// unsuccessfully (which ExitOf reads), not that waiting failed.
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// WaitError is err from a Wait when it is more than a non-zero exit (the
// process could not be waited for), else nil.
func WaitError(err error) error {
	if err == nil || isExit(err) {
		return nil
	}
	return err
}

// OutputPipe is a pipe of hub's own for a command's stdout or stderr. Its
// write end goes to the command as an *os.File, so os/exec starts no
// goroutine to copy it and cmd.Wait returns as soon as the command itself
// exits, however long a child it left holds the pipe open. (An io.Writer
// that is not a file makes Wait block until every holder closed it; with
// WaitDelay, Wait reports a clean exit as ErrWaitDelay.) hub reads the
// other end in a goroutine until EOF, or until Drain stops it.
type OutputPipe struct {
	r, w *os.File
	done chan struct{}
	read atomic.Int64 // bytes read so far
}

// countingReader counts what passes through it into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// NewOutputPipe makes a pipe and starts read on its read end in a goroutine.
// read returns at EOF or at a read error; should it return early, the rest
// is read and dropped, so the command never blocks on a full pipe.
func NewOutputPipe(read func(io.Reader)) (*OutputPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &OutputPipe{r: r, w: w, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		cr := countingReader{r, &p.read}
		read(cr)
		_, _ = io.Copy(io.Discard, cr)
	}()
	return p, nil
}

// File is the write end, for cmd.Stdout or cmd.Stderr (both may share it).
func (p *OutputPipe) File() *os.File { return p.w }

// Started closes hub's copy of the write end, so EOF comes once the
// command's processes closed theirs. Call it right after cmd.Start,
// whether or not it succeeded.
func (p *OutputPipe) Started() { _ = p.w.Close() }

// Drain waits up to d for the reading to reach EOF, then stops it and
// closes the pipe; it reports whether EOF came. While the reading still
// makes progress (a loaded machine, output still buffered in the pipe) it
// waits on, up to ten times d: what the command wrote before it exited is
// read whole, and a survivor holding the pipe open still holds hub only
// that long. Call it once the command exited, after Started.
func (p *OutputPipe) Drain(d time.Duration) bool {
	eof := true
	t := time.NewTimer(d)
	defer t.Stop()
	last := p.read.Load()
	for range 9 {
		select {
		case <-p.done:
			_ = p.r.Close()
			return true
		case <-t.C:
		}
		now := p.read.Load()
		if now == last {
			break
		}
		last = now
		t.Reset(d)
	}
	select {
	case <-p.done:
	default:
		eof = false
		// A process outside hub's reach holds the pipe: stop reading.
		if p.r.SetReadDeadline(time.Now()) != nil {
			_ = p.r.Close() // not pollable: closing ends the read
		}
		<-p.done
	}
	_ = p.r.Close()
	return eof
}
