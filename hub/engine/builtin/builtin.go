// Package builtin is the builtin engine: hub's own worker (package agent)
// running inside the job's shim, on the model a profile names. It turns a
// job's spec into the loop's configuration, gives the loop the job's
// mailbox, the worktree's tools and a view of what the worktree holds for
// the rubric, and turns the loop's end into an engine outcome. It reads
// keys only to hand them to the model client: never into the worker's
// environment, never to a log. (At isolation worktree the worker's shell runs
// as the user and can read the user's files; that is what the level says.)
package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/agent/tool"
	"github.com/hub-agents/hub/hub/demo"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/rubric"
)

// Name is the engine's name.
const Name = "builtin"

// Options configure the engine.
type Options struct {
	// ConfigDir holds profiles.json, env and prices.json (required).
	ConfigDir string
	Log       zerolog.Logger
	// Retry tunes model-call retries (nil: defaults).
	Retry *model.Retry
}

// Engine is the builtin engine. It is safe for concurrent use.
type Engine struct{ o Options }

// New returns the engine.
func New(o Options) *Engine { return &Engine{o: o} }

func (e *Engine) profiles() profile.Store { return profile.Store{Dir: e.o.ConfigDir} }

func (*Engine) Name() string { return Name }

func (*Engine) Capabilities() protocol.EngineCapabilities {
	// Read jobs get read-only tools and no shell, so it can answer in a
	// plain directory too. Model calls stay in the shim; at isolated and
	// untrusted only the tools' shell commands run in the sandbox, so
	// untrusted cuts their network and not the model's.
	c := protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree}, ReadOnly: true, Pays: protocol.PaysAPI,
		IsolationWhyNot: map[protocol.Isolation]string{protocol.IsolationSandbox: "the built-in worker has no sandbox of its own; ask for isolated (bubblewrap)"}}
	engine.AddSandboxLevels(&c)
	return c
}

// Probe says whether a default profile is set and has what it needs. It
// makes no network call (`hub provider status` does).
func (e *Engine) Probe(ctx context.Context) engine.Availability {
	p, err := e.profiles().Get("")
	if errors.Is(err, profile.ErrNoDefault) {
		return engine.Availability{Available: true, Version: "no default profile: jobs name one"}
	}
	if err != nil {
		return engine.Availability{Reason: err.Error()}
	}
	if _, _, err := e.profiles().Key(p); err != nil {
		return engine.Availability{Reason: err.Error()}
	}
	return engine.Availability{Available: true, Version: fmt.Sprintf("default profile %s (%s %s)", p.Name, p.Provider, p.Model)}
}

var efforts = map[string]struct{ turns, revisions int }{
	"low": {20, -1}, "medium": {50, 2}, "high": {100, 3},
}

// Check refuses a job the engine cannot run as asked: no profile, no key,
// an unknown effort.
func (e *Engine) Check(spec protocol.StartParams) error {
	if spec.Exec != "" {
		return errors.New("exec is for the exec engine; the builtin engine takes a task (drop exec, or pick engine exec)")
	}
	if _, ok := efforts[spec.Effort]; spec.Effort != "" && !ok {
		return fmt.Errorf("effort %q is not one of %s", spec.Effort, strings.Join(protocol.Efforts, ", "))
	}
	p, err := e.profiles().Get(spec.Profile)
	if errors.Is(err, profile.ErrNoDefault) {
		return errors.New("no profile named and no default profile set; pass `profile`, or set one with `hub profile set NAME --provider openai --model MODEL`")
	}
	if err != nil {
		return err
	}
	if spec.Model != "" && p.Provider == profile.Scripted {
		return fmt.Errorf("profile %s plays a script; it takes no model", p.Name)
	}
	if _, _, err := e.profiles().Key(p); err != nil {
		return err
	}
	return nil
}

// Start builds the model client and the workspace and starts the loop.
func (e *Engine) Start(ctx context.Context, spec engine.Spec) (engine.Run, error) {
	p, err := e.profiles().Get(spec.Params.Profile)
	if err != nil {
		return nil, err
	}
	key, _, err := e.profiles().Key(p)
	if err != nil {
		return nil, err
	}
	// The key can come back inside a provider's error message; it goes no further.
	r := &run{started: time.Now(), profile: p, red: redact.New(key)}
	client, cleanup, err := e.client(ctx, p, key, spec.Params.Model, r.red)
	if err != nil {
		return nil, err
	}
	r.cleanup = cleanup
	r.model = &trackedModel{Client: client}
	topt := &tool.Options{Env: spec.Env}
	if engine.Sandboxed(spec.Params.Isolation) {
		topt.Wrap = func(argv []string) ([]string, error) { return engine.SandboxCommand(spec, argv) }
	}
	ws, err := tool.New(spec.Dir, topt)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("open the worktree for the tools: %w", err)
	}
	r.ws = ws
	eff := efforts[spec.Params.Effort]
	if spec.Params.Effort == "" {
		eff = efforts["medium"]
	}
	maxTurns := spec.Params.MaxTurns
	if maxTurns == 0 {
		maxTurns = eff.turns
	}
	write := spec.Params.Kind != protocol.KindRead
	cfg := agent.Config{
		Model: r.model, Workspace: ws, Log: e.o.Log.With().Str("engine", Name).Logger(),
		Task: spec.Params.Task, Files: spec.Params.Files, Write: write,
		DefinitionOfDone: spec.Params.DefinitionOfDone, Verify: spec.Params.Verify,
		MaxTurns: maxTurns, BudgetMicros: spec.MaxMicros, Revisions: eff.revisions,
		Roles: write, Grade: write && strings.TrimSpace(spec.Params.DefinitionOfDone) != "" && p.Provider != profile.Scripted,
		Transcript: spec.Output,
	}
	if spec.Mailbox != nil {
		cfg.Mailbox = &mailbox{mb: spec.Mailbox, job: spec.JobID, red: r.red}
	}
	if write && spec.BaseSHA != "" {
		cfg.Observe = observer(spec)
	}
	r.command = fmt.Sprintf("builtin agent loop (profile %s, %s %s)", p.Name, p.Provider, client.Model())
	r.start(ctx, func(ctx context.Context) { r.res = agent.Run(ctx, cfg) })
	return r, nil
}

// client builds the model client of a profile; cleanup stops what it started.
// A login profile's tokens go to red as they are handed out.
func (e *Engine) client(ctx context.Context, p profile.Profile, key, modelOverride string, red *redact.Redactor) (*model.Client, func(), error) {
	prices, err := model.Prices(filepath.Join(e.o.ConfigDir, "prices.json"))
	if err != nil {
		return nil, nil, err
	}
	models := p.Models()
	if modelOverride != "" {
		models[0] = modelOverride
	}
	o := model.Options{Provider: p.Provider, BaseURL: p.BaseURL, Key: key, Models: models, MaxTokens: p.MaxTokens,
		ContextWindow: p.ContextWindow, Prices: prices, Retry: e.o.Retry}
	cleanup := func() {}
	if p.Provider == profile.Scripted {
		srv, err := scriptedServer(p)
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { srv.Close() }
		o.Provider, o.BaseURL, o.Key, o.Free = model.OpenAI, srv.URL()+"/v1", "scripted", true
		o.Models = p.Models()[:1]
	}
	if p.LogsIn() {
		src := &oauth.Source{Store: e.profiles().Logins(), Profile: p.Name, OnToken: red.Add}
		t, err := src.Token(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		// A subscription: the calls cost nothing on top of it.
		o.Auth, o.Free, o.Key = src, true, ""
		switch p.Provider {
		case profile.Copilot:
			o.Provider = model.OpenAI
			if o.BaseURL == "" {
				o.BaseURL = t.APIBase
			}
		case profile.ChatGPT:
			o.Provider = model.Responses
			if o.BaseURL == "" {
				o.BaseURL = model.ChatGPTBaseURL
			}
		}
	}
	c, err := model.New(o)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return c, cleanup, nil
}

// scriptedServer plays a scripted profile's script on loopback, inside the
// job: the embedded demo script, or a script file.
func scriptedServer(p profile.Profile) (*scripted.Server, error) {
	var (
		sc  *scripted.Script
		err error
	)
	if p.Script == profile.Demo {
		sc, err = demo.Script()
	} else {
		var b []byte
		if b, err = os.ReadFile(p.Script); err == nil {
			sc, err = scripted.LoadScript(bytes.NewReader(b))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("profile %s: script %s: %w", p.Name, p.Script, err)
	}
	srv := scripted.New(nil)
	if err := srv.SetScript("", sc); err != nil {
		return nil, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start the scripted model: %w", err)
	}
	return srv, nil
}

// observer tells the rubric what the worktree holds now: the files changed
// since base, and the verify command's outcome run in the worktree.
func observer(spec engine.Spec) func(ctx context.Context) (rubric.Facts, error) {
	return func(ctx context.Context) (rubric.Facts, error) {
		if spec.Checkout == nil {
			return rubric.Facts{}, errors.New("no checkout to read the changes of")
		}
		// Through hub's own view of the checkout: never what the
		// worktree's .git says, which the worker may have rewritten.
		files, err := spec.Checkout.Changes(ctx, spec.BaseSHA)
		if err != nil {
			return rubric.Facts{}, err
		}
		f := rubric.Facts{Write: true}
		for _, c := range files {
			f.Files = append(f.Files, rubric.FileChange{Path: c.Path, OldPath: c.OldPath, Change: c.Change})
		}
		if spec.Params.Verify != "" {
			f.Verify = runVerify(ctx, spec)
		}
		return f, nil
	}
}

// runVerify runs the caller's check in the worktree, as the worker left it:
// at the isolated levels inside the job's sandbox, since the worker wrote
// what it runs.
func runVerify(ctx context.Context, spec engine.Spec) *rubric.VerifyFact {
	v := &rubric.VerifyFact{Command: spec.Params.Verify}
	timeout := time.Duration(spec.Params.VerifyTimeoutS) * time.Second
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	argv := []string{"sh", "-c", spec.Params.Verify}
	if engine.Sandboxed(spec.Params.Isolation) {
		var err error
		if argv, err = engine.SandboxCommand(spec, argv, spec.HubBinary); err != nil {
			v.OutputTail = err.Error()
			return v
		}
	}
	res := engine.RunCommand(ctx, engine.Command{Argv: argv, Dir: spec.Dir, Env: append(append([]string{}, spec.Env...), "HUB_VERIFY=1"),
		Timeout: timeout, OutputMax: 4096, Marker: "HUB_JOB=" + spec.JobID, Grace: 2 * time.Second})
	if res.Err != nil {
		v.OutputTail = res.Err.Error()
		return v
	}
	v.TimedOut = res.TimedOut
	v.Ran = !res.TimedOut && res.Cancelled == nil
	v.ExitCode = res.ExitCode
	v.OutputTail = res.Output
	return v
}

// mailbox adapts the job's mailbox to the loop's.
type mailbox struct {
	mb  engine.Mailbox
	job string
	red *redact.Redactor
}

func (m *mailbox) Ask(ctx context.Context, kind, question, context string) (agent.Answer, error) {
	r, err := m.mb.Ask(ctx, protocol.AskParams{Job: m.job, Question: question, Context: context, Kind: kind})
	if err != nil {
		return agent.Answer{}, err
	}
	return agent.Answer{Text: r.Answer, TimedOut: r.TimedOut, Instruction: r.Instruction}, nil
}

func (m *mailbox) Progress(ctx context.Context, note string) ([]string, error) {
	return m.mb.Progress(ctx, note)
}

func (m *mailbox) Spent(ctx context.Context, s agent.Spend) {
	m.mb.Spent(ctx, s.Micros, protocol.CostEvent{USD: s.Micros.USD(), Known: s.Known, Tokens: s.Tokens, Calls: s.Calls, Model: s.Model})
}

// Step records one of the loop's steps in the job's trace; the key of the
// run's own profile is redacted here too (the shim knows every profile's).
func (m *mailbox) Step(ctx context.Context, s agent.Step) {
	e := protocol.TraceEntry{ID: s.ID, Parent: s.Parent, Kind: protocol.TraceTool, Name: s.Name, Start: s.Start,
		DurationUS: s.Took.Microseconds(), Args: m.red.String(s.Args), Result: m.red.String(s.Result), ExitCode: s.ExitCode, Failed: s.Failed}
	switch s.Kind {
	case agent.StepModel:
		e.Kind = protocol.TraceModel
		e.TokensIn, e.TokensOut = int64(s.TokensIn), int64(s.TokensOut)
		e.USD, e.CostUnknown = s.Micros.USD(), !s.CostKnown
	case agent.StepCheck:
		e.Kind = protocol.TraceCommand
	}
	m.mb.Trace(ctx, e)
}

// trackedModel counts the model calls in flight: a run waiting on its model
// is busy, not stalled (each attempt is bounded by the retry's own timeout).
type trackedModel struct {
	*model.Client
	inflight atomic.Int32
}

func (m *trackedModel) Generate(ctx context.Context, c model.Call) (*model.Reply, error) {
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	return m.Client.Generate(ctx, c)
}

// inShim is what a run in the shim's own process shares (the built-in
// worker's loop, a step's narration): a context to cancel, and done when
// its goroutine ends.
type inShim struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs fn on a context of its own (the caller's values, not its
// cancel: only Stop ends it), closing done when fn returns.
func (l *inShim) start(ctx context.Context, fn func(context.Context)) {
	l.done = make(chan struct{})
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(l.done)
		fn(ctx)
	}()
}

// PGID is 0: the run is in the shim; its commands have groups of their
// own, which the tools stop.
func (l *inShim) PGID() int { return 0 }

// Stop cancels the run and waits for it at most grace.
func (l *inShim) Stop(grace time.Duration) {
	l.cancel()
	select {
	case <-l.done:
	case <-time.After(grace):
	}
}

// run is one loop in flight.
type run struct {
	inShim
	model   *trackedModel
	profile profile.Profile
	command string
	started time.Time
	ws      *tool.Workspace
	cleanup func()
	res     agent.Result
	red     *redact.Redactor

	waitOnce sync.Once
}

// Heartbeat is true while a shell command runs within its own timeout, or
// while the loop waits on a model call.
func (r *run) Heartbeat() bool { return r.ws.Busy() || r.model.inflight.Load() > 0 }

func (r *run) Wait() engine.Outcome {
	<-r.done
	r.waitOnce.Do(func() {
		r.cleanup()
		_ = r.ws.Close()
	})
	res := r.res
	o := engine.Outcome{Summary: r.red.String(res.Summary), CostMicros: res.Spend.Micros, CostKnown: res.Spend.Known,
		Tokens: res.Spend.Tokens, Calls: res.Spend.Calls, Models: res.Models, Model: res.Spend.Model,
		Duration: time.Since(r.started), Command: r.command}
	if o.Model == "" {
		o.Model = r.profile.Model
	}
	switch res.Stop {
	case agent.StopDone:
		o.ExitCode = 0
	case agent.StopCancelled:
		o.ExitCode, o.Signal = -1, "stopped"
	default:
		o.ExitCode = 1
		o.Failure = string(res.Stop)
		if res.Err != nil {
			o.Failure = r.red.String(res.Err.Error())
		}
	}
	if res.Rubric != nil {
		for _, c := range res.Rubric.Criteria {
			if c.By == rubric.ByModel {
				o.Judgements = append(o.Judgements, rubric.Judgement{ID: c.ID, Status: c.Status, Evidence: c.Evidence})
			}
		}
	}
	return o
}
