package codex

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine/agentcli"
)

// parser reads `codex exec --json`: thread.started, then per turn
// turn.started, item.started / item.updated / item.completed, and
// turn.completed (with the turn's usage) or turn.failed; a top-level error
// is either a reconnect notice or the turn's fatal error.
//
// Warnings come as items of type error (an unknown model slug gives "Model
// metadata for `m` not found…" on every run); they never fail the run and
// are returned as not known, so the worker log keeps them verbatim, as it
// keeps reconnect notices.
type parser struct {
	dir    string // the worktree, which paths are shown relative to
	last   string // the turn's last agent message: its final answer
	failed string // the failure already reported
	// started is when each item hub saw start began, by item id, for the
	// command's duration when it completes.
	started map[string]time.Time
}

func newParser(dir string) agentcli.Parser {
	p := &parser{dir: dir, started: map[string]time.Time{}}
	return p.parse
}

type event struct {
	Type     string  `json:"type"`
	ThreadID string  `json:"thread_id"`
	Message  string  `json:"message"`
	Usage    *usage  `json:"usage"`
	Error    *errMsg `json:"error"`
	Item     *item   `json:"item"`
}

type errMsg struct {
	Message string `json:"message"`
}

type usage struct {
	Input     int `json:"input_tokens"`
	Cached    int `json:"cached_input_tokens"`
	Output    int `json:"output_tokens"`
	Reasoning int `json:"reasoning_output_tokens"`
}

// item is one thread item; which fields are set depends on its type.
type item struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`    // agent_message, reasoning
	Message   string          `json:"message"` // error
	Command   string          `json:"command"` // command_execution
	ExitCode  *int            `json:"exit_code"`
	Status    string          `json:"status"`
	Server    string          `json:"server"` // mcp_tool_call
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Error     *errMsg         `json:"error"`
	Changes   []struct {      // file_change
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Query string `json:"query"` // web_search
}

// known lists the item types the parser reads (others are logged).
var known = map[string]bool{"agent_message": true, "reasoning": true, "command_execution": true, "mcp_tool_call": true,
	"file_change": true, "web_search": true, "todo_list": true}

func (p *parser) parse(line []byte, ev agentcli.Events) bool {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	switch e.Type {
	case "thread.started":
		if e.ThreadID != "" {
			ev.Session(e.ThreadID)
		}
		return true
	case "turn.started":
		p.last = ""
		return true
	case "item.started", "item.updated":
		if e.Item != nil && e.Item.ID != "" && e.Type == "item.started" && len(p.started) < 1024 {
			p.started[e.Item.ID] = time.Now()
		}
		return e.Item != nil && known[e.Item.Type]
	case "item.completed":
		if e.Item == nil {
			return false
		}
		return p.item(e.Item, ev)
	case "turn.completed":
		if e.Usage != nil {
			// input_tokens counts the cached ones too; output_tokens the reasoning.
			in := agentcli.Count(e.Usage.Input)
			ev.Usage(model.Usage{Input: in, CachedInput: min(agentcli.Count(e.Usage.Cached), in), Output: agentcli.Count(e.Usage.Output)})
		}
		if p.last != "" {
			ev.Final(p.last)
		}
		return true
	case "turn.failed":
		msg := ""
		if e.Error != nil {
			msg = e.Error.Message
		}
		p.fail(msg, ev)
		return true
	case "error":
		if strings.HasPrefix(e.Message, "Reconnecting...") {
			return false // a retry, not the end
		}
		p.fail(e.Message, ev)
		return true
	}
	return false
}

func (p *parser) item(it *item, ev agentcli.Events) bool {
	switch it.Type {
	case "agent_message":
		ev.Said(it.Text)
		if strings.TrimSpace(it.Text) != "" {
			p.last = it.Text
		}
	case "reasoning", "todo_list":
	case "command_execution":
		cmd := shellScript(it.Command)
		ev.Tool("shell", cmd)
		ev.Command(cmd, it.ExitCode, p.started[it.ID])
		delete(p.started, it.ID)
	case "mcp_tool_call":
		in := string(it.Arguments)
		if it.Error != nil && it.Error.Message != "" {
			in += " → failed: " + it.Error.Message
		}
		ev.Tool("mcp__"+it.Server+"__"+it.Tool, in)
	case "file_change":
		var ch []string
		for _, c := range it.Changes {
			path := c.Path
			if rel, err := filepath.Rel(p.dir, path); err == nil && p.dir != "" && filepath.IsAbs(path) && filepath.IsLocal(rel) {
				path = rel
			}
			ch = append(ch, c.Kind+" "+path)
		}
		ev.Tool("apply_patch", strings.Join(ch, ", ")+" ("+it.Status+")")
	case "web_search":
		ev.Tool("web_search", it.Query)
	default:
		return false // error items are warnings; others are new
	}
	return true
}

// fail reports the run's fatal error once (Codex sends it as a top-level
// error, then again as turn.failed).
func (p *parser) fail(msg string, ev agentcli.Events) {
	msg = failure(msg)
	if msg == p.failed {
		return
	}
	p.failed = msg
	ev.Failed(msg)
}

// failure words Codex's error for the job: the endpoint's own message when
// Codex passed its JSON body through, and what a 404 on /responses means.
func failure(msg string) string {
	msg = strings.TrimSpace(msg)
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg), &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
		if body.Error.Type != "" {
			msg += " (" + body.Error.Type + ")"
		}
	}
	if msg == "" {
		msg = "the turn failed without a message"
	}
	if strings.Contains(msg, "404") && strings.Contains(msg, "/responses") {
		msg += " — the endpoint does not serve the OpenAI Responses API, the only one Codex speaks"
	}
	return "Codex: " + msg
}
