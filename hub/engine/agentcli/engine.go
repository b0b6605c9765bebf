package agentcli

import (
	"context"
	"fmt"
	"slices"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
)

// Options configure an agent CLI engine.
type Options struct {
	// ConfigDir holds hub's profiles, env and prices (required).
	ConfigDir string
}

// CLI is an agent CLI engine as a table: the program, the profiles it
// speaks, how far hub's isolation levels hold it, how it names hub's
// tools, and how to launch it. An engine fills one in and New makes it an
// engine.Engine; what is left in the engine's own package is what is truly
// its own (its flags and config files, its stream, its quota).
type CLI struct {
	// Program is the command, how to find and install it; Program.Engine
	// is the engine's name.
	Program Program
	// Providers are the profile providers it can be pointed at; none: it
	// takes no profile (it brings its own model and login).
	Providers []string
	// Mismatch is added, in brackets, to the refusal of a profile whose
	// provider it does not speak: what it speaks, what to pick instead.
	Mismatch string
	// Pays is how a run of it is paid (default: by API).
	Pays protocol.Pays
	// OwnSandbox: its own sandbox is isolation sandbox (Codex's).
	OwnSandbox bool
	// Isolated: hub's sandbox can hold it whole at isolated (it calls its
	// model from inside, so never untrusted); NoLandlock says why it cannot
	// run under Landlock, when it cannot. Without Isolated it gets
	// worktree only.
	Isolated   bool
	NoLandlock string
	// ToolPrefix is how it names hub's worker tools to its model, for the
	// prompt ("" when they go by their own names).
	ToolPrefix string
	// Refuse refuses what it cannot do as asked, beyond what every CLI
	// engine refuses (nil: nothing more).
	Refuse func(spec protocol.StartParams) error
	// Launch starts it for a job whose program, profile and private home
	// are ready.
	Launch func(ctx context.Context, j *Job) (engine.Run, error)
}

// Endpoint is the job's profile as a CLI gets it.
type Endpoint struct {
	profile.Profile
	Key     string // the key ("" when the provider needs none)
	BaseURL string // the endpoint, the provider's default when unset
	Model   string // the model the job asked for, else the profile's
}

// Job is one job's run of a CLI, as Launch gets it.
type Job struct {
	Spec engine.Spec
	Endpoint
	// Path is the CLI's program.
	Path string
	// Home is the CLI's private home in the job's scratch folder, and Env
	// the job's worker environment moved there (see Home): the CLI's own
	// variables go after it.
	Home string
	Env  []string

	cli       *CLI
	configDir string
}

// Engine is an agent CLI engine made of a CLI. It is safe for concurrent use.
type Engine struct {
	cli CLI
	o   Options
}

// New returns the engine for c.
func New(c CLI, o Options) *Engine {
	if c.Pays == "" {
		c.Pays = protocol.PaysAPI
	}
	return &Engine{cli: c, o: o}
}

func (e *Engine) Name() string { return e.cli.Program.Engine }

func (e *Engine) Capabilities() protocol.EngineCapabilities {
	c := protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree}, ReadOnly: true, Pays: e.cli.Pays}
	if e.cli.OwnSandbox {
		engine.AddOwnSandboxLevel(&c)
	}
	if e.cli.Isolated {
		engine.AddIsolatedLevel(&c, e.cli.Program.Product, e.cli.NoLandlock)
	} else {
		c.IsolationWhyNot = map[protocol.Isolation]string{
			protocol.IsolationIsolated:  e.cli.Program.Product + " is not proven to run inside hub's sandbox; hub gives it worktree only",
			protocol.IsolationUntrusted: e.cli.Program.Product + " is not proven to run inside hub's sandbox; hub gives it worktree only",
		}
	}
	return c
}

func (e *Engine) Probe(ctx context.Context) engine.Availability { return e.cli.Program.Probe(ctx) }

func (e *Engine) Check(spec protocol.StartParams) error {
	if err := e.cli.Program.Check(spec); err != nil {
		return err
	}
	if e.cli.Refuse != nil {
		if err := e.cli.Refuse(spec); err != nil {
			return err
		}
	}
	_, err := e.endpoint(spec)
	return err
}

// endpoint resolves the job's profile for the CLI, refusing one whose
// provider it cannot speak.
func (e *Engine) endpoint(spec protocol.StartParams) (Endpoint, error) {
	if len(e.cli.Providers) == 0 {
		if spec.Profile != "" {
			return Endpoint{}, fmt.Errorf("the %s engine takes no profile (the agent brings its own model and login); drop profile", e.Name())
		}
		return Endpoint{Model: spec.Model}, nil
	}
	p, key, err := Profile(e.o.ConfigDir, spec.Profile, e.cli.Providers...)
	if err != nil {
		if e.cli.Mismatch != "" && p.Name != "" && !slices.Contains(e.cli.Providers, p.Provider) {
			err = fmt.Errorf("%v (%s)", err, e.cli.Mismatch)
		}
		return Endpoint{}, err
	}
	m := p.Model
	if spec.Model != "" {
		m = spec.Model
	}
	return Endpoint{Profile: p, Key: key, BaseURL: BaseURL(p), Model: m}, nil
}

// Start finds the CLI, resolves the job's profile, makes its private home,
// and launches it.
func (e *Engine) Start(ctx context.Context, spec engine.Spec) (engine.Run, error) {
	path, err := Find(e.cli.Program.Binary, e.cli.Program.PathEnv)
	if err != nil {
		return nil, err
	}
	ep, err := e.endpoint(spec.Params)
	if err != nil {
		return nil, err
	}
	home, env, err := Home(spec)
	if err != nil {
		return nil, err
	}
	return e.cli.Launch(ctx, &Job{Spec: spec, Endpoint: ep, Path: path, Home: home, Env: env, cli: &e.cli, configDir: e.o.ConfigDir})
}

// Prompt is the job's task as the CLI gets it, in one prompt.
func (j *Job) Prompt() string { return Prompt(j.Spec, j.cli.ToolPrefix) }

// Pricing is how the job's tokens are priced (by hub's table, unless the
// CLI takes no profile), and what the hub records as the command it ran.
func (j *Job) Pricing(describe string) Pricing {
	pr := Pricing{Model: j.Model, Describe: describe}
	if j.Profile.Name != "" {
		pr.Price = Pricer(j.configDir, j.Profile)
	}
	return pr
}

// Run starts inv, a CLI that streams its events, with the job's program,
// model and pricing; command is what the hub records it ran (without the
// prompt), with the product, profile and model added.
func (j *Job) Run(ctx context.Context, command string, inv Invocation) (engine.Run, error) {
	pr := j.Pricing(fmt.Sprintf("%s (%s, profile %s, model %s)", command, j.cli.Program.Product, j.Profile.Name, j.Model))
	inv.Path, inv.Model, inv.Price, inv.Describe = j.Path, pr.Model, pr.Price, pr.Describe
	return Start(ctx, j.Spec, inv)
}
