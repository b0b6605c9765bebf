// Package opencode is the opencode engine: OpenCode run headless as a job's
// worker (`opencode run --format json`), on the OpenAI-compatible endpoint,
// model and key of the job's profile, with a config home of its own and
// hub's worker MCP server as its line to the supervisor. It must never read
// or write the user's own OpenCode setup, nor let OpenCode reach anything
// but the profile's endpoint in a run.
//
// OpenCode is configured by one opencode.json in its private config folder:
// a provider "hub" on the bundled @ai-sdk/openai-compatible package (the key
// comes in through the environment, "{env:…}", never written to disk), the
// worker MCP server as local server "hub" (its tools are hub_<tool>), the
// job's permissions, and the title agent turned off (it would cost a model
// call per run). The project's own OpenCode config is ignored (it could
// change the model, the permissions, or install plugins from npm); its
// AGENTS.md is handed over as an instruction instead.
package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
)

// Name is the engine's name.
const Name = "opencode"

// PathEnv overrides where the opencode binary is.
const PathEnv = "HUB_OPENCODE"

// keyEnv carries the profile's key to OpenCode's config ("{env:…}").
const keyEnv = "HUB_OPENCODE_API_KEY"

// providerID is the provider hub writes into OpenCode's config.
const providerID = "hub"

// Options configure the engine.
type Options = agentcli.Options

// New returns the engine.
func New(o Options) *agentcli.Engine { return agentcli.New(cli, o) }

// cli is OpenCode as hub runs it: handed one OpenAI-compatible Chat
// Completions endpoint (so only openai and ollama profiles do), whole
// inside hub's sandbox at isolated but for Landlock, with hub's tools as
// hub_<tool>.
var cli = agentcli.CLI{
	Program: agentcli.Program{Engine: Name, Binary: "opencode", PathEnv: PathEnv, Product: "OpenCode",
		Install: "npm install -g opencode-ai"},
	Providers: []string{profile.OpenAI, profile.Ollama},
	Mismatch: "hub runs OpenCode through its OpenAI-compatible provider, which speaks Chat Completions only; " +
		"for an anthropic profile pick the claude engine",
	Isolated:   true,
	NoLandlock: "OpenCode (a Bun program) aborts without /proc, which Landlock keeps from it",
	ToolPrefix: "hub_",
	Launch:     launch,
}

// launch runs `opencode run --format json` with the prompt on stdin and
// its config in the private home.
func launch(ctx context.Context, j *agentcli.Job) (engine.Run, error) {
	spec, env := j.Spec, j.Env
	// The user's own OPENCODE_* settings (another config, permissions,
	// a server to attach to) must not reach the worker.
	kept := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENCODE_") && !strings.HasPrefix(kv, keyEnv+"=") {
			kept = append(kept, kv)
		}
	}
	env = append(kept,
		"OPENCODE_DISABLE_MODELS_FETCH=1",   // no models.dev catalogue
		"OPENCODE_DISABLE_AUTOUPDATE=1",     // no update check
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",   // no language servers fetched
		"OPENCODE_DISABLE_SHARE=1",          // no session sharing
		"OPENCODE_DISABLE_PROJECT_CONFIG=1", // the repo's opencode.json and .opencode/ are not ours to run
	)
	if j.Key != "" {
		// OpenCode puts the variable's value into the config's text before
		// it reads the JSON: it goes there escaped.
		q, _ := json.Marshal(j.Key)
		env = append(env, keyEnv+"="+string(q[1:len(q)-1]))
	}
	rg := onPath("rg", env)
	if !rg && spec.Output != nil {
		fmt.Fprintln(spec.Output, "[hub] rg (ripgrep) is not on PATH: OpenCode's grep and glob tools are off, "+
			"for OpenCode would download ripgrep from GitHub to run them; install ripgrep to have them")
	}
	cfgDir := filepath.Join(j.Home, ".config", "opencode")
	if err := writeConfig(cfgDir, config(spec, j.Provider, j.BaseURL, j.Model, j.Key != "", rg)); err != nil {
		return nil, err
	}
	flags := []string{"run", "--format", "json", "--model", providerID + "/" + j.Model}
	return j.Run(ctx, "opencode run --format json", agentcli.Invocation{
		Args:  flags,
		Env:   env,
		Stdin: j.Prompt(),
		Parse: newParser(),
		Resume: func(session, _ string) []string {
			return append(append([]string{}, flags...), "--session", session)
		},
		ResumeStdin: true,
	})
}

// config is OpenCode's opencode.json for the job.
func config(spec engine.Spec, provider, baseURL, m string, withKey, rg bool) map[string]any {
	options := map[string]any{"baseURL": baseURL}
	if withKey {
		options["apiKey"] = "{env:" + keyEnv + "}"
	}
	w := agentcli.Worker(spec)
	// bash and edit (which covers write and patch) are what a write job
	// needs without asking: OpenCode run rejects every "ask". A read job
	// gets neither; OpenCode then does not offer them at all. No job
	// fetches from the web (the claude engine allows no web tool either),
	// and without ripgrep on PATH grep and glob are off: OpenCode would
	// download it.
	perm := map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny", "websearch": "deny"}
	if spec.Params.Kind == protocol.KindRead {
		perm["edit"], perm["bash"] = "deny", "deny"
	}
	if !rg {
		perm["grep"], perm["glob"] = "deny", "deny"
	}
	agents := map[string]any{"title": map[string]any{"disable": true}}
	if spec.Params.MaxTurns > 0 {
		agents["build"] = map[string]any{"steps": spec.Params.MaxTurns}
	}
	cfg := map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"model":             providerID + "/" + m,
		"small_model":       providerID + "/" + m,
		"enabled_providers": []string{providerID},
		"autoupdate":        false,
		"share":             "disabled",
		"snapshot":          false, // no shadow git copy of the worktree: hub keeps the history
		"provider": map[string]any{providerID: map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "hub (" + provider + ")",
			"options": options,
			"models":  map[string]any{m: map[string]any{"name": m, "tool_call": true}},
		}},
		"mcp": map[string]any{"hub": map[string]any{
			"type":        "local",
			"command":     append([]string{w.Command}, w.Args...),
			"environment": w.Env,
			"enabled":     true,
			// A question waits for its reply; OpenCode's default is 60 s.
			"timeout": agentcli.ToolTimeout(spec).Milliseconds(),
		}},
		"permission": perm,
		"agent":      agents,
	}
	if in := instructions(spec.Dir); len(in) > 0 {
		cfg["instructions"] = in
	}
	return cfg
}

// writeConfig writes the config into OpenCode's config folder, which it
// also treats as a package folder: it installs @opencode-ai/plugin there
// from npm, in the background of every run, unless node_modules exists and
// package-lock.json already lists the package.
func writeConfig(dir string, cfg map[string]any) error {
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return err
	}
	lock := `{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock), 0o600); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "opencode.json"), append(b, '\n'), 0o600)
}

// instructions are the project's instruction files as OpenCode itself
// would find them (the first of AGENTS.md, CLAUDE.md, CONTEXT.md found from
// dir up to the repository's top), for it reads none with the project
// config off.
func instructions(dir string) []string {
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", "CONTEXT.md"} {
		var found []string
		for d := dir; ; d = filepath.Dir(d) {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
				found = append(found, filepath.Join(d, name))
			}
			if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || filepath.Dir(d) == d {
				break
			}
		}
		if len(found) > 0 {
			return found
		}
	}
	return nil
}

// onPath reports whether name is a program on env's PATH, as OpenCode
// looks for it.
func onPath(name string, env []string) bool {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}
