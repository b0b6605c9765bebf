package install

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Client is an agent CLI hub can be set up for.
type Client struct {
	Name    string // what --client takes: claude, codex, opencode, gemini, qwen
	Title   string // what people call it
	Command string // its executable
	Package string // the npm package it comes in
}

// The clients, in the order they are listed and checked.
var (
	Claude   = Client{Name: "claude", Title: "Claude Code", Command: "claude", Package: "@anthropic-ai/claude-code"}
	Codex    = Client{Name: "codex", Title: "Codex", Command: "codex", Package: "@openai/codex"}
	OpenCode = Client{Name: "opencode", Title: "OpenCode", Command: "opencode", Package: "opencode-ai"}
	Gemini   = Client{Name: "gemini", Title: "Gemini CLI", Command: "gemini", Package: "@google/gemini-cli"}
	Qwen     = Client{Name: "qwen", Title: "Qwen Code", Command: "qwen", Package: "@qwen-code/qwen-code"}
)

// Clients returns every client.
func Clients() []Client { return []Client{Claude, Codex, OpenCode, Gemini, Qwen} }

// Lookup returns the clients a --client value names: one, or all.
func Lookup(name string) ([]Client, error) {
	if name == "all" {
		return Clients(), nil
	}
	var names []string
	for _, c := range Clients() {
		if c.Name == name {
			return []Client{c}, nil
		}
		names = append(names, c.Name)
	}
	return nil, fmt.Errorf("unknown client %q; use one of %s, or all", name, strings.Join(names, ", "))
}

// Env is what install reads of the world: the home directory and the
// environment variables that move the clients' files.
type Env struct {
	Home   string
	Getenv func(string) string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Entry is what a client runs to reach hub: an MCP server on stdio.
type Entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// ServerName is the name hub's entry has in every client's config.
const ServerName = "hub"

// Codex cuts MCP calls off after 60 s and waits 10 s for a server to
// start unless the entry says otherwise; hub's wait blocks for minutes
// (300 s by default), and the first call may start the daemon.
const (
	codexToolTimeoutS    = 600
	codexStartupTimeoutS = 30
)

// ConfigFile is the file that holds the client's user-wide MCP servers.
func (c Client) ConfigFile(e Env) string {
	switch c.Name {
	case "claude":
		if d := e.getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, ".claude.json")
		}
		return filepath.Join(e.Home, ".claude.json")
	case "codex":
		return filepath.Join(codexHome(e), "config.toml")
	case "opencode":
		if f := e.getenv("OPENCODE_CONFIG"); f != "" {
			return f
		}
		// OpenCode merges config.json, opencode.json and opencode.jsonc,
		// the last winning; `opencode mcp add` writes opencode.jsonc.
		dir := openCodeDir(e)
		if _, err := os.Stat(filepath.Join(dir, "opencode.jsonc")); err == nil {
			return filepath.Join(dir, "opencode.jsonc")
		}
		return filepath.Join(dir, "opencode.json")
	case "gemini":
		return filepath.Join(geminiDir(e), "settings.json")
	case "qwen":
		return filepath.Join(qwenDir(e), "settings.json")
	}
	panic("install: unknown client " + c.Name)
}

// InstructionsFile is where the delegation skill goes: a skill file of its
// own (Claude Code, Gemini CLI, Qwen Code) or a block in the client's
// global AGENTS.md.
func (c Client) InstructionsFile(e Env) string {
	switch c.Name {
	case "claude":
		dir := filepath.Join(e.Home, ".claude")
		if d := e.getenv("CLAUDE_CONFIG_DIR"); d != "" {
			dir = d
		}
		return filepath.Join(dir, "skills", SkillName, "SKILL.md")
	case "codex":
		return filepath.Join(codexHome(e), "AGENTS.md")
	case "opencode":
		return filepath.Join(openCodeDir(e), "AGENTS.md")
	case "gemini":
		// Gemini CLI finds the user's skills in ~/.gemini/skills/*/SKILL.md
		// (and ~/.agents/skills, which it shares with other clients).
		return filepath.Join(geminiDir(e), "skills", SkillName, "SKILL.md")
	case "qwen":
		// Qwen Code: $QWEN_HOME/skills/*/SKILL.md (and ~/.agents/skills).
		return filepath.Join(qwenDir(e), "skills", SkillName, "SKILL.md")
	}
	panic("install: unknown client " + c.Name)
}

// ownsInstructions reports whether the instructions file is hub's alone
// (the skill file) rather than shared with the user (an AGENTS.md).
func (c Client) ownsInstructions() bool {
	return c.Name == "claude" || c.Name == "gemini" || c.Name == "qwen"
}

func codexHome(e Env) string {
	if d := e.getenv("CODEX_HOME"); d != "" {
		return d
	}
	return filepath.Join(e.Home, ".codex")
}

func openCodeDir(e Env) string {
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "opencode")
	}
	return filepath.Join(e.Home, ".config", "opencode")
}

// geminiDir is Gemini CLI's folder: .gemini in GEMINI_CLI_HOME, which
// stands in for the home directory, or in the home directory.
func geminiDir(e Env) string {
	if d := e.getenv("GEMINI_CLI_HOME"); d != "" {
		return filepath.Join(d, ".gemini")
	}
	return filepath.Join(e.Home, ".gemini")
}

// qwenDir is Qwen Code's folder: QWEN_HOME itself (a leading ~ is the home
// directory, a relative path is taken from the working directory, as Qwen
// Code takes them), or ~/.qwen.
func qwenDir(e Env) string {
	d := e.getenv("QWEN_HOME")
	switch {
	case d == "":
		return filepath.Join(e.Home, ".qwen")
	case d == "~":
		return e.Home
	case strings.HasPrefix(d, "~/"):
		return filepath.Join(e.Home, d[2:])
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// entryPath names the entry inside the config file, for people.
func (c Client) entryPath() string {
	switch c.Name {
	case "claude", "gemini", "qwen":
		return "mcpServers.hub"
	case "codex":
		return "[mcp_servers.hub]"
	}
	return "mcp.hub"
}

// newFileMode is the mode of a config file install creates: the clients'
// own choice (Claude Code and Codex keep theirs private; OpenCode, Gemini
// CLI and Qwen Code write theirs with the umask's).
func (c Client) newFileMode() os.FileMode {
	switch c.Name {
	case "opencode", "gemini", "qwen":
		return 0o644
	}
	return 0o600
}

var codexTable = []string{"mcp_servers", ServerName}

// jsonEntry is the entry as Claude Code's, OpenCode's, Gemini CLI's and
// Qwen Code's JSON has it: the keys hub owns, in order, nil for one to
// leave out.
func (c Client) jsonEntry(en Entry) object {
	var env any
	if len(en.Env) > 0 {
		env = stringMap(en.Env)
	}
	if c.Name == "opencode" {
		return object{
			{"type", "local"},
			{"command", append([]string{en.Command}, en.Args...)},
			{"enabled", true},
			{"environment", env},
		}
	}
	if c.Name == "gemini" || c.Name == "qwen" {
		// Both wait 10 minutes for a tool call unless "timeout" (ms) says
		// otherwise, longer than hub's wait blocks. "trust" lets hub's
		// calls run without a confirmation, as Codex's
		// default_tools_approval_mode does: headless, an unconfirmed call
		// is refused, and hub's tools only reach the local daemon.
		return object{
			{"command", en.Command},
			{"args", append([]string{}, en.Args...)},
			{"env", env},
			{"trust", true},
		}
	}
	return object{
		{"type", "stdio"},
		{"command", en.Command},
		{"args", append([]string{}, en.Args...)},
		{"env", env},
	}
}

// tomlEntry is the entry as Codex's config.toml has it.
func codexEntry(en Entry) tomlEntry {
	var env any
	if len(en.Env) > 0 {
		env = en.Env
	}
	return tomlEntry{
		{"command", en.Command},
		{"args", append([]string{}, en.Args...)},
		{"env", env},
		{"startup_timeout_sec", codexStartupTimeoutS},
		{"tool_timeout_sec", codexToolTimeoutS},
		// Without it, Codex under approval_policy "never" refuses every
		// hub call; hub's tools only reach the local daemon.
		{"default_tools_approval_mode", "approve"},
	}
}

// jsonContainer is the top-level key that holds MCP servers.
func (c Client) jsonContainer() string {
	if c.Name == "opencode" {
		return "mcp"
	}
	return "mcpServers"
}

// syntax is what the client's config may hold beyond JSON: OpenCode reads
// its config as JSONC (comments and trailing commas), Gemini CLI and Qwen
// Code strip comments and then read JSON, Claude Code reads JSON.
func (c Client) syntax() jsonSyntax {
	switch c.Name {
	case "opencode":
		return jsonc
	case "gemini", "qwen":
		return commentedJSON
	}
	return plainJSON
}

// setEntry returns src with hub's entry set to en.
func (c Client) setEntry(src []byte, en Entry) ([]byte, error) {
	if c.Name == "codex" {
		return setTOMLTable(src, codexTable, codexEntry(en))
	}
	return setJSONEntry(src, c.syntax(), c.jsonContainer(), ServerName, c.jsonEntry(en))
}

// removeEntry returns src without hub's entry; prior is the file before
// hub first changed it (nil when hub made it), see removeJSONEntry.
func (c Client) removeEntry(src, prior []byte) ([]byte, error) {
	if c.Name == "codex" {
		return removeTOMLTable(src, codexTable, prior)
	}
	return removeJSONEntry(src, c.syntax(), c.jsonContainer(), ServerName, prior)
}

// holdsEntry reports whether src has hub's entry (in a form that reads).
func (c Client) holdsEntry(src []byte) bool {
	en, err := c.ReadEntry(src)
	return err == nil && en != nil
}

// ReadEntry returns the hub entry in a config file's text as the client
// would run it, or nil when there is none.
func (c Client) ReadEntry(src []byte) (*Entry, error) {
	var m map[string]any
	var err error
	if c.Name == "codex" {
		m, err = readTOMLTable(src, codexTable)
	} else {
		m, err = readJSONEntry(src, c.syntax(), c.jsonContainer(), ServerName)
	}
	if err != nil || m == nil {
		return nil, err
	}
	en := &Entry{Env: map[string]string{}}
	envKey := "env"
	switch c.Name {
	case "opencode":
		cmd, ok := stringList(m["command"])
		if !ok || len(cmd) == 0 {
			return nil, fmt.Errorf("%s: command is not a list of strings", c.entryPath())
		}
		en.Command, en.Args = cmd[0], cmd[1:]
		envKey = "environment"
	default:
		cmd, ok := m["command"].(string)
		if !ok || cmd == "" {
			return nil, fmt.Errorf("%s: command is not a string", c.entryPath())
		}
		en.Command = cmd
		if m["args"] != nil {
			if en.Args, ok = stringList(m["args"]); !ok {
				return nil, fmt.Errorf("%s: args is not a list of strings", c.entryPath())
			}
		}
	}
	if raw, ok := m[envKey].(map[string]any); ok {
		for k, v := range raw {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %s.%s is not a string", c.entryPath(), envKey, k)
			}
			en.Env[k] = s
		}
	}
	return en, nil
}

// stringList converts a decoded list of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
