// Package claude is the claude engine: Claude Code run headless as a job's
// worker (`claude -p … --output-format stream-json`), on the Anthropic
// endpoint, model and key of the job's profile, with a config home of its
// own and hub's worker MCP server as its line to the supervisor. The rate
// limits its stream tells of (rate_limit_event) go into the outcome as
// quota signals. It must never read or write the user's own Claude Code
// setup.
package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
)

// Name is the engine's name.
const Name = "claude"

// PathEnv overrides where the claude binary is.
const PathEnv = "HUB_CLAUDE"

// Options configure the engine.
type Options = agentcli.Options

// New returns the engine.
func New(o Options) *agentcli.Engine { return agentcli.New(cli, o) }

// cli is Claude Code as hub runs it: on an Anthropic profile, whole inside
// hub's sandbox at isolated, with hub's tools as mcp__hub__<tool>.
var cli = agentcli.CLI{
	Program: agentcli.Program{Engine: Name, Binary: "claude", PathEnv: PathEnv, Product: "Claude Code",
		Install: "npm install -g @anthropic-ai/claude-code"},
	Providers:  []string{profile.Anthropic},
	Isolated:   true,
	ToolPrefix: "mcp__hub__",
	Launch:     launch,
}

// tools a write job may use without asking; a read job gets the readers only.
var (
	writeTools = []string{"Bash", "Edit", "MultiEdit", "Write", "Read", "Glob", "Grep", "LS", "TodoWrite", "NotebookEdit", "mcp__hub"}
	readTools  = []string{"Read", "Glob", "Grep", "LS", "mcp__hub"}
)

// launch runs `claude -p` with hub's MCP server in a config of its own.
func launch(ctx context.Context, j *agentcli.Job) (engine.Run, error) {
	spec := j.Spec
	// Claude Code adds /v1/messages to its base URL; profiles keep the /v1.
	base := strings.TrimSuffix(j.BaseURL, "/v1")
	timeout := agentcli.ToolTimeout(spec)
	env := append(j.Env,
		"ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY="+j.Key,
		"CLAUDE_CONFIG_DIR="+filepath.Join(spec.Scratch, "home", ".claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", // no telemetry, no update checks: only the model endpoint
		"ENABLE_TOOL_SEARCH=false",                   // hub's tools up front, not behind a search
		"MCP_TOOL_TIMEOUT="+strconv.FormatInt(timeout.Milliseconds(), 10),
		"CLAUDE_CODE_MAX_RETRIES=4")
	w := agentcli.Worker(spec)
	mcpConfig := filepath.Join(j.Home, "hub-mcp.json")
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"hub": map[string]any{
		"type": "stdio", "command": w.Command, "args": w.Args, "env": w.Env}}}, "", "  ")
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		return nil, err
	}
	tools := writeTools
	if spec.Params.Kind == protocol.KindRead {
		tools = readTools
	}
	flags := []string{"--output-format", "stream-json", "--verbose", "--model", j.Model,
		"--mcp-config", mcpConfig, "--strict-mcp-config",
		"--permission-mode", "acceptEdits", "--allowedTools", strings.Join(tools, ",")}
	if spec.Params.Kind == protocol.KindRead {
		flags = append(flags, "--disallowedTools", "Bash,Edit,MultiEdit,Write,NotebookEdit")
	}
	if spec.Params.MaxTurns > 0 {
		flags = append(flags, "--max-turns", strconv.Itoa(spec.Params.MaxTurns))
	}
	quota := newQuotaLog(time.Now)
	r, err := j.Run(ctx, "claude -p", agentcli.Invocation{
		Args:  append([]string{"-p", j.Prompt()}, flags...),
		Env:   env,
		Parse: newParser(quota),
		Resume: func(session, prompt string) []string {
			return append([]string{"-p", prompt, "--resume", session}, flags...)
		},
	})
	if err != nil {
		return nil, err
	}
	return run{Run: r, quota: quota}, nil
}

// parser reads Claude Code's stream-json: system/init, assistant and user
// messages, rate-limit events, and the closing result.
type parser struct {
	quota *quotaLog           // what rate-limit events said
	seen  map[string]bool     // message ids whose usage was counted
	bash  map[string]bashCall // tool_use id → the command and when hub saw it asked for
	// counted sums the per-message usage since the last result: those
	// figures are snapshots taken as each answer starts, and the result's
	// totals correct them.
	counted model.Usage
	calls   int
}

func newParser(quota *quotaLog) agentcli.Parser {
	p := &parser{quota: quota, seen: map[string]bool{}, bash: map[string]bashCall{}}
	return p.parse
}

type event struct {
	Type         string          `json:"type"`
	Subtype      string          `json:"subtype"`
	SessionID    string          `json:"session_id"`
	Message      json.RawMessage `json:"message"`
	Result       string          `json:"result"`
	IsError      bool            `json:"is_error"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	Usage        *usage          `json:"usage"`
	Denials      []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
	Errors        []string        `json:"errors"`
	RateLimitInfo json.RawMessage `json:"rate_limit_info"`
	// APIErrorParams of an answer the API refused hold what it said of the
	// limit that refused it ({"rate_limit_info":…}).
	APIErrorParams json.RawMessage `json:"api_error_params"`
}

type usage struct {
	Input         int `json:"input_tokens"`
	Output        int `json:"output_tokens"`
	CacheRead     int `json:"cache_read_input_tokens"`
	CacheCreation int `json:"cache_creation_input_tokens"`
}

func (u usage) model() model.Usage {
	in, read := agentcli.Count(u.Input), agentcli.Count(u.CacheRead)
	return model.Usage{Input: in + read + agentcli.Count(u.CacheCreation), Output: agentcli.Count(u.Output), CachedInput: read}
}

type message struct {
	ID      string    `json:"id"`
	Content []content `json:"content"`
	Usage   *usage    `json:"usage"`
}

type content struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

// bashCall is a Bash tool call waiting for its result.
type bashCall struct {
	cmd string
	at  time.Time
}

func (p *parser) parse(line []byte, ev agentcli.Events) bool {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	if e.SessionID != "" {
		ev.Session(e.SessionID)
	}
	switch e.Type {
	case "system":
		return e.Subtype == "init" || e.Subtype == "api_retry"
	case "rate_limit_event":
		return p.quota.add(e.RateLimitInfo)
	case "assistant":
		var m message
		if json.Unmarshal(e.Message, &m) != nil {
			return false
		}
		for _, c := range m.Content {
			switch c.Type {
			case "text":
				ev.Said(c.Text)
			case "tool_use":
				ev.Tool(c.Name, string(c.Input))
				if c.Name == "Bash" {
					var in struct{ Command string }
					_ = json.Unmarshal(c.Input, &in)
					p.bash[c.ID] = bashCall{in.Command, time.Now()}
				}
			}
		}
		var refused struct {
			RateLimitInfo json.RawMessage `json:"rate_limit_info"`
		}
		if json.Unmarshal(e.APIErrorParams, &refused) == nil && len(refused.RateLimitInfo) > 0 {
			p.quota.add(refused.RateLimitInfo)
		}
		// Each content block of one answer may come as its own event with
		// the answer's usage repeated: count an answer once.
		if m.Usage != nil && (m.ID == "" || !p.seen[m.ID]) {
			p.seen[m.ID] = true
			p.calls++
			p.counted = p.counted.Add(m.Usage.model())
			ev.Usage(m.Usage.model())
		}
		return true
	case "user":
		var m message
		if json.Unmarshal(e.Message, &m) != nil {
			return false
		}
		for _, c := range m.Content {
			if call, ok := p.bash[c.ToolUseID]; ok && c.Type == "tool_result" {
				delete(p.bash, c.ToolUseID)
				var code *int
				if !c.IsError {
					zero := 0
					code = &zero
				}
				ev.Command(call.cmd, code, call.at)
			}
		}
		return true
	case "result":
		if e.Usage != nil {
			total := e.Usage.model()
			if p.calls == 0 {
				ev.Usage(total)
			} else if d := (model.Usage{Input: total.Input - p.counted.Input, Output: total.Output - p.counted.Output,
				CachedInput: total.CachedInput - p.counted.CachedInput}); d.Input > 0 || d.Output > 0 || d.CachedInput > 0 {
				ev.Tokens(model.Usage{Input: max(d.Input, 0), Output: max(d.Output, 0), CachedInput: max(d.CachedInput, 0)})
			}
			p.counted, p.calls = model.Usage{}, 0
		}
		if e.TotalCostUSD != nil && agentcli.Dollars(*e.TotalCostUSD) {
			ev.Cost(*e.TotalCostUSD)
		}
		for _, d := range e.Denials {
			ev.Said("Claude Code refused the tool " + d.ToolName + " (permission denied)")
		}
		if e.IsError || (e.Subtype != "" && e.Subtype != "success") {
			msg := e.Subtype
			if e.Result != "" {
				msg += ": " + e.Result
			}
			if len(e.Errors) > 0 {
				msg += ": " + strings.Join(e.Errors, "; ")
			}
			ev.Failed("Claude Code: " + msg)
			return true
		}
		ev.Final(e.Result)
		return true
	}
	return false
}
