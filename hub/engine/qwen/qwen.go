// Package qwen is the qwen engine: Qwen Code (`qwen --acp`) as a job's
// worker over the Agent Client Protocol, on the OpenAI-compatible endpoint,
// model and key of the job's profile, with a settings folder of its own and
// hub's worker MCP server as its line to the supervisor. It must never read
// or write the user's own Qwen Code setup (~/.qwen), nor log into Qwen's
// OAuth service.
package qwen

import (
	"path/filepath"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/acp"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
)

// Name is the engine's name.
const Name = "qwen"

// PathEnv overrides where the qwen binary is.
const PathEnv = "HUB_QWEN"

// Agent is Qwen Code as an ACP agent.
func Agent() acp.Agent {
	return acp.Agent{
		Program: agentcli.Program{Binary: "qwen", PathEnv: PathEnv, Product: "Qwen Code", Install: "npm install -g @qwen-code/qwen-code"},
		// The OpenAI-compatible provider, whatever the user's own settings
		// choose; the model comes from the environment.
		Args:       []string{"--acp", "--auth-type", "openai"},
		Providers:  []string{profile.OpenAI, profile.Ollama},
		Env:        env,
		Prepare:    prepare,
		Auth:       []string{"openai"},
		Isolated:   true,
		ToolPrefix: "mcp__hub__",
	}
}

// New returns the engine.
func New(configDir string) *agentcli.Engine {
	return acp.New(Name, Agent(), acp.Options{ConfigDir: configDir})
}

// env points Qwen Code at the profile's endpoint. An endpoint that takes no
// key (Ollama) still gets one: Qwen Code refuses to start without. MCP
// servers are connected before the session opens, not in the background:
// else the model's first request goes out without hub's worker tools.
func env(c acp.Profile) []string {
	key := c.Key
	if key == "" {
		key = "no-key"
	}
	return []string{"OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + c.BaseURL, "OPENAI_MODEL=" + c.Model, "QWEN_CODE_LEGACY_MCP_BLOCKING=1"}
}

// hubTools are hub's worker tools as Qwen Code names them: declared to the
// model from the first request (Qwen defers MCP tools behind its
// tool_search otherwise, and the prompt names them).
var hubTools = []string{"mcp__hub__ask_supervisor", "mcp__hub__report_progress", "mcp__hub__report_blocker"}

// prepare writes Qwen Code's user settings into the private home: commands
// run without a pseudo-terminal (a worker has no one to type into one, and
// Landlock denies /dev/ptmx), every tool call asks hub (Qwen's default "auto" mode asks a model instead, a
// side call per command), a read job plans only, no memory extraction or
// "dream" subagents and no follow-up suggestions (model calls of their own
// after every turn), no
// telemetry, usage statistics or update check, no sleep inhibitor (a D-Bus
// call to systemd).
func prepare(home string, spec engine.Spec, c acp.Profile) error {
	mode := "default"
	if spec.Params.Kind == protocol.KindRead {
		mode = "plan"
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": false}},
		"model":     map[string]any{"name": c.Model},
		"tools":     map[string]any{"approvalMode": mode, "visible": hubTools, "shell": map[string]any{"enableInteractiveShell": false}},
		"memory":    map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false, "enableAutoSkill": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "preventSystemSleep": false},
		"ui":        map[string]any{"enableFollowupSuggestions": false},
	}
	return acp.WriteSettings(filepath.Join(home, ".qwen", "settings.json"), settings)
}
