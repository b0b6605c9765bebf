package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// testLogger forwards the server's log to t until the test's cleanup ends
// it, so that no handler logs to a finished test.
type testLogger struct {
	mu  sync.Mutex
	t   *testing.T
	off bool
}

func (l *testLogger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.off {
		l.t.Logf(format, args...)
	}
}

// startServer starts a server on loopback with the given scripts (key: model)
// and closes it when the test ends.
func startServer(t *testing.T, scripts map[string]*Script) *Server {
	t.Helper()
	return startServerWith(t, scripts, nil)
}

// startServerWith is startServer with a hook that also sees every log line.
func startServerWith(t *testing.T, scripts map[string]*Script, hook func(line string)) *Server {
	t.Helper()
	l := &testLogger{t: t}
	s := New(&Options{Logf: func(format string, args ...any) {
		l.logf(format, args...)
		if hook != nil {
			hook(fmt.Sprintf(format, args...))
		}
	}})
	for model, sc := range scripts {
		if err := s.SetScript(model, sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		l.mu.Lock()
		l.off = true
		l.mu.Unlock()
	})
	return s
}

var wirePaths = map[string]string{
	WireChat:      "/v1/chat/completions",
	WireResponses: "/v1/responses",
	WireMessages:  "/v1/messages",
}

// post sends body to path and returns the response; the test closes it.
func post(ctx context.Context, t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// userBody is a minimal request on wire, with one user message.
func userBody(wire, model string, stream bool, text string) string {
	m := map[string]any{"model": model, "stream": stream}
	switch wire {
	case WireChat:
		m["messages"] = []any{map[string]any{"role": "user", "content": text}}
		if stream {
			m["stream_options"] = map[string]any{"include_usage": true}
		}
	case WireResponses:
		m["input"] = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}}
	case WireMessages:
		m["max_tokens"] = 1024
		m["messages"] = []any{map[string]any{"role": "user", "content": text}}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// result is a reply as a client sees it, whatever the wire.
type result struct {
	Text   string
	Calls  []ToolCall
	Usage  Usage
	Finish string
	Events int // events in the stream; 0 when not streamed
}

type sseEvent struct {
	name string
	data string
}

// readSSE reads a stream of server-sent events; it returns the events read
// and the error that ended the stream, if any.
func readSSE(r io.Reader) ([]sseEvent, error) {
	var (
		events []sseEvent
		cur    sseEvent
		have   bool
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if have {
				events = append(events, cur)
			}
			cur, have = sseEvent{}, false
		case strings.HasPrefix(line, "event: "):
			cur.name, have = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			cur.data, have = strings.TrimPrefix(line, "data: "), true
		default:
			return events, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return events, err
	}
	if have {
		return events, fmt.Errorf("stream ends inside an event")
	}
	return events, nil
}

// decode reads a successful reply on wire, checking its shape as strictly as
// the wire's clients would.
func decode(wire string, stream bool, resp *http.Response) (result, error) {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return result{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if !stream {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			return result{}, fmt.Errorf("content type %q", ct)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return result{}, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		switch wire {
		case WireChat:
			return decodeChat(dec)
		case WireResponses:
			var r responsesResponse
			if err := dec.Decode(&r); err != nil {
				return result{}, err
			}
			return r.result()
		default:
			var m anthropicMessage
			if err := dec.Decode(&m); err != nil {
				return result{}, err
			}
			return m.result()
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return result{}, fmt.Errorf("content type %q", ct)
	}
	events, err := readSSE(resp.Body)
	if err != nil {
		return result{Events: len(events)}, err
	}
	var res result
	switch wire {
	case WireChat:
		res, err = decodeChatStream(events)
	case WireResponses:
		res, err = decodeResponsesStream(events)
	default:
		res, err = decodeMessagesStream(events)
	}
	res.Events = len(events)
	return res, err
}

type chatToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      *string `json:"name"`
		Arguments string  `json:"arguments"`
	} `json:"function"`
}

type chatUsageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u chatUsageJSON) usage() (Usage, error) {
	if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		return Usage{}, fmt.Errorf("total_tokens %d != %d + %d", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	return Usage{Input: u.PromptTokens, Output: u.CompletionTokens, CachedInput: u.PromptTokensDetails.CachedTokens}, nil
}

func decodeChat(dec *json.Decoder) (result, error) {
	var r struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string         `json:"role"`
				Content   *string        `json:"content"`
				ToolCalls []chatToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage chatUsageJSON `json:"usage"`
	}
	if err := dec.Decode(&r); err != nil {
		return result{}, err
	}
	if r.Object != "chat.completion" || r.ID == "" || len(r.Choices) != 1 || r.Choices[0].Message.Role != "assistant" {
		return result{}, fmt.Errorf("bad chat completion: %+v", r)
	}
	c := r.Choices[0]
	var res result
	if c.Message.Content != nil {
		if *c.Message.Content == "" {
			return result{}, fmt.Errorf("content is \"\", want null when there is no text")
		}
		res.Text = *c.Message.Content
	}
	for _, tc := range c.Message.ToolCalls {
		if tc.Type != "function" || tc.ID == "" || tc.Function.Name == nil {
			return result{}, fmt.Errorf("bad tool call %+v", tc)
		}
		res.Calls = append(res.Calls, ToolCall{ID: tc.ID, Name: *tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	res.Finish = c.FinishReason
	var err error
	res.Usage, err = r.Usage.usage()
	return res, err
}

func decodeChatStream(events []sseEvent) (result, error) {
	var res result
	done := false
	for i, e := range events {
		if e.name != "" {
			return res, fmt.Errorf("event %d has a name %q", i, e.name)
		}
		if done {
			return res, fmt.Errorf("event %d after [DONE]", i)
		}
		if e.data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Role      string         `json:"role"`
					Content   string         `json:"content"`
					ToolCalls []chatToolCall `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsageJSON `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			return res, fmt.Errorf("event %d: %w", i, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" {
			return res, fmt.Errorf("event %d: bad chunk %s", i, e.data)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant") {
			return res, fmt.Errorf("first chunk does not give the role: %s", e.data)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				return res, fmt.Errorf("event %d: usage chunk with choices", i)
			}
			u, err := c.Usage.usage()
			if err != nil {
				return res, err
			}
			res.Usage = u
			continue
		}
		if len(c.Choices) != 1 {
			return res, fmt.Errorf("event %d: %d choices", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if res.Finish != "" {
			return res, fmt.Errorf("event %d: delta after the finish reason", i)
		}
		res.Text += ch.Delta.Content
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil {
				return res, fmt.Errorf("event %d: tool call delta without index", i)
			}
			switch n := *tc.Index; {
			case n == len(res.Calls):
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == nil {
					return res, fmt.Errorf("event %d: first delta of call %d lacks id, type or name", i, n)
				}
				res.Calls = append(res.Calls, ToolCall{ID: tc.ID, Name: *tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			case n < len(res.Calls):
				if tc.ID != "" || tc.Function.Name != nil {
					return res, fmt.Errorf("event %d: later delta of call %d repeats id or name", i, n)
				}
				res.Calls[n].Args = append(res.Calls[n].Args, tc.Function.Arguments...)
			default:
				return res, fmt.Errorf("event %d: tool call index %d skips ahead", i, n)
			}
		}
		if ch.FinishReason != nil {
			res.Finish = *ch.FinishReason
		}
	}
	if !done {
		return res, fmt.Errorf("stream ends without [DONE]")
	}
	return res, nil
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

type responsesOutput struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type responsesResponse struct {
	ID     string            `json:"id"`
	Object string            `json:"object"`
	Status string            `json:"status"`
	Output []responsesOutput `json:"output"`
	Usage  *responsesUsage   `json:"usage"`
}

func (r responsesResponse) result() (result, error) {
	if r.Object != "response" || r.ID == "" || r.Status != "completed" || r.Usage == nil {
		return result{}, fmt.Errorf("bad response: %+v", r)
	}
	res := result{Finish: r.Status}
	for _, o := range r.Output {
		switch o.Type {
		case "message":
			if o.Role != "assistant" || len(o.Content) != 1 || o.Content[0].Type != "output_text" {
				return res, fmt.Errorf("bad message item %+v", o)
			}
			res.Text += o.Content[0].Text
		case "function_call":
			if o.ID == "" || o.CallID == "" || o.Name == "" {
				return res, fmt.Errorf("bad function call item %+v", o)
			}
			res.Calls = append(res.Calls, ToolCall{ID: o.CallID, Name: o.Name, Args: json.RawMessage(o.Arguments)})
		default:
			return res, fmt.Errorf("unexpected item type %q", o.Type)
		}
	}
	u := r.Usage
	if u.TotalTokens != u.InputTokens+u.OutputTokens {
		return res, fmt.Errorf("total_tokens %d != %d + %d", u.TotalTokens, u.InputTokens, u.OutputTokens)
	}
	res.Usage = Usage{Input: u.InputTokens, Output: u.OutputTokens, CachedInput: u.InputTokensDetails.CachedTokens}
	return res, nil
}

func decodeResponsesStream(events []sseEvent) (result, error) {
	var (
		completed *responsesResponse
		deltas    = map[string]string{} // item id: text or arguments put together
		done      []responsesOutput     // items, as output_item.done gives them
	)
	for i, e := range events {
		var ev struct {
			Type     string           `json:"type"`
			Seq      *int             `json:"sequence_number"`
			ItemID   string           `json:"item_id"`
			Delta    string           `json:"delta"`
			Index    *int             `json:"output_index"`
			Item     *responsesOutput `json:"item"`
			Response json.RawMessage  `json:"response"`
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			return result{}, fmt.Errorf("event %d: %w", i, err)
		}
		if ev.Type != e.name || ev.Seq == nil || *ev.Seq != i {
			return result{}, fmt.Errorf("event %d: name %q, type %q, sequence_number %v", i, e.name, ev.Type, ev.Seq)
		}
		if completed != nil {
			return result{}, fmt.Errorf("event %d after response.completed", i)
		}
		switch ev.Type {
		case "response.created", "response.in_progress":
			if i > 1 || (i == 0) != (ev.Type == "response.created") {
				return result{}, fmt.Errorf("event %d is %s", i, ev.Type)
			}
		case "response.output_item.added":
			if ev.Item == nil || ev.Index == nil || *ev.Index != len(done) {
				return result{}, fmt.Errorf("event %d: bad output_item.added %s", i, e.data)
			}
		case "response.output_text.delta", "response.function_call_arguments.delta":
			deltas[ev.ItemID] += ev.Delta
		case "response.output_item.done":
			if ev.Item == nil || ev.Index == nil || *ev.Index != len(done) {
				return result{}, fmt.Errorf("event %d: bad output_item.done %s", i, e.data)
			}
			whole := ev.Item.Arguments
			if ev.Item.Type == "message" && len(ev.Item.Content) == 1 {
				whole = ev.Item.Content[0].Text
			}
			if deltas[ev.Item.ID] != whole {
				return result{}, fmt.Errorf("item %s: deltas give %q, done gives %q", ev.Item.ID, deltas[ev.Item.ID], whole)
			}
			done = append(done, *ev.Item)
		case "response.completed":
			completed = new(responsesResponse)
			if err := json.Unmarshal(ev.Response, completed); err != nil {
				return result{}, fmt.Errorf("event %d: %w", i, err)
			}
		case "response.content_part.added", "response.content_part.done",
			"response.output_text.done", "response.function_call_arguments.done":
		default:
			return result{}, fmt.Errorf("event %d: unexpected type %q", i, ev.Type)
		}
	}
	if completed == nil {
		return result{}, fmt.Errorf("stream ends without response.completed")
	}
	if len(completed.Output) != len(done) {
		return result{}, fmt.Errorf("completed response has %d items, the stream gave %d", len(completed.Output), len(done))
	}
	return completed.result()
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicUsage struct {
	InputTokens          *int `json:"input_tokens"`
	OutputTokens         *int `json:"output_tokens"`
	CacheCreation        *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens *int `json:"cache_read_input_tokens"`
}

type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Content      []anthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

func (m anthropicMessage) result() (result, error) {
	u := m.Usage
	if m.Type != "message" || m.Role != "assistant" || m.ID == "" || m.StopReason == nil ||
		u.InputTokens == nil || u.OutputTokens == nil || u.CacheCreation == nil || u.CacheReadInputTokens == nil {
		return result{}, fmt.Errorf("bad message %+v", m)
	}
	res := result{Finish: *m.StopReason}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			res.Text += b.Text
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return res, fmt.Errorf("bad tool_use %+v", b)
			}
			res.Calls = append(res.Calls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		default:
			return res, fmt.Errorf("unexpected block type %q", b.Type)
		}
	}
	res.Usage = Usage{Input: *u.InputTokens + *u.CacheReadInputTokens, Output: *u.OutputTokens, CachedInput: *u.CacheReadInputTokens}
	return res, nil
}

func decodeMessagesStream(events []sseEvent) (result, error) {
	var (
		msg     *anthropicMessage
		open    = -1
		partial = map[int]string{}
		stopped bool
	)
	for i, e := range events {
		var ev struct {
			Type         string            `json:"type"`
			Message      *anthropicMessage `json:"message"`
			Index        *int              `json:"index"`
			ContentBlock *anthropicBlock   `json:"content_block"`
			Delta        struct {
				Type        string  `json:"type"`
				Text        string  `json:"text"`
				PartialJSON string  `json:"partial_json"`
				StopReason  *string `json:"stop_reason"`
			} `json:"delta"`
			Usage *anthropicUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			return result{}, fmt.Errorf("event %d: %w", i, err)
		}
		if ev.Type != e.name {
			return result{}, fmt.Errorf("event %d: name %q, type %q", i, e.name, ev.Type)
		}
		if (i == 0) != (ev.Type == "message_start") || stopped {
			return result{}, fmt.Errorf("event %d: %s out of order", i, ev.Type)
		}
		switch ev.Type {
		case "message_start":
			if ev.Message == nil || len(ev.Message.Content) != 0 || ev.Message.Usage.InputTokens == nil {
				return result{}, fmt.Errorf("bad message_start %s", e.data)
			}
			msg = ev.Message
		case "content_block_start":
			if open != -1 || ev.Index == nil || *ev.Index != len(msg.Content) || ev.ContentBlock == nil {
				return result{}, fmt.Errorf("event %d: bad content_block_start %s", i, e.data)
			}
			open = *ev.Index
			msg.Content = append(msg.Content, *ev.ContentBlock)
		case "content_block_delta":
			if ev.Index == nil || *ev.Index != open {
				return result{}, fmt.Errorf("event %d: delta for a block not open", i)
			}
			b := &msg.Content[open]
			switch {
			case ev.Delta.Type == "text_delta" && b.Type == "text":
				b.Text += ev.Delta.Text
			case ev.Delta.Type == "input_json_delta" && b.Type == "tool_use":
				partial[open] += ev.Delta.PartialJSON
			default:
				return result{}, fmt.Errorf("event %d: %s delta for a %s block", i, ev.Delta.Type, b.Type)
			}
		case "content_block_stop":
			if ev.Index == nil || *ev.Index != open {
				return result{}, fmt.Errorf("event %d: stop for a block not open", i)
			}
			if b := &msg.Content[open]; b.Type == "tool_use" {
				b.Input = json.RawMessage(partial[open])
			}
			open = -1
		case "message_delta":
			if ev.Delta.StopReason == nil || ev.Usage == nil || ev.Usage.OutputTokens == nil {
				return result{}, fmt.Errorf("bad message_delta %s", e.data)
			}
			msg.StopReason = ev.Delta.StopReason
			msg.Usage.OutputTokens = ev.Usage.OutputTokens
		case "message_stop":
			stopped = true
		default:
			return result{}, fmt.Errorf("event %d: unexpected type %q", i, ev.Type)
		}
	}
	if !stopped {
		return result{}, fmt.Errorf("stream ends without message_stop")
	}
	return msg.result()
}

// errorBody reads an error answer: {"type":"error","error":{"type","message"}}.
func errorBody(t *testing.T, resp *http.Response) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("error body: %v", err)
	}
	if e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("bad error body %+v", e)
	}
	return e.Error.Type, e.Error.Message
}

// compactArgs rewrites the args of every call to compact JSON, so that calls
// compare by meaning.
func compactArgs(t *testing.T, calls []ToolCall) []ToolCall {
	t.Helper()
	if calls == nil {
		return nil
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		if len(c.Args) > 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, c.Args); err != nil {
				t.Fatalf("call %s args %q: %v", c.Name, c.Args, err)
			}
			c.Args = b.Bytes()
		}
		out[i] = c
	}
	return out
}
