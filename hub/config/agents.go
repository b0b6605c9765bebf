package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hub-agents/hub/router"
)

// Agent is a user-defined ACP agent: an "agents" entry of config.json,
// which makes `engine: <name>` run it (see hub/engine/acp).
//
//	"agents": {
//	  "kimi": {"command": "kimi", "args": ["acp"], "provider": "openai",
//	           "env": {"KIMI_API_KEY": "{key}", "KIMI_BASE_URL": "{base_url}", "KIMI_MODEL_NAME": "{model}"}}
//	}
type Agent struct {
	// Command is the program: a name on PATH or a path.
	Command string `json:"command"`
	// Args start its ACP mode.
	Args []string `json:"args,omitempty"`
	// Provider is the provider family the job's profile must be (openai,
	// anthropic, gemini, ollama); empty when the agent takes no profile
	// (it brings its own model and login).
	Provider string `json:"provider,omitempty"`
	// Env are variables set for it. A value may hold {key}, {base_url} and
	// {model}: the profile's key, endpoint and model.
	Env map[string]string `json:"env,omitempty"`
	// Auth are the ACP authenticate methods hub uses, the first the agent
	// offers, when it asks for a login.
	Auth []string `json:"auth,omitempty"`
	// Install says how to install it, for the refusal when it is missing.
	Install string `json:"install,omitempty"`
	// Pays is how its runs are paid: api (the default: each job books its
	// budget, and an unknown cost charges it whole), subscription, or free
	// (no money booked: a local model, a plan you do not count per job).
	Pays string `json:"pays,omitempty"`
}

var (
	agentNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	envNameRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeholder = regexp.MustCompile(`\{[^{}]*\}`)
)

// AgentPlaceholders are what an agent's env values may name.
var AgentPlaceholders = []string{"{key}", "{base_url}", "{model}"}

// checkAgents says what is wrong with the agents of config.json file,
// given the providers a profile may name and the engines hub has built in.
func checkAgents(agents map[string]Agent, file string) error {
	names := make([]string, 0, len(agents))
	for n := range agents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := agents[n]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("config %s: agents.%s: %s; fix it", file, n, fmt.Sprintf(format, args...))
		}
		if !agentNameRe.MatchString(n) {
			return bad("name it with 1-32 lower-case letters, digits or '-', starting with a letter")
		}
		if n == router.Auto || slices.Contains(router.DefaultOrder, n) {
			return bad("%s is one of hub's own engines; give the agent another name", n)
		}
		if strings.TrimSpace(a.Command) == "" {
			return bad(`"command" is empty: name the program that speaks ACP`)
		}
		if a.Provider != "" && !agentProviders[a.Provider] {
			return bad("provider %q is not one of openai, anthropic, gemini, ollama (leave it out for an agent that brings its own login)", a.Provider)
		}
		switch a.Pays {
		case "", "api", "subscription", "free":
		default:
			return bad(`pays %q is not one of api, subscription, free`, a.Pays)
		}
		for k, v := range a.Env {
			if !envNameRe.MatchString(k) {
				return bad("env %q is not a variable name", k)
			}
			for _, p := range placeholder.FindAllString(v, -1) {
				if p != "{key}" && p != "{base_url}" && p != "{model}" {
					return bad("env %s names %s; a value may name %s", k, p, strings.Join(AgentPlaceholders, ", "))
				}
				if a.Provider == "" {
					return bad("env %s names %s, but the agent has no provider to take it from; set provider", k, p)
				}
			}
		}
	}
	return nil
}

// agentProviders are the profile providers an agent may ask for.
var agentProviders = map[string]bool{"openai": true, "anthropic": true, "gemini": true, "ollama": true}
