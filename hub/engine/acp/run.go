package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/internal/pgroup"
)

// launch is what a run needs of its engine.
type launch struct {
	path    string
	args    []string
	env     []string
	auth    []string
	prompt  string
	pricing agentcli.Pricing
	timeout time.Duration
}

const (
	// maxTurns bounds the prompt turns of one run: the task's, then one
	// per delivery of steering.
	maxTurns = 8
	// steerEvery is how often a working agent's steering is looked for.
	steerEvery = 2 * time.Second
	// exitWait is how long an agent whose work is done gets to exit on its
	// own once its input is closed, before its group is ended.
	exitWait = 3 * time.Second
	// leftoverGrace is what the agent's group gets between SIGTERM and
	// SIGKILL once the run is over.
	leftoverGrace = 2 * time.Second
	// outputDrain is how long the agent's output is still read once it
	// exited: a process outside its group holding the pipe must not hold
	// the run.
	outputDrain = time.Second
)

// run is one agent process and its session.
type run struct {
	spec engine.Spec
	l    launch
	rec  *agentcli.Recorder
	st   *state
	conn *sdk.Connection

	cmd    *exec.Cmd
	pgid   int
	leader uint64
	stdin  *os.File // hub's end of the agent's stdin
	stdout *os.File // hub's end of the agent's stdout
	exited chan struct{}
	// waitErr is cmd.Wait's error, set before exited closes.
	waitErr error

	mu       sync.Mutex
	session  sdk.SessionId
	steers   []string // steering taken from the mailbox, not yet delivered
	failure  string   // why the run failed, in words ("" while it has not)
	finished bool     // the agent ended its last turn as asked

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	outcome  engine.Outcome
}

// start launches the agent and drives its session in the background.
func start(ctx context.Context, spec engine.Spec, l launch) (engine.Run, error) {
	r := &run{spec: spec, l: l, exited: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	r.rec = agentcli.NewRecorder(context.WithoutCancel(ctx), spec, l.pricing)
	r.st = newState(r.rec, r.flooded)
	if err := r.launch(); err != nil {
		r.st.flush()
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			r.Stop(5 * time.Second)
		case <-r.done:
		}
	}()
	go r.drive(ctx)
	return r, nil
}

// launch starts the agent process with its stdin and stdout as hub's pipes.
func (r *run) launch() error {
	argv := append([]string{r.l.path}, r.l.args...)
	if engine.Sandboxed(r.spec.Params.Isolation) {
		ro := []string{engine.InstallRoot(r.l.path)}
		if r.spec.HubBinary != "" {
			ro = append(ro, r.spec.HubBinary)
		}
		var err error
		if argv, err = engine.SandboxCommand(r.spec, argv, ro...); err != nil {
			return err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.spec.Dir, r.l.env
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start %s: %w", r.l.pricing.Describe, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("start %s: %w", r.l.pricing.Describe, err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	var stderr *engine.OutputPipe
	if w := r.spec.Output; w != nil {
		if stderr, err = engine.NewOutputPipe(func(rd io.Reader) { _, _ = io.Copy(w, rd) }); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return fmt.Errorf("start %s: %w", r.l.pricing.Describe, err)
		}
		cmd.Stderr = stderr.File()
	}
	err = pgroup.Start(cmd)
	// The agent has its own copies of its ends now.
	inR.Close()
	outW.Close()
	if stderr != nil {
		stderr.Started()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if stderr != nil {
			stderr.Drain(0)
		}
		return fmt.Errorf("start %s: %w", r.l.pricing.Describe, err)
	}
	r.cmd, r.pgid, r.stdin, r.stdout = cmd, cmd.Process.Pid, inW, outR
	r.leader, _ = proc.ChildStartTime(r.pgid) // not waited for yet: the pid is the agent's
	// The connection exists before anything waits on it, and reads nothing
	// before its logger is set (the library reads the logger unguarded).
	guard := &lineGuard{r: r.stdout, max: maxMessage, tooLong: r.tooLong, ready: make(chan struct{})}
	r.conn = sdk.NewConnection(r.handle, r.stdin, guard)
	r.conn.SetLogger(slog.New(slog.NewTextHandler(logWriter{r}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	close(guard.ready)
	go func() {
		err := cmd.Wait()
		// What the agent left in its group goes, then what it still has
		// to say is read; a pipe held open by a process that escaped the
		// group is then closed under it.
		proc.StopGroup(r.pgid, r.leader, leftoverGrace)
		if stderr != nil {
			stderr.Drain(outputDrain)
		}
		select {
		case <-r.conn.Done():
		case <-time.After(outputDrain):
		}
		r.stdout.Close()
		r.waitErr = err
		close(r.exited)
	}()
	return nil
}

// drive runs the session: start it, prompt it turn by turn, end it.
func (r *run) drive(ctx context.Context) {
	defer close(r.done)
	err := r.open()
	if err == nil {
		err = r.turns(ctx)
	}
	if err != nil {
		r.fail(err.Error())
	} else {
		r.mu.Lock()
		r.finished = true
		r.mu.Unlock()
	}
	r.st.flush()
	// The agent's work is done (or failed): its input closes, and it gets
	// a moment to exit on its own before its group is ended.
	r.stdin.Close()
	select {
	case <-r.exited:
	case <-time.After(exitWait):
		proc.StopGroup(r.pgid, r.leader, leftoverGrace)
		<-r.exited
	}
	r.outcome = r.settle()
}

// call sends one request that the agent must answer within the start
// timeout, and gives up when the run stops or the agent exits.
func call[T any](r *run, method string, params any, what string) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.l.timeout)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
		case <-r.exited:
		case <-ctx.Done():
		}
		cancel()
	}()
	res, err := sdk.SendRequest[T](r.conn, ctx, method, params)
	if err != nil {
		switch {
		case r.stopping():
			return res, errStopped
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return res, fmt.Errorf("the agent did not answer %s within %s", what, r.l.timeout)
		}
		return res, r.lost(what, err)
	}
	return res, nil
}

// errStopped ends a run that Stop ended.
var errStopped = errors.New("stopped")

// lost explains a request that failed: the agent exited, broke the
// protocol, or refused.
func (r *run) lost(what string, err error) error {
	// An agent that is exiting closes its output, or its input fails a
	// write, a moment before its exit is seen: give the exit that moment,
	// so the failure says the agent exited rather than what it looked like.
	wait := time.Second
	select {
	case <-r.conn.Done():
		wait = exitWait
	default:
	}
	select {
	case <-r.exited:
	case <-time.After(wait):
	}
	select {
	case <-r.exited:
		return fmt.Errorf("the agent exited during %s (%s)", what, exitWords(r.cmd.ProcessState))
	default:
	}
	select {
	case <-r.conn.Done():
		return fmt.Errorf("the agent's connection closed during %s", what)
	default:
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return fmt.Errorf("the agent refused %s: %s", what, re.Message)
	}
	return fmt.Errorf("%s: %v", what, err)
}

func exitWords(ps *os.ProcessState) string {
	code, sig := engine.ExitOf(ps)
	if sig != "" {
		return "killed by " + sig
	}
	return fmt.Sprintf("exit code %d", code)
}

// open initializes the connection, logs in when the agent asks for it and
// hub has a method, and opens the session in the job's directory with
// hub's worker MCP server.
func (r *run) open() error {
	init, err := call[sdk.InitializeResponse](r, sdk.AgentMethodInitialize, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		// No file system and no terminal of the client's: the agent works
		// in its worktree with its own tools, which the permission policy
		// and the sandbox govern.
		ClientCapabilities: sdk.ClientCapabilities{},
		ClientInfo:         &sdk.Implementation{Name: "hub", Version: "1"},
	}, "initialize")
	if err != nil {
		return err
	}
	if init.ProtocolVersion != sdk.ProtocolVersionNumber {
		r.rec.Log(fmt.Sprintf("[hub] the agent speaks ACP version %d; hub speaks %d", init.ProtocolVersion, sdk.ProtocolVersionNumber))
	}
	if m := authMethod(r.l.auth, init.AuthMethods); m != "" {
		if _, err := call[sdk.AuthenticateResponse](r, sdk.AgentMethodAuthenticate, sdk.AuthenticateRequest{MethodId: m}, "authenticate ("+m+")"); err != nil {
			return err
		}
	}
	var servers []sdk.McpServer
	if r.spec.HubBinary != "" {
		w := agentcli.Worker(r.spec)
		var env []sdk.EnvVariable
		for k, v := range w.Env {
			env = append(env, sdk.EnvVariable{Name: k, Value: v})
		}
		servers = append(servers, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "hub", Command: w.Command, Args: w.Args, Env: env}})
	}
	if servers == nil {
		servers = []sdk.McpServer{}
	}
	sess, err := call[sdk.NewSessionResponse](r, sdk.AgentMethodSessionNew, sdk.NewSessionRequest{Cwd: r.spec.Dir, McpServers: servers}, "session/new")
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.session = sess.SessionId
	r.mu.Unlock()
	r.rec.Session(string(sess.SessionId))
	return nil
}

// authMethod is the first of hub's methods the agent offers ("" when it
// asks for none, or none of hub's).
func authMethod(ours []string, offered []sdk.AuthMethod) string {
	for _, m := range ours {
		for _, o := range offered {
			if methodID(o) == m {
				return m
			}
		}
	}
	return ""
}

// methodID is an auth method's id, whatever its variant.
func methodID(m sdk.AuthMethod) string {
	b, _ := json.Marshal(m)
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &v)
	return v.ID
}

// turns prompts the agent with the task, then with steering it has not
// taken, until a turn ends with nothing left to deliver.
func (r *run) turns(ctx context.Context) error {
	prompt := r.l.prompt
	for turn := 1; ; turn++ {
		resp, err := r.prompt(ctx, prompt)
		if err != nil {
			return err
		}
		metered := r.st.endTurn()
		switch {
		case metered:
			// Each model call came with its tokens.
		case resp.Usage != nil:
			u := model.Usage{Input: agentcli.Count(resp.Usage.InputTokens), Output: agentcli.Count(resp.Usage.OutputTokens)}
			if c := resp.Usage.CachedReadTokens; c != nil {
				u.CachedInput = min(agentcli.Count(*c), u.Input)
			}
			r.rec.Usage(u)
		default:
			if u, ok := metaUsage(resp.Meta); ok {
				r.rec.Usage(u)
			} else {
				r.st.unmetered()
			}
		}
		if r.stopping() {
			return errStopped
		}
		if f := r.st.floodErr(); f != "" {
			return errors.New(f)
		}
		steers := r.takeSteering(ctx)
		if len(steers) > 0 && turn < maxTurns {
			r.rec.Note("giving the agent steering from the supervisor in a new turn")
			prompt = agent.SteeringPrompt(steers)
			if resp.StopReason == sdk.StopReasonCancelled {
				// An agent may drop a cancelled turn from its history
				// (Qwen Code does): the task goes with the steering.
				prompt += "\n\nYour last turn was interrupted to give you this. The task you were working on:\n\n" + r.l.prompt
			}
			continue
		}
		switch resp.StopReason {
		case sdk.StopReasonEndTurn:
			return nil
		case sdk.StopReasonMaxTokens:
			return errors.New("max_tokens: the model's answer reached its token limit")
		case sdk.StopReasonMaxTurnRequests:
			return errors.New("max_turns: the agent reached its limit of model requests in one turn")
		case sdk.StopReasonRefusal:
			return errors.New("the agent refused to go on with the task")
		case sdk.StopReasonCancelled:
			return errors.New("the agent cancelled its turn")
		}
		return fmt.Errorf("the agent ended its turn for an unknown reason (%q)", resp.StopReason)
	}
}

// prompt runs one turn. While it runs, steering the supervisor queued is
// taken, and the turn is cancelled so it is delivered at once.
func (r *run) prompt(ctx context.Context, text string) (sdk.PromptResponse, error) {
	r.mu.Lock()
	session := r.session
	r.mu.Unlock()
	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	turnDone := make(chan struct{})
	defer close(turnDone)
	go func() {
		select {
		case <-r.exited:
			cancel() // a connection held open by an escaped process must not hold the turn
		case <-turnDone:
		}
	}()
	go r.watchSteering(ctx, turnDone)
	resp, err := sdk.SendRequest[sdk.PromptResponse](r.conn, tctx, sdk.AgentMethodSessionPrompt,
		sdk.PromptRequest{SessionId: session, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		if r.stopping() {
			return resp, errStopped
		}
		if f := r.st.floodErr(); f != "" {
			return resp, errors.New(f)
		}
		if f := r.failed(); f != "" {
			return resp, errors.New(f)
		}
		return resp, r.lost("its turn", err)
	}
	return resp, nil
}

// watchSteering looks for queued steering while a turn runs; when there is
// some, it keeps it for the next turn and cancels this one.
func (r *run) watchSteering(ctx context.Context, turnDone <-chan struct{}) {
	mb := r.spec.Mailbox
	if mb == nil {
		return
	}
	t := time.NewTicker(steerEvery)
	defer t.Stop()
	for {
		select {
		case <-turnDone:
			return
		case <-r.stop:
			return
		case <-t.C:
		}
		steers, err := mb.Progress(context.WithoutCancel(ctx), "")
		if err != nil || len(steers) == 0 {
			continue
		}
		r.mu.Lock()
		r.steers = append(r.steers, steers...)
		r.mu.Unlock()
		r.rec.Note("steering from the supervisor: cancelling the agent's turn to deliver it")
		r.cancelTurn()
		return
	}
}

// takeSteering is the steering kept from the last turn and any queued since.
func (r *run) takeSteering(ctx context.Context) []string {
	r.mu.Lock()
	steers := r.steers
	r.steers = nil
	r.mu.Unlock()
	if mb := r.spec.Mailbox; mb != nil {
		more, err := mb.Progress(context.WithoutCancel(ctx), "")
		if err == nil {
			steers = append(steers, more...)
		}
	}
	return steers
}

// cancelTurn asks the agent to end its turn (session/cancel).
func (r *run) cancelTurn() {
	r.mu.Lock()
	session := r.session
	r.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.conn.SendNotification(ctx, sdk.AgentMethodSessionCancel, sdk.CancelNotification{SessionId: session})
}

// fail records why the run failed (the first reason wins).
func (r *run) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == "" {
		r.failure = msg
	}
}

func (r *run) failed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure
}

// flooded ends a run whose agent sends more than hub takes.
func (r *run) flooded(msg string) {
	r.fail(msg)
	r.rec.Note(msg)
	go r.kill()
}

// tooLong ends a run whose agent sent one message over maxMessage.
func (r *run) tooLong() {
	r.flooded(fmt.Sprintf("flood: the agent sent a message over %d MiB; hub stopped it", maxMessage>>20))
}

// kill ends the agent's group at once (its output is not worth waiting for).
func (r *run) kill() {
	_ = proc.KillGroup(r.pgid, r.leader, syscall.SIGKILL)
}

// settle makes the outcome: what the recorder heard, the process's exit,
// and how the session ended. An agent that ended its turn as asked ran
// clean whatever its exit (hub ended it); one that did not failed.
func (r *run) settle() engine.Outcome {
	o := r.rec.Outcome(r.cmd.ProcessState, r.waitErr, false)
	r.mu.Lock()
	finished, failure := r.finished, r.failure
	r.mu.Unlock()
	switch {
	case finished:
		o.ExitCode, o.Signal, o.Err, o.Failure = 0, "", nil, ""
	case failure == errStopped.Error():
		// Stopped: the shim says so; the exit is what it was.
	default:
		if o.ExitCode == 0 && o.Signal == "" {
			o.ExitCode = 1
		}
		o.Signal, o.Err = "", nil
		o.Failure = failure
	}
	return o
}

func (r *run) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func (r *run) PGID() int { return r.pgid }

// LeaderStart is the start time of the agent process, read before it could
// be reaped (see agentcli's).
func (r *run) LeaderStart() uint64 { return r.leader }

// Heartbeat is false: the agent's updates are its sign of life.
func (r *run) Heartbeat() bool { return false }

func (r *run) Wait() engine.Outcome {
	<-r.done
	return r.outcome
}

// Stop asks the agent to end its turn (session/cancel), then ends its
// process group: SIGTERM after half of grace, SIGKILL after the rest.
func (r *run) Stop(grace time.Duration) {
	first := false
	r.stopOnce.Do(func() { close(r.stop); first = true })
	if first {
		r.fail(errStopped.Error())
		r.cancelTurn()
	}
	select {
	case <-r.done:
		return
	case <-time.After(grace / 2):
	}
	_ = proc.KillGroup(r.pgid, r.leader, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(grace / 2):
		r.kill()
		<-r.done
	}
	// The group is gone when Stop returns, as it promises.
	proc.WaitGroupGone(r.pgid, 2*time.Second)
}

// logWriter puts the connection's own complaints into the worker log.
type logWriter struct{ r *run }

func (w logWriter) Write(p []byte) (int, error) {
	w.r.rec.Log("[acp] " + string(trimNL(p)))
	if bytes.Contains(p, []byte("notification queue overflow")) {
		w.r.flooded("flood: the agent sent updates faster than hub could take them (1024 waiting); hub stopped it")
	}
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// maxMessage bounds one message from the agent (the connection's reader
// gives up at 10 MiB, without saying why).
const maxMessage = 8 << 20

// lineGuard reads the agent's stdout, once ready is closed, and reports a
// line longer than max.
type lineGuard struct {
	r       io.Reader
	max     int
	n       int
	tooLong func()
	tripped bool
	ready   chan struct{}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	<-g.ready
	n, err := g.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			g.n = 0
			continue
		}
		g.n++
		if g.n > g.max && !g.tripped {
			g.tripped = true
			g.tooLong()
		}
	}
	return n, err
}
