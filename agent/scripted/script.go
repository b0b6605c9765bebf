package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
)

// A Script is an ordered list of turns; each model request consumes the next
// turn.
type Script struct {
	Turns []Turn `json:"turns"`
}

// A Turn is the model's answer to one request: text, tool calls or both; or
// an HTTP error; or a response cut short.
type Turn struct {
	// Text is the assistant's text.
	Text string `json:"text,omitempty"`
	// ToolCalls are the tool calls the assistant makes: zero, one or several
	// (parallel) calls. They follow the text.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is the usage reported with the answer. Nil means an estimate:
	// a token per four characters of the request and of the reply.
	Usage *Usage `json:"usage,omitempty"`
	// Error, when set, answers with this HTTP status and error body instead
	// of a reply. It excludes Text, ToolCalls, Usage and Drop.
	Error *HTTPError `json:"error,omitempty"`
	// Drop starts the response (status and headers, the start of the body;
	// for a stream, its first event) then cuts the connection, so the
	// client sees a transport error mid-response.
	Drop bool `json:"drop,omitempty"`
	// DelayMS is how long to wait before answering. The wait ends early,
	// and nothing is answered, when the client cancels the request or the
	// server is closed.
	DelayMS int `json:"delay_ms,omitempty"`
	// Headers are extra response headers sent with the answer, whatever it
	// is (a reply, an error, a drop): a provider's rate-limit headers, say
	// (anthropic-ratelimit-unified-*, x-codex-primary-*). The headers the
	// server sets itself (Content-Type, Retry-After, …) win over these.
	Headers map[string]string `json:"headers,omitempty"`
}

// A ToolCall is one call the assistant makes.
type ToolCall struct {
	// ID is the call id. In a script, empty means the server makes one up
	// when it plays the turn, in the wire's style ("call_…" or "toolu_…").
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Namespace, on the Responses wire, is the namespace the tool was
	// offered in (Codex offers MCP tools as namespace "mcp__<server>" and
	// runs a call only when it names it).
	Namespace string `json:"namespace,omitempty"`
	// Args are the call's arguments: in a script, a JSON object (empty
	// means {}); in a request, what the client sent back (a JSON string
	// when what it sent was not JSON, as for free-form tools).
	Args json.RawMessage `json:"args,omitempty"`
}

// Usage is the token usage reported with a reply.
type Usage struct {
	// Input counts every prompt token, cached ones included (OpenAI's
	// convention). The Anthropic wire reports input_tokens = Input -
	// CachedInput and cache_read_input_tokens = CachedInput, as Anthropic
	// does.
	Input int `json:"input"`
	// Output counts the reply's tokens.
	Output int `json:"output"`
	// CachedInput is the part of Input read from the prompt cache.
	CachedInput int `json:"cached_input,omitempty"`
}

// HTTPError is an error answer.
type HTTPError struct {
	// Status is the HTTP status, 400 to 599 (e.g. 429, 500, 529).
	Status int `json:"status"`
	// Message is the error's message; empty means the status text.
	Message string `json:"message,omitempty"`
	// RetryAfterS, when positive, is sent as the Retry-After header
	// (seconds).
	RetryAfterS int `json:"retry_after_s,omitempty"`
}

// LoadScript reads a script in JSON from r. It refuses unknown fields,
// trailing data, a script without turns and invalid turns, saying which.
func LoadScript(r io.Reader) (*Script, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var sc Script
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("scripted: load script: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("scripted: load script: unexpected data after the script object")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scripted: load script: %w", err)
	}
	return &sc, nil
}

// Validate reports the first problem with the script: no turns, or a turn
// that is empty (no text, tool call, error or drop), contradictory (an error
// with a reply) or out of range.
func (sc *Script) Validate() error {
	if sc == nil || len(sc.Turns) == 0 {
		return errors.New("script has no turns")
	}
	for i := range sc.Turns {
		if err := sc.Turns[i].validate(); err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	return nil
}

func (t *Turn) validate() error {
	if t.DelayMS < 0 {
		return fmt.Errorf("delay_ms is negative (%d)", t.DelayMS)
	}
	for k, v := range t.Headers {
		if !headerName(k) {
			return fmt.Errorf("header %q is not a valid header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: the value holds a line break or NUL", k)
		}
	}
	if t.Error != nil {
		if t.Text != "" || len(t.ToolCalls) > 0 || t.Usage != nil || t.Drop {
			return errors.New("error excludes text, tool_calls, usage and drop")
		}
		if t.Error.Status < 400 || t.Error.Status > 599 {
			return fmt.Errorf("error status %d is not in 400..599", t.Error.Status)
		}
		if t.Error.RetryAfterS < 0 {
			return fmt.Errorf("error retry_after_s is negative (%d)", t.Error.RetryAfterS)
		}
		return nil
	}
	if t.Text == "" && len(t.ToolCalls) == 0 && !t.Drop {
		return errors.New("empty turn: it needs text, tool_calls, error or drop")
	}
	if u := t.Usage; u != nil {
		if u.Input < 0 || u.Output < 0 || u.CachedInput < 0 {
			return errors.New("usage has a negative count")
		}
		if u.CachedInput > u.Input {
			return fmt.Errorf("usage cached_input %d exceeds input %d", u.CachedInput, u.Input)
		}
	}
	ids := map[string]bool{}
	for j, c := range t.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d: name is empty", j+1)
		}
		if c.ID != "" {
			if ids[c.ID] {
				return fmt.Errorf("tool call %d: id %q is used twice", j+1, c.ID)
			}
			ids[c.ID] = true
		}
		if len(c.Args) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(c.Args, &obj); err != nil || obj == nil {
				return fmt.Errorf("tool call %d (%s): args must be a JSON object", j+1, c.Name)
			}
		}
	}
	return nil
}

// clone copies the script deeply enough that the caller may change its own
// copy afterwards.
func (sc *Script) clone() []Turn {
	turns := make([]Turn, len(sc.Turns))
	for i, t := range sc.Turns {
		if t.Usage != nil {
			u := *t.Usage
			t.Usage = &u
		}
		if t.Error != nil {
			e := *t.Error
			t.Error = &e
		}
		calls := make([]ToolCall, len(t.ToolCalls))
		for j, c := range t.ToolCalls {
			c.Args = bytes.Clone(c.Args)
			calls[j] = c
		}
		t.ToolCalls = calls
		t.Headers = maps.Clone(t.Headers)
		turns[i] = t
	}
	return turns
}

// args returns the call's arguments as compact JSON, {} when empty.
func (c ToolCall) args() string {
	if len(c.Args) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, c.Args); err != nil {
		return string(c.Args)
	}
	return b.String()
}

// headerName reports whether s is an HTTP header name (an RFC 9110 token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
