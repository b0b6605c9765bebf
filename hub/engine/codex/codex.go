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
type Options = agentcli.Options

// New returns the engine.
func New(o Options) *agentcli.Engine { return agentcli.New(cli, o) }

const install = "npm install -g @openai/codex"

// cli is Codex as hub runs it: on the OpenAI Responses API (an openai
// profile whose endpoint serves it, or ollama), in its own sandbox
// (workspace-write) for isolation sandbox and its read-only one for a read
// job, or whole inside hub's at isolated.
var cli = agentcli.CLI{
	Program:    agentcli.Program{Engine: Name, Binary: "codex", PathEnv: PathEnv, Product: "Codex", Install: install},
	Providers:  []string{profile.OpenAI, profile.Ollama},
	Mismatch:   "Codex speaks only the OpenAI Responses API, POST /v1/responses: an openai profile whose endpoint serves it, or ollama",
	OwnSandbox: true,
	Isolated:   true,
	Refuse:     refuse,
	Launch:     launch,
}

// refuse refuses what Codex cannot do as asked: a turn limit, an effort it
// does not know.
func refuse(spec protocol.StartParams) error {
	if spec.MaxTurns > 0 {
		return errors.New("Codex has no turn limit, so the codex engine cannot enforce max_turns; drop it and bound the job with max_usd and timeout_s, or pick an engine that counts turns")
	}
	if spec.Effort != "" && !slices.Contains(protocol.Efforts, spec.Effort) {
		return fmt.Errorf("effort %q is not one of %s", spec.Effort, strings.Join(protocol.Efforts, ", "))
	}
	return nil
}

// launch runs `codex exec --json` with a CODEX_HOME of the job's own.
func launch(ctx context.Context, j *agentcli.Job) (engine.Run, error) {
	spec := j.Spec
	codexHome := filepath.Join(spec.Scratch, "codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return nil, err
	}
	env := append(j.Env, "CODEX_HOME="+codexHome)
	if j.Key != "" {
		env = append(env, keyEnv+"="+j.Key)
	}
	cfg := config{
		Profile: j.Name, Model: j.Model, BaseURL: j.BaseURL, KeyEnv: keyEnv, Effort: spec.Params.Effort,
		ReadOnly: spec.Params.Kind == protocol.KindRead, Home: j.Home, Fenced: engine.Sandboxed(spec.Params.Isolation),
		Worker: agentcli.Worker(spec), ToolTimeoutS: int64(agentcli.ToolTimeout(spec).Seconds()),
	}
	if j.Key == "" {
		cfg.KeyEnv = ""
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg.toml()), 0o600); err != nil {
		return nil, err
	}
	r, err := j.Run(ctx, "codex exec --json", agentcli.Invocation{
		Args:   args(spec.Dir, j.Prompt()),
		Env:    env,
		Parse:  newParser(spec.Dir),
		Resume: func(session, prompt string) []string { return resumeArgs(spec.Dir, session, prompt) },
	})
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
