package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modes is every wire in both stream modes.
var modes = []struct {
	wire   string
	stream bool
}{
	{WireChat, false}, {WireChat, true},
	{WireResponses, false}, {WireResponses, true},
	{WireMessages, false}, {WireMessages, true},
}

func modeName(wire string, stream bool) string {
	if stream {
		return wire + "/stream"
	}
	return wire + "/json"
}

func TestTextTurn(t *testing.T) {
	// Long enough to be streamed in several pieces, with a rune that must
	// not be split.
	const text = "Fixed the typo in greet.sh — test.sh passes now."
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: text}}}})
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], userBody(m.wire, "m", m.stream, "fix the typo"))
			got, err := decode(m.wire, m.stream, resp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != text || len(got.Calls) != 0 {
				t.Errorf("got text %q and %d calls, want %q and none", got.Text, len(got.Calls), text)
			}
			want := map[string]string{WireChat: "stop", WireResponses: "completed", WireMessages: "end_turn"}[m.wire]
			if got.Finish != want {
				t.Errorf("finish %q, want %q", got.Finish, want)
			}
			if m.stream && got.Events < 6 {
				t.Errorf("the text came in %d events, want it in pieces", got.Events)
			}
			// Estimated usage: a token per 4 characters, rounded up. The
			// request holds 12 characters ("fix the typo"), the reply 48.
			if wantUsage := (Usage{Input: 3, Output: 12}); got.Usage != wantUsage {
				t.Errorf("usage %+v, want the estimate %+v", got.Usage, wantUsage)
			}
			if n := s.Remaining("m"); n != 0 {
				t.Errorf("Remaining = %d, want 0", n)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	turn := Turn{
		Text: "Reading both files.",
		ToolCalls: []ToolCall{
			{Name: "read_file", Args: json.RawMessage(`{"path": "greet.sh"}`)},
			{ID: "my_call", Name: "run", Args: json.RawMessage(`{"cmd":"sh test.sh","timeout_s":30,"env":{"LANG":"C.UTF-8"}}`)},
			{Name: "list_files"},
		},
	}
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			s := startServer(t, map[string]*Script{"": {Turns: []Turn{turn}}})
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], userBody(m.wire, "any-model", m.stream, "go"))
			got, err := decode(m.wire, m.stream, resp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != turn.Text {
				t.Errorf("text %q, want %q", got.Text, turn.Text)
			}
			prefix := "call_"
			if m.wire == WireMessages {
				prefix = "toolu_"
			}
			if len(got.Calls) != 3 {
				t.Fatalf("got %d calls, want 3: %+v", len(got.Calls), got.Calls)
			}
			if !strings.HasPrefix(got.Calls[0].ID, prefix) || !strings.HasPrefix(got.Calls[2].ID, prefix) || got.Calls[0].ID == got.Calls[2].ID {
				t.Errorf("made-up ids %q and %q, want distinct ids starting %q", got.Calls[0].ID, got.Calls[2].ID, prefix)
			}
			want := []ToolCall{
				{ID: got.Calls[0].ID, Name: "read_file", Args: json.RawMessage(`{"path":"greet.sh"}`)},
				{ID: "my_call", Name: "run", Args: json.RawMessage(`{"cmd":"sh test.sh","timeout_s":30,"env":{"LANG":"C.UTF-8"}}`)},
				{ID: got.Calls[2].ID, Name: "list_files", Args: json.RawMessage(`{}`)},
			}
			if diff := cmp.Diff(want, compactArgs(t, got.Calls)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			wantFinish := map[string]string{WireChat: "tool_calls", WireResponses: "completed", WireMessages: "tool_use"}[m.wire]
			if got.Finish != wantFinish {
				t.Errorf("finish %q, want %q", got.Finish, wantFinish)
			}
		})
	}
}

func TestUsageReported(t *testing.T) {
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			u := Usage{Input: 1200, Output: 40, CachedInput: 1000}
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "ok", Usage: &u}}}})
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], userBody(m.wire, "m", m.stream, "hi"))
			got, err := decode(m.wire, m.stream, resp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Usage != u {
				t.Errorf("usage %+v, want %+v", got.Usage, u)
			}
		})
	}
	t.Run("anthropic input excludes cache reads", func(t *testing.T) {
		s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "ok", Usage: &Usage{Input: 1200, Output: 40, CachedInput: 1000}}}}})
		resp := post(t.Context(), t, s.URL()+"/v1/messages", userBody(WireMessages, "m", false, "hi"))
		var m anthropicMessage
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		if *m.Usage.InputTokens != 200 || *m.Usage.CacheReadInputTokens != 1000 || *m.Usage.CacheCreation != 0 {
			t.Errorf("usage input %d, cache read %d, cache creation %d; want 200, 1000, 0",
				*m.Usage.InputTokens, *m.Usage.CacheReadInputTokens, *m.Usage.CacheCreation)
		}
	})
	t.Run("chat stream without include_usage", func(t *testing.T) {
		s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "ok"}}}})
		resp := post(t.Context(), t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		events, err := readSSE(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if strings.Contains(e.data, `"usage"`) {
				t.Errorf("usage sent though not asked for: %s", e.data)
			}
		}
	})
}

func TestRateLimitThenSuccess(t *testing.T) {
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{
				{Error: &HTTPError{Status: 429, Message: "slow down", RetryAfterS: 7}},
				{Error: &HTTPError{Status: 529}},
				{Text: "made it"},
			}}})
			body := userBody(m.wire, "m", m.stream, "hi")
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
				t.Fatalf("status %d, Retry-After %q; want 429 and 7", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if typ, msg := errorBody(t, resp); typ != "rate_limit_error" || msg != "slow down" {
				t.Errorf("error %s %q, want rate_limit_error \"slow down\"", typ, msg)
			}
			resp = post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if resp.StatusCode != 529 || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("status %d, Retry-After %q; want 529 and none", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if typ, _ := errorBody(t, resp); typ != "overloaded_error" {
				t.Errorf("error type %s, want overloaded_error", typ)
			}
			resp = post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			got, err := decode(m.wire, m.stream, resp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != "made it" {
				t.Errorf("text %q after the errors, want \"made it\"", got.Text)
			}
			if n := len(s.Requests()); n != 3 {
				t.Errorf("%d requests logged, want 3", n)
			}
		})
	}
}

// A turn's headers come with its answer, whatever it is; the server's own
// headers win over them.
func TestTurnHeaders(t *testing.T) {
	rate := map[string]string{"Anthropic-Ratelimit-Unified-5h-Utilization": "0.42", "x-codex-primary-used-percent": "42.0",
		"Content-Type": "text/plain"}
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{
				{Text: "ok", Headers: rate},
				{Error: &HTTPError{Status: 429, RetryAfterS: 7}, Headers: map[string]string{"anthropic-ratelimit-unified-status": "rejected", "Retry-After": "1"}},
				{Text: "plain"},
			}}})
			body := userBody(m.wire, "m", m.stream, "hi")
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if got := resp.Header.Get("anthropic-ratelimit-unified-5h-utilization"); got != "0.42" {
				t.Errorf("5h utilization header %q, want 0.42", got)
			}
			if got := resp.Header.Get("X-Codex-Primary-Used-Percent"); got != "42.0" {
				t.Errorf("codex header %q, want 42.0", got)
			}
			if ct := resp.Header.Get("Content-Type"); ct == "text/plain" {
				t.Errorf("the turn's Content-Type won over the server's")
			}
			if _, err := decode(m.wire, m.stream, resp); err != nil {
				t.Fatal(err)
			}
			resp = post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if resp.StatusCode != 429 || resp.Header.Get("Anthropic-Ratelimit-Unified-Status") != "rejected" || resp.Header.Get("Retry-After") != "7" {
				t.Errorf("error answer: status %d, headers %v", resp.StatusCode, resp.Header)
			}
			resp.Body.Close()
			resp = post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if got := resp.Header.Get("x-codex-primary-used-percent"); got != "" {
				t.Errorf("a turn without headers sent %q", got)
			}
			resp.Body.Close()
		})
	}
}

func TestDrop(t *testing.T) {
	for _, m := range modes {
		t.Run(modeName(m.wire, m.stream), func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{
				{Text: "never seen in full", ToolCalls: []ToolCall{{Name: "x"}}, Drop: true},
				{Text: "after the drop"},
			}}})
			body := userBody(m.wire, "m", m.stream, "hi")
			resp := post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200: the response starts before it is cut", resp.StatusCode)
			}
			if m.stream {
				events, err := readSSE(resp.Body)
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("stream ended with %v, want unexpected EOF", err)
				}
				if len(events) != 1 {
					t.Errorf("got %d events before the cut, want 1: %+v", len(events), events)
				}
			} else {
				var v map[string]any
				err := json.NewDecoder(resp.Body).Decode(&v)
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("decoding the cut body gave %v, want unexpected EOF", err)
				}
			}
			resp = post(t.Context(), t, s.URL()+wirePaths[m.wire], body)
			got, err := decode(m.wire, m.stream, resp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != "after the drop" {
				t.Errorf("text %q, want the next turn", got.Text)
			}
		})
	}
}

// The same conversation, sent on each wire, reads the same in the log:
// system prompt, history (tool calls and results with their ids), tools.
func TestRequestLogNormalisesHistory(t *testing.T) {
	bodies := map[string]string{
		WireChat: `{
			"model": "m", "max_completion_tokens": 300,
			"messages": [
				{"role": "system", "content": "You are terse."},
				{"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
				{"role": "user", "content": [{"type": "text", "text": "list files"}, {"type": "image_url", "image_url": {"url": "data:,"}}]},
				{"role": "assistant", "content": "Looking.", "tool_calls": [
					{"id": "call_A", "type": "function", "function": {"name": "ls", "arguments": "{\"dir\":\".\"}"}},
					{"id": "call_B", "type": "function", "function": {"name": "cat", "arguments": "{\"path\":\"x\"}"}}]},
				{"role": "tool", "tool_call_id": "call_A", "content": "a.txt"},
				{"role": "tool", "tool_call_id": "call_B", "content": [{"type": "text", "text": "boom"}]},
				{"role": "user", "content": "thanks"},
				{"role": "system", "content": "Be brief."}
			],
			"tools": [{"type": "function", "function": {"name": "ls"}}, {"type": "function", "function": {"name": "cat"}}]
		}`,
		WireResponses: `{
			"model": "m", "stream": true, "max_output_tokens": 300,
			"instructions": "You are terse.",
			"input": [
				{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
				{"role": "user", "content": [{"type": "input_text", "text": "list files"}, {"type": "input_image", "image_url": "data:,"}]},
				{"type": "reasoning", "id": "rs_1", "summary": []},
				{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
				{"type": "function_call", "call_id": "call_A", "name": "ls", "arguments": "{\"dir\":\".\"}"},
				{"type": "function_call", "call_id": "call_B", "name": "cat", "arguments": "{\"path\":\"x\"}"},
				{"type": "function_call_output", "call_id": "call_A", "output": "a.txt"},
				{"type": "function_call_output", "call_id": "call_B", "output": [{"type": "input_text", "text": "boom"}]},
				{"type": "message", "role": "user", "content": "thanks"},
				{"type": "message", "role": "developer", "content": "Be brief."}
			],
			"tools": [{"type": "function", "name": "ls"}, {"type": "namespace", "name": "fs", "tools": [{"type": "function", "name": "cat"}]}]
		}`,
		WireMessages: `{
			"model": "m", "max_tokens": 300,
			"system": [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Use tools.", "cache_control": {"type": "ephemeral"}}],
			"messages": [
				{"role": "user", "content": [{"type": "text", "text": "list files"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]},
				{"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "Looking."}]},
				{"role": "assistant", "content": [{"type": "tool_use", "id": "call_A", "name": "ls", "input": {"dir": "."}}]},
				{"role": "assistant", "content": [{"type": "tool_use", "id": "call_B", "name": "cat", "input": {"path": "x"}}]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "call_A", "content": "a.txt"},
					{"type": "tool_result", "tool_use_id": "call_B", "content": [{"type": "text", "text": "boom"}], "is_error": true},
					{"type": "text", "text": "thanks"}]},
				{"role": "system", "content": "Be brief."}
			],
			"tools": [{"name": "ls", "input_schema": {"type": "object"}}, {"name": "cat", "input_schema": {"type": "object"}}]
		}`,
	}
	for _, wire := range []string{WireChat, WireResponses, WireMessages} {
		t.Run(wire, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "ok"}}}})
			resp := post(t.Context(), t, s.URL()+wirePaths[wire], bodies[wire])
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			io.Copy(io.Discard, resp.Body)
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests logged, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Wire != wire || got.Model != "m" || got.Stream != (wire == WireResponses) || got.MaxTokens != 300 {
				t.Errorf("wire %q model %q stream %v max tokens %d", got.Wire, got.Model, got.Stream, got.MaxTokens)
			}
			if string(got.Body) != bodies[wire] {
				t.Errorf("Body is not the body sent")
			}
			if got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Header lacks the request's Content-Type: %v", got.Header)
			}
			for i := range got.Messages {
				got.Messages[i].ToolCalls = compactArgs(t, got.Messages[i].ToolCalls)
			}
			want := []Message{
				{Role: "user", Text: "list files"},
				{Role: "assistant", Text: "Looking.", ToolCalls: []ToolCall{
					{ID: "call_A", Name: "ls", Args: json.RawMessage(`{"dir":"."}`)},
					{ID: "call_B", Name: "cat", Args: json.RawMessage(`{"path":"x"}`)},
				}},
				{Role: "tool", ToolResults: []ToolResult{
					{CallID: "call_A", Content: "a.txt"},
					{CallID: "call_B", Content: "boom", IsError: wire == WireMessages},
				}},
				{Role: "user", Text: "thanks"},
				{Role: "system", Text: "Be brief."},
			}
			if got.System != "You are terse.\nUse tools." {
				t.Errorf("System %q", got.System)
			}
			if diff := cmp.Diff(want, got.Messages); diff != "" {
				t.Errorf("Messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"ls", "cat"}, got.Tools); diff != "" {
				t.Errorf("Tools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesFreeformToolRoundTrip(t *testing.T) {
	s := startServer(t, map[string]*Script{"": {Turns: []Turn{{Text: "ok"}}}})
	resp := post(t.Context(), t, s.URL()+"/v1/responses", `{"model":"codex","stream":true,"input":[
		{"type":"custom_tool_call","call_id":"call_P","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"},
		{"type":"custom_tool_call_output","call_id":"call_P","output":"Done!"}],
		"tools":[{"type":"custom","name":"apply_patch"},{"type":"web_search"}]}`)
	if _, err := decode(WireResponses, true, resp); err != nil {
		t.Fatal(err)
	}
	got := s.Requests()[0]
	want := []Message{
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_P", Name: "apply_patch", Args: json.RawMessage(`"*** Begin Patch\n*** End Patch"`)}}},
		{Role: "tool", ToolResults: []ToolResult{{CallID: "call_P", Content: "Done!"}}},
	}
	if diff := cmp.Diff(want, got.Messages); diff != "" {
		t.Errorf("Messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"apply_patch", "web_search"}, got.Tools); diff != "" {
		t.Errorf("Tools (-want +got):\n%s", diff)
	}
}

func TestAnthropicBetaQueryAndCountTokens(t *testing.T) {
	s := startServer(t, map[string]*Script{"claude-x": {Turns: []Turn{{Text: "ok"}}}})
	resp := post(t.Context(), t, s.URL()+"/v1/messages?beta=true", userBody(WireMessages, "claude-x", true, "hi"))
	if _, err := decode(WireMessages, true, resp); err != nil {
		t.Fatal(err)
	}
	// 4 + 8 characters of prompt: 3 tokens. Counting plays no turn.
	resp = post(t.Context(), t, s.URL()+"/v1/messages/count_tokens?beta=true",
		`{"model":"claude-x","system":"be kind","messages":[{"role":"user","content":"hello"}]}`)
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("count_tokens: status %d, %v", resp.StatusCode, err)
	}
	if n.InputTokens != 3 {
		t.Errorf("input_tokens = %d, want 3", n.InputTokens)
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("%d requests logged, want 1 (count_tokens is not logged)", got)
	}
}

func ExampleServer() {
	s := New(nil)
	sc, err := LoadScript(strings.NewReader(`{"turns": [{"text": "Hello from the script."}]}`))
	if err != nil {
		panic(err)
	}
	if err := s.SetScript("", sc); err != nil {
		panic(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer s.Close()

	resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model": "any", "messages": [{"role": "user", "content": "hi"}]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var r struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		panic(err)
	}
	fmt.Println(r.Choices[0].Message.Content)
	fmt.Println(s.Requests()[0].Messages[0].Text, s.Remaining(""))
	// Output:
	// Hello from the script.
	// hi 0
}
