// Package agentcli runs an agent CLI (Claude Code, Codex, OpenCode) headless
// as a job's worker: in the job's worktree, in a process group of its own,
// with a config home of its own (so nothing leaks between workers or into
// the user's setup), and with hub's worker MCP server as its line to the
// supervisor. It reads the CLI's JSON event stream through the CLI's parser
// into what the hub observes (commands, tool calls), what the worker says
// (its notes and final text), tokens and cost; an event it does not know is
// kept in the worker log and is never fatal. When steering is queued and the
// CLI ended without taking it, the session is resumed with it.
//
// Every agent CLI engine is a CLI table made an engine by New: the program
// and how to install it, the profile providers it speaks, how far hub's
// isolation levels hold it, how it names hub's tools; its Launch is all
// that is its own (claude, codex and opencode: their flags and config
// files, and a parser of their stream for Start; acp: its protocol). The
// task prompt is agent.Worker's, the one every worker's comes from. This
// package must never let a run outlive Stop, nor report a cost it did not
// read or price.
package agentcli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/internal/pgroup"
)

// Events is what a CLI's parser reports while it reads the stream. The
// methods are called from one goroutine at a time.
type Events interface {
	// Session names the CLI's session, for a resume.
	Session(id string)
	// Said is text the worker wrote (claimed, shown as progress).
	Said(text string)
	// Tool is a tool call the hub saw the CLI make.
	Tool(name, input string)
	// Command is a shell command the CLI ran, with its exit code when known
	// and when it started when the CLI said (zero: hub saw only its end).
	Command(cmd string, exitCode *int, started time.Time)
	// Usage adds the tokens of one model call.
	Usage(u model.Usage)
	// Tokens adds tokens to calls already counted (a CLI whose per-call
	// figures are early snapshots, corrected by its final totals).
	Tokens(u model.Usage)
	// Cost is the CLI's own total for the run so far, in dollars; once
	// reported it replaces hub's pricing of the tokens.
	Cost(usd float64)
	// Final is the CLI's final answer.
	Final(text string)
	// Failed is an error the CLI reported as ending its run.
	Failed(msg string)
}

// Parser reads one line of a CLI's stream. It returns false for a line it
// does not know (kept in the worker log); it must not fail on bad input.
type Parser func(line []byte, ev Events) (known bool)

// maxCount and maxDollars bound the figures a parser takes from a stream:
// beyond them a figure is garbage, and sums or micro-dollars would overflow.
const (
	maxCount   = 1 << 40
	maxDollars = 1e9
)

// Count is a token count read from a stream, for a parser to report: a
// negative one is 0, and none is over 2^40.
func Count(n int) int { return min(max(n, 0), maxCount) }

// Dollars reports whether usd, a cost read from a stream, is an amount a
// parser may report: not NaN, not negative, under a billion dollars.
func Dollars(usd float64) bool { return usd >= 0 && usd < maxDollars }

// Invocation is how to run one CLI for one job.
type Invocation struct {
	Path string
	Args []string
	Env  []string
	// Parse reads the stream.
	Parse Parser
	// Resume returns the arguments that continue session with prompt, or
	// nil when the CLI cannot resume.
	Resume func(session, prompt string) []string
	// Stdin is the CLI's standard input ("": none, as /dev/null), for a CLI
	// that takes its prompt there (OpenCode quotes a prompt argument).
	Stdin string
	// ResumeStdin sends a resume's prompt on standard input; Resume's
	// arguments then leave it out.
	ResumeStdin bool
	// Model is what the CLI was told to use, for pricing its tokens.
	Model string
	// Price prices the tokens when the CLI reports no cost of its own
	// (nil, or false: the cost is unknown).
	Price func(model string) (model.Price, bool)
	// Describe is what the hub records as the command it ran (no keys).
	Describe string
}

// maxResumes bounds how often a run is resumed to deliver steering.
const maxResumes = 3

// maxLine bounds one line of a stream; the rest of a longer line is dropped.
const maxLine = 16 << 20

// Start runs inv for spec and returns once the CLI is started.
func Start(ctx context.Context, spec engine.Spec, inv Invocation) (engine.Run, error) {
	r := &run{spec: spec, inv: inv, started: time.Now(), done: make(chan struct{}), stop: make(chan struct{})}
	r.rec = NewRecorder(context.WithoutCancel(ctx), spec, Pricing{Model: inv.Model, Price: inv.Price, Describe: inv.Describe})
	exited, err := r.launch(inv.Args, inv.Stdin)
	if err != nil {
		return nil, err
	}
	go r.supervise(ctx, exited)
	return r, nil
}

type run struct {
	spec    engine.Spec
	inv     Invocation
	started time.Time
	done    chan struct{}
	rec     *Recorder

	procMu sync.Mutex
	cmd    *exec.Cmd
	pgid   int
	start  uint64 // the start time of pgid's leader (0: unknown)

	stopOnce sync.Once
	stop     chan struct{}

	outcome engine.Outcome
}

// launch starts one process of the run and returns a channel that gets its
// exit once it exited, its group is ended and its output is read.
func (r *run) launch(args []string, stdin string) (<-chan error, error) {
	argv := append([]string{r.inv.Path}, args...)
	if engine.Sandboxed(r.spec.Params.Isolation) {
		ro := []string{engine.InstallRoot(r.inv.Path)}
		if r.spec.HubBinary != "" {
			ro = append(ro, r.spec.HubBinary) // the worker MCP server the CLI starts
		}
		var err error
		if argv, err = engine.SandboxCommand(r.spec, argv, ro...); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.spec.Dir, r.inv.Env
	cmd.Stdin = nil // /dev/null: Claude Code waits on an open stdin
	// Standard input, output and error are pipes of hub's own (files, not
	// writers), so os/exec copies nothing and Wait returns when the CLI
	// itself exits, even while something it started (a server, a shell
	// command's background child) still holds them open.
	var stdinW *os.File
	if stdin != "" {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", r.inv.Describe, err)
		}
		defer pr.Close() // the CLI has its own copy once started
		cmd.Stdin, stdinW = pr, pw
	}
	stdout, err := engine.NewOutputPipe(r.read)
	if err != nil {
		if stdinW != nil {
			stdinW.Close()
		}
		return nil, fmt.Errorf("start %s: %w", r.inv.Describe, err)
	}
	cmd.Stdout = stdout.File()
	var stderr *engine.OutputPipe
	if w := r.spec.Output; w != nil {
		if stderr, err = engine.NewOutputPipe(func(rd io.Reader) { _, _ = io.Copy(w, rd) }); err != nil {
			stdout.Started()
			stdout.Drain(0)
			if stdinW != nil {
				stdinW.Close()
			}
			return nil, fmt.Errorf("start %s: %w", r.inv.Describe, err)
		}
		cmd.Stderr = stderr.File()
	}
	err = pgroup.Start(cmd)
	stdout.Started()
	if stderr != nil {
		stderr.Started()
	}
	drain := func(d time.Duration) {
		if stdinW != nil {
			stdinW.Close() // a prompt nobody reads does not hold the run
		}
		stdout.Drain(d)
		if stderr != nil {
			stderr.Drain(d)
		}
	}
	if err != nil {
		drain(0)
		return nil, fmt.Errorf("start %s: %w", r.inv.Describe, err)
	}
	pgid := cmd.Process.Pid
	start, _ := proc.ChildStartTime(pgid) // not waited for yet: the pid is the CLI's
	r.procMu.Lock()
	r.cmd, r.pgid, r.start = cmd, pgid, start
	r.procMu.Unlock()
	if stdinW != nil {
		go func() { _, _ = io.WriteString(stdinW, stdin); stdinW.Close() }()
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// The CLI is done: what it left in its group goes now (a resume
		// runs in a group of its own), then the rest of its stream is read.
		proc.StopGroup(pgid, start, leftoverGrace)
		drain(outputDrain)
		exited <- err
	}()
	return exited, nil
}

const (
	// leftoverGrace is what the CLI's leftovers get between SIGTERM and
	// SIGKILL once the CLI exited.
	leftoverGrace = 2 * time.Second
	// outputDrain is how long the CLI's output is still read once its
	// group is gone: a process outside it holding the pipe must not hold
	// the run.
	outputDrain = time.Second
)

// read hands every line of the stream to the parser.
func (r *run) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			r.line(line)
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line, keeping at most maxLine bytes of it.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// supervise waits for the CLI, resumes it with steering it never took,
// and settles the outcome.
func (r *run) supervise(ctx context.Context, exited <-chan error) {
	defer close(r.done)
	var err error
	for resumes := 0; ; resumes++ {
		err = <-exited
		if r.stopping() || err != nil || resumes >= maxResumes || r.inv.Resume == nil || r.spec.Mailbox == nil {
			break
		}
		session := r.rec.SessionID()
		if session == "" {
			break
		}
		steers, perr := r.spec.Mailbox.Progress(context.WithoutCancel(ctx), "")
		if perr != nil || len(steers) == 0 {
			break
		}
		prompt, stdin := agent.SteeringPrompt(steers), ""
		args := r.inv.Resume(session, prompt)
		if args == nil {
			break
		}
		if r.inv.ResumeStdin {
			stdin = prompt
		}
		r.rec.Note(fmt.Sprintf("resuming session %s with steering from the supervisor", session))
		if exited, err = r.launch(args, stdin); err != nil {
			break
		}
	}
	r.procMu.Lock()
	cmd := r.cmd
	r.procMu.Unlock()
	r.outcome = r.rec.Outcome(cmd.ProcessState, err, true)
}

// line hands one line of the stream to the CLI's parser; a line it does
// not know is kept in the worker log.
func (r *run) line(b []byte) {
	if !r.inv.Parse(b, r.rec) {
		r.rec.Log("[event] " + OneLine(string(b), 400))
	}
}

func (r *run) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func (r *run) PGID() int {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	return r.pgid
}

// LeaderStart is the start time of the leader of PGID's group (the CLI
// process of the latest launch), read before it could be reaped: what
// proc.KillGroup and proc.EndLeftovers need, even once the CLI is gone (0:
// unknown). Not part of engine.Run: a caller asks for it with
// interface{ LeaderStart() uint64 }.
func (r *run) LeaderStart() uint64 {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	return r.start
}

// Heartbeat is false: a CLI's output is its sign of life.
func (r *run) Heartbeat() bool { return false }

func (r *run) Wait() engine.Outcome {
	<-r.done
	return r.outcome
}

// Stop ends the CLI and everything it started: SIGTERM to its process
// group, SIGKILL after grace. No resume follows.
func (r *run) Stop(grace time.Duration) {
	r.stopOnce.Do(func() { close(r.stop) })
	pgid := r.PGID()
	_ = pgroup.Signal(pgid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(grace):
	}
	_ = pgroup.Signal(pgid, syscall.SIGKILL)
	<-r.done
	// A signal is delivered, not acted on, when Kill returns: give the
	// group a moment to be gone, so what Stop promises holds when it returns.
	proc.WaitGroupGone(pgid, 2*time.Second)
}

// OneLine is s on one line, its runs of white space one space, cut to at
// most n runes: how a worker's text goes into a log line or a note.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
