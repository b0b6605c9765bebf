// Package acp runs any agent that speaks the Agent Client Protocol (JSON-RPC
// over stdio: initialize, session/new, session/prompt, streamed
// session/update, session/request_permission, session/cancel) as a job's
// worker. Gemini CLI, Qwen Code, OpenCode, Kimi Code, Copilot CLI, Goose and
// others speak it natively; one engine here makes each of them a worker,
// and adding one a few lines of configuration ([Agent], or an "agents" entry
// in hub's config.json).
//
// The agent runs in the job's worktree, in a process group of its own, with
// a config home of its own (as the CLI engines do), and gets hub's worker
// MCP server in session/new, so ask_supervisor, report_progress and
// report_blocker work as for every engine. Its updates become the job's
// progress, the commands and tool calls the hub observed, tokens and cost;
// an update hub does not know is logged, never fatal. Its permission
// requests are answered by policy: the job's kind and the worktree decide,
// and nothing is allowed silently outside the worktree. Steering is a new
// prompt turn (when the agent finished its turn) or a cancel-and-continue
// (while it works). Stop is session/cancel, then the process group.
//
// This package must never let an agent outlive Stop, wait on an agent that
// does not answer without bound, nor report a cost it did not read or price.
package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
)

// Agent is one ACP agent program and how hub runs it.
type Agent struct {
	// Program names the command, the variable that overrides where it is,
	// and how to install it.
	Program agentcli.Program
	// Args start its ACP mode (e.g. --acp).
	Args []string
	// Providers are the profile providers it can be pointed at; none means
	// it takes no profile (it brings its own model and login).
	Providers []string
	// Env is what the agent gets from the job's profile (its key, endpoint
	// and model, under the agent's own variable names). Nil: nothing.
	Env func(c Profile) []string
	// Prepare writes the agent's own files into its private home before
	// it starts (its settings). Nil: nothing.
	Prepare func(home string, spec engine.Spec, c Profile) error
	// Auth are the authenticate methods hub calls, the first the agent
	// offers, when the agent asks for a login (with the key in its
	// environment, an API-key method).
	Auth []string
	// ToolPrefix is how the agent names hub's worker tools to its model,
	// for the prompt ("" when they go by their own names).
	ToolPrefix string
	// Isolated: hub's sandbox can hold it whole at isolated (it calls its
	// model from inside, so never untrusted). Only for an agent proven to
	// run there; worktree is always given.
	Isolated bool
	// Pays is how a run of it is paid (default: by API).
	Pays protocol.Pays
}

// Profile is the job's profile as an agent's Env and Prepare see it.
type Profile = agentcli.Endpoint

// Options configure the engine.
type Options struct {
	// ConfigDir holds hub's profiles, env and prices (required).
	ConfigDir string
	// StartTimeout bounds how long the agent may take to answer initialize,
	// authenticate and session/new, each (default 90 s).
	StartTimeout time.Duration
}

// New returns the engine called name for a: an agent CLI engine (see
// agentcli.CLI) that speaks ACP to its agent.
func New(name string, a Agent, o Options) *agentcli.Engine {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 90 * time.Second
	}
	a.Program.Engine = name
	return agentcli.New(agentcli.CLI{
		Program: a.Program, Providers: a.Providers, Pays: a.Pays, Isolated: a.Isolated, ToolPrefix: a.ToolPrefix,
		Launch: func(ctx context.Context, j *agentcli.Job) (engine.Run, error) {
			return launchAgent(ctx, a, j, o.StartTimeout)
		},
	}, agentcli.Options{ConfigDir: o.ConfigDir})
}

// launchAgent starts a's ACP mode for the job: its variables from the
// profile, its settings written into its private home.
func launchAgent(ctx context.Context, a Agent, j *agentcli.Job, timeout time.Duration) (engine.Run, error) {
	env := j.Env
	if a.Env != nil {
		env = append(env, a.Env(j.Endpoint)...)
	}
	if a.Prepare != nil {
		if err := a.Prepare(j.Home, j.Spec, j.Endpoint); err != nil {
			return nil, fmt.Errorf("prepare %s's settings: %w", a.Program.Product, err)
		}
	}
	describe := strings.TrimSpace(fmt.Sprintf("%s %s (%s over ACP", a.Program.Binary, strings.Join(a.Args, " "), a.Program.Product))
	if j.Name != "" {
		describe += fmt.Sprintf(", profile %s, model %s", j.Name, j.Model)
	}
	describe += ")"
	return start(ctx, j.Spec, launch{
		path:    j.Path,
		args:    a.Args,
		env:     env,
		auth:    a.Auth,
		prompt:  j.Prompt(),
		pricing: j.Pricing(describe),
		timeout: timeout,
	})
}

// FromConfig is the agent a user defined in config.json: the program, its
// arguments, the provider its profile must be, and the variables it gets,
// with {key}, {base_url} and {model} taken from the job's profile.
func FromConfig(name string, c config.Agent) Agent {
	install := c.Install
	if install == "" {
		install = "the command of config.json's agents." + name
	}
	a := Agent{
		Program: agentcli.Program{Binary: c.Command, Product: name, Install: install, Unversioned: true},
		Args:    c.Args,
		Auth:    c.Auth,
		Pays:    protocol.Pays(c.Pays),
	}
	if c.Provider != "" {
		a.Providers = []string{c.Provider}
	}
	if len(c.Env) > 0 {
		env := c.Env
		a.Env = func(p Profile) []string {
			r := strings.NewReplacer("{key}", p.Key, "{base_url}", p.BaseURL, "{model}", p.Model)
			out := make([]string, 0, len(env))
			for k, v := range env {
				out = append(out, k+"="+r.Replace(v))
			}
			sort.Strings(out)
			return out
		}
	}
	return a
}

// WriteSettings writes an agent's settings file (JSON, indented, mode
// 0600) into its private home, making its folder: what an Agent's Prepare
// does.
func WriteSettings(path string, settings map[string]any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
