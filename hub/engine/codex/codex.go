// Package codex is the codex engine: OpenAI's Codex CLI run headless as a
// job's worker (`codex exec --json`), on the endpoint, model and key of the
// job's profile, with a config home of its own (CODEX_HOME in the job's
// scratch folder) and hub's worker MCP server as its line to the
// supervisor. Codex's own sandbox confines the worker's commands: they may
// write in the worktree and the worker's private home only (nothing at all
// for a read job), which is what isolation sandbox promises.
//
// After a run it reads the rate limits Codex recorded in the job's
// CODEX_HOME into the outcome (LocalQuota, which also reads them from the
// user's own Codex home for the daemon).
//
// It must never write the user's own Codex setup (nor read it, but for
// LocalQuota), and never write a key into a file: the config names the
// variable that carries it.
package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/tomltext"
)

// Name is the engine's name.
const Name = "codex"

// PathEnv overrides where the codex binary is.
const PathEnv = "HUB_CODEX"

// keyEnv is the variable the CLI reads the profile's key from. Codex keeps
// variables whose name holds KEY out of its commands' environment only when
// told to: the config says so.
const keyEnv = "HUB_CODEX_API_KEY"

// Retries of one model request, and of a stream that broke; Codex makes up
// to (1+requestRetries)×(1+streamRetries) attempts, then fails the turn.
const (
	requestRetries = 2
	streamRetries  = 2
)

// Options configure the engine.
type Options struct {
	// ConfigDir holds hub's profiles, env and prices (required).
	ConfigDir string
}

// Engine is the codex engine. It is safe for concurrent use.
type Engine struct{ o Options }

// New returns the engine.
func New(o Options) *Engine { return &Engine{o: o} }

func (*Engine) Name() string { return Name }

// Capabilities: Codex's own sandbox (workspace-write) is what isolation
// sandbox asks for; a read job runs in its read-only sandbox.
func (*Engine) Capabilities() protocol.EngineCapabilities {
	c := protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree}, ReadOnly: true, Pays: protocol.PaysAPI}
	engine.AddOwnSandboxLevel(&c)
	engine.AddIsolatedLevel(&c, "Codex", "")
	return c
}

const install = "npm install -g @openai/codex"

// program is Codex, for the checks every CLI engine makes.
var program = agentcli.Program{Engine: Name, Binary: "codex", PathEnv: PathEnv, Product: "Codex", Install: install}

func (e *Engine) Probe(ctx context.Context) engine.Availability { return program.Probe(ctx) }

// Check refuses what Codex cannot do as asked: a turn limit, an effort it
// does not know.
func (e *Engine) Check(spec protocol.StartParams) error {
	if err := program.Check(spec); err != nil {
		return err
	}
	if spec.MaxTurns > 0 {
		return errors.New("Codex has no turn limit, so the codex engine cannot enforce max_turns; drop it and bound the job with max_usd and timeout_s, or pick an engine that counts turns")
	}
	if spec.Effort != "" && !slices.Contains(protocol.Efforts, spec.Effort) {
		return fmt.Errorf("effort %q is not one of %s", spec.Effort, strings.Join(protocol.Efforts, ", "))
	}
	_, _, err := e.profile(spec.Profile)
	return err
}

// profile resolves the job's profile: Codex speaks only the OpenAI
// Responses API, to an OpenAI-compatible endpoint or a local Ollama.
func (e *Engine) profile(name string) (profile.Profile, string, error) {
	p, key, err := agentcli.Profile(e.o.ConfigDir, name, profile.OpenAI, profile.Ollama)
	if err != nil && p.Name != "" && p.Provider != profile.OpenAI && p.Provider != profile.Ollama {
		return p, "", fmt.Errorf("%v (Codex speaks only the OpenAI Responses API, POST /v1/responses: an openai profile whose endpoint serves it, or ollama)", err)
	}
	return p, key, err
}

func (e *Engine) Start(ctx context.Context, spec engine.Spec) (engine.Run, error) {
	path, err := agentcli.Find("codex", PathEnv)
	if err != nil {
		return nil, err
	}
	p, key, err := e.profile(spec.Params.Profile)
	if err != nil {
		return nil, err
	}
	m := p.Model
	if spec.Params.Model != "" {
		m = spec.Params.Model
	}
	codexHome := filepath.Join(spec.Scratch, "codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return nil, err
	}
	extra := []string{"CODEX_HOME=" + codexHome}
	if key != "" {
		extra = append(extra, keyEnv+"="+key)
	}
	home, env, err := agentcli.Home(spec, extra...)
	if err != nil {
		return nil, err
	}
	cfg := config{
		Profile: p.Name, Model: m, BaseURL: agentcli.BaseURL(p), KeyEnv: keyEnv, Effort: spec.Params.Effort,
		ReadOnly: spec.Params.Kind == protocol.KindRead, Home: home, Fenced: engine.Sandboxed(spec.Params.Isolation),
		Worker: agentcli.Worker(spec), ToolTimeoutS: int64(agentcli.ToolTimeout(spec).Seconds()),
	}
	if key == "" {
		cfg.KeyEnv = ""
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg.toml()), 0o600); err != nil {
		return nil, err
	}
	inv := agentcli.Invocation{
		Path:     path,
		Args:     args(spec.Dir, agentcli.Prompt(spec, "")),
		Env:      env,
		Parse:    newParser(spec.Dir),
		Resume:   func(session, prompt string) []string { return resumeArgs(spec.Dir, session, prompt) },
		Model:    m,
		Price:    agentcli.Pricer(e.o.ConfigDir, p),
		Describe: fmt.Sprintf("codex exec --json (Codex, profile %s, model %s)", p.Name, m),
	}
	r, err := agentcli.Start(ctx, spec, inv)
	if err != nil {
		return nil, err
	}
	return run{Run: r, codexHome: codexHome, log: spec.Output}, nil
}

// common are the options of every run. The session is kept on disk (no
// --ephemeral): resume reads it back. --strict-config makes a key this
// Codex does not know an error, not a setting silently dropped (a sandbox
// quietly wider than hub wrote).
func common(dir string) []string {
	return []string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "-C", dir}
}

func args(dir, prompt string) []string {
	return append(common(dir), "--", prompt)
}

func resumeArgs(dir, session, prompt string) []string {
	return append(common(dir), "resume", "--", session, prompt)
}

// config is what the worker's config.toml says.
type config struct {
	Profile, Model, BaseURL string
	// KeyEnv names the variable carrying the key ("" when there is none).
	KeyEnv   string
	Effort   string
	ReadOnly bool
	// Fenced: hub's sandbox (bubblewrap) already fences Codex in. Codex's
	// own sandbox, bubblewrap too, cannot nest inside it, so it is off.
	Fenced bool
	// Home is the worker's private home, writable by its commands.
	Home         string
	Worker       agentcli.WorkerMCP
	ToolTimeoutS int64
}

// toml renders the config, through tomltext (hub install's writer too).
// Everything Codex would otherwise fetch, phone home for or wait on
// forever is turned off: analytics and plugins (they resolve chatgpt.com
// and github.com), unbounded reconnects.
func (c config) toml() string {
	var b strings.Builder
	kv := func(k string, v any) { b.WriteString(tomltext.KeyValue(k, v)) }
	b.WriteString("# Written by hub for one job. The key is not here: Codex reads it from $" + keyEnv + ".\n")
	kv("model", c.Model)
	kv("model_provider", "hub")
	kv("approval_policy", "never")
	switch {
	case c.Fenced:
		kv("sandbox_mode", "danger-full-access")
	case c.ReadOnly:
		kv("sandbox_mode", "read-only")
	default:
		kv("sandbox_mode", "workspace-write")
	}
	if c.Effort != "" {
		kv("model_reasoning_effort", c.Effort)
	}
	kv("check_for_update_on_startup", false)
	// A login shell (Codex's default, bash -lc) reads /etc/profile, which
	// on Debian resets PATH: the worker would lose hub and the toolchains.
	kv("allow_login_shell", false)

	b.WriteString("\n" + tomltext.Header("model_providers", "hub"))
	kv("name", "hub profile "+c.Profile)
	kv("base_url", c.BaseURL)
	kv("wire_api", "responses")
	if c.KeyEnv != "" {
		kv("env_key", c.KeyEnv)
	}
	kv("request_max_retries", requestRetries)
	kv("stream_max_retries", streamRetries)

	// Commands may write the worktree (Codex's cwd) and the private home
	// (its caches and TMPDIR), and nothing else: not /tmp, not the config.
	b.WriteString("\n" + tomltext.Header("sandbox_workspace_write"))
	kv("writable_roots", []string{c.Home})
	kv("exclude_slash_tmp", true)
	kv("network_access", true)

	b.WriteString("\n" + tomltext.Header("shell_environment_policy"))
	kv("exclude", []string{keyEnv})

	b.WriteString("\n" + tomltext.Header("mcp_servers", "hub"))
	kv("command", c.Worker.Command)
	kv("args", c.Worker.Args)
	kv("env", c.Worker.Env)
	kv("required", true)
	kv("default_tools_approval_mode", "approve")
	kv("startup_timeout_sec", 30)
	kv("tool_timeout_sec", c.ToolTimeoutS)

	b.WriteString("\n" + tomltext.Header("analytics"))
	kv("enabled", false)

	b.WriteString("\n" + tomltext.Header("features"))
	kv("plugins", false)
	kv("unbounded_connection_retries", false)
	return b.String()
}
