package opencode

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine/agentcli"
)

// parser reads `opencode run --format json`: one event a line, each with
// the session's id, of type step_start, text, reasoning, tool_use,
// step_finish or error. OpenCode prints a tool call once, when it has
// ended, and a text part once, when it is complete; the model calls of
// its hidden agents (title, summary) are not in the stream.
type parser struct {
	session string
	last    string  // the last text the worker wrote
	cost    float64 // OpenCode's own cost of the steps so far
}

func newParser() agentcli.Parser {
	p := &parser{}
	return p.parse
}

type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *part  `json:"part"`
	Error     *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

type part struct {
	Type   string   `json:"type"`
	Text   string   `json:"text"`
	Tool   string   `json:"tool"`
	Reason string   `json:"reason"`
	Cost   *float64 `json:"cost"`
	Tokens *tokens  `json:"tokens"`
	State  *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Error    string          `json:"error"`
		Metadata struct {
			Exit *int `json:"exit"`
		} `json:"metadata"`
		Time struct {
			Start int64 `json:"start"` // Unix milliseconds
		} `json:"time"`
	} `json:"state"`
}

// tokens are one step's: OpenCode takes the cached tokens out of input and
// the reasoning tokens out of output.
type tokens struct {
	Input     int `json:"input"`
	Output    int `json:"output"`
	Reasoning int `json:"reasoning"`
	Cache     struct {
		Read  int `json:"read"`
		Write int `json:"write"`
	} `json:"cache"`
}

func (t tokens) model() model.Usage {
	read := agentcli.Count(t.Cache.Read)
	return model.Usage{Input: agentcli.Count(t.Input) + read + agentcli.Count(t.Cache.Write),
		Output: agentcli.Count(t.Output) + agentcli.Count(t.Reasoning), CachedInput: read}
}

func (p *parser) parse(line []byte, ev agentcli.Events) bool {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	// A resumed run continues the same session: report it once.
	if e.SessionID != "" && e.SessionID != p.session {
		p.session = e.SessionID
		ev.Session(e.SessionID)
	}
	switch e.Type {
	case "step_start", "reasoning":
		return e.Part != nil
	case "text":
		if e.Part == nil {
			return false
		}
		if t := strings.TrimSpace(e.Part.Text); t != "" {
			p.last = t
			ev.Said(t)
		}
		return true
	case "tool_use":
		if e.Part == nil || e.Part.State == nil {
			return false
		}
		st := e.Part.State
		input := string(st.Input)
		if st.Status == "error" {
			input += " (failed: " + st.Error + ")"
		}
		ev.Tool(e.Part.Tool, input)
		if e.Part.Tool == "bash" {
			var in struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(st.Input, &in)
			if in.Command != "" {
				var started time.Time
				if st.Time.Start > 0 {
					started = time.UnixMilli(st.Time.Start)
				}
				ev.Command(in.Command, st.Metadata.Exit, started)
			}
		}
		return true
	case "step_finish":
		if e.Part == nil {
			return false
		}
		if e.Part.Tokens != nil {
			ev.Usage(e.Part.Tokens.model())
		}
		// OpenCode prices a step with the model's price in its config;
		// hub writes none, so it reports 0: only a cost it did compute
		// replaces hub's pricing.
		if e.Part.Cost != nil && *e.Part.Cost > 0 && agentcli.Dollars(p.cost+*e.Part.Cost) {
			p.cost += *e.Part.Cost
			ev.Cost(p.cost)
		}
		// A step that ends without calling tools ends the run.
		if e.Part.Reason != "tool-calls" && p.last != "" {
			ev.Final(p.last)
		}
		return true
	case "error":
		if e.Error == nil {
			return false
		}
		msg := e.Error.Name
		if e.Error.Data.Message != "" {
			msg += ": " + e.Error.Data.Message
		}
		if e.Error.Data.StatusCode != 0 {
			msg += fmt.Sprintf(" (HTTP %d)", e.Error.Data.StatusCode)
		}
		ev.Failed("OpenCode: " + msg)
		return true
	}
	return false
}
