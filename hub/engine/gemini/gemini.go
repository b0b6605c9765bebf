// Package gemini is the gemini engine: Gemini CLI (`gemini --acp`) as a
// job's worker over the Agent Client Protocol, on the Gemini API endpoint,
// model and key of the job's profile (provider gemini), with a settings
// folder of its own and hub's worker MCP server as its line to the
// supervisor. It must never read or write the user's own Gemini CLI setup
// (~/.gemini), nor log into Google's OAuth.
package gemini

import (
	"path/filepath"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/acp"
	"github.com/hub-agents/hub/hub/engine/agentcli"
)

// Name is the engine's name.
const Name = "gemini"

// PathEnv overrides where the gemini binary is.
const PathEnv = "HUB_GEMINI"

// Agent is Gemini CLI as an ACP agent.
func Agent() acp.Agent {
	return acp.Agent{
		Program:    agentcli.Program{Binary: "gemini", PathEnv: PathEnv, Product: "Gemini CLI", Install: "npm install -g @google/gemini-cli"},
		Args:       []string{"--acp"},
		Providers:  []string{profile.Gemini},
		Env:        env,
		Prepare:    prepare,
		Auth:       []string{"gemini-api-key"},
		Isolated:   true,
		ToolPrefix: "mcp_hub_",
	}
}

// New returns the engine.
func New(configDir string) *agentcli.Engine {
	return acp.New(Name, Agent(), acp.Options{ConfigDir: configDir})
}

// env points Gemini CLI at the profile's endpoint and key. The worktree is
// trusted (hub chose to work there): in an untrusted folder Gemini CLI
// starts no MCP server, hub's included.
func env(c acp.Profile) []string {
	return []string{"GEMINI_API_KEY=" + c.Key, "GOOGLE_GEMINI_BASE_URL=" + c.BaseURL, "GEMINI_MODEL=" + c.Model,
		"GEMINI_CLI_TRUST_WORKSPACE=true"}
}

// prepare writes Gemini CLI's user settings into the private home: the
// API-key login, the model fixed (its "auto" routing asks a model first), no
// loop-detection, next-speaker or edit-correction model calls, no usage
// statistics, telemetry, update check or IDE link, ripgrep as installed,
// commands without a pseudo-terminal (a worker has no one to type into
// one, and Landlock denies /dev/ptmx).
func prepare(home string, _ engine.Spec, c acp.Profile) error {
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"model":     map[string]any{"name": c.Model, "disableLoopDetection": true, "skipNextSpeakerCheck": true},
		"tools":     map[string]any{"disableLLMCorrection": true, "useRipgrep": false, "shell": map[string]any{"enableInteractiveShell": false}},
		"ide":       map[string]any{"enabled": false},
	}
	return acp.WriteSettings(filepath.Join(home, ".gemini", "settings.json"), settings)
}
