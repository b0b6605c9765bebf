package scripted

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
)

// The tools offered in the langchaingo tests.
var lcTools = []llms.Tool{
	{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file", Description: "Read a file.", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"},
	}}},
	{Type: "function", Function: &llms.FunctionDefinition{Name: "run", Description: "Run a command.", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}},
	}}},
}

// lcScript: two parallel tool calls with reported usage, then an answer.
func lcScript() *Script {
	return &Script{Turns: []Turn{
		{
			Text: "Reading and testing.",
			ToolCalls: []ToolCall{
				{Name: "read_file", Args: json.RawMessage(`{"path":"greet.sh"}`)},
				{Name: "run", Args: json.RawMessage(`{"cmd":"sh test.sh"}`)},
			},
			Usage: &Usage{Input: 321, Output: 45, CachedInput: 300},
		},
		{Text: "greet.sh prints Helo; test.sh fails."},
	}}
}

// streamOpts returns the call options of one stream mode, and a check that
// the stream reached the caller.
func streamOpts(stream bool) ([]llms.CallOption, func(t *testing.T)) {
	if !stream {
		return nil, func(*testing.T) {}
	}
	var chunks int
	opt := llms.WithStreamingFunc(func(context.Context, []byte) error { chunks++; return nil })
	return []llms.CallOption{opt}, func(t *testing.T) {
		t.Helper()
		if chunks == 0 {
			t.Errorf("the streaming func saw no chunk")
		}
	}
}

func TestLangchaingoOpenAI(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			s := startServer(t, map[string]*Script{"gpt-scripted": lcScript()})
			llm, err := openai.New(openai.WithBaseURL(s.URL()+"/v1"), openai.WithToken("x"), openai.WithModel("gpt-scripted"))
			if err != nil {
				t.Fatal(err)
			}
			opts, checkStreamed := streamOpts(stream)
			opts = append(opts, llms.WithTools(lcTools))
			history := []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeSystem, "You fix typos."),
				llms.TextParts(llms.ChatMessageTypeHuman, "Fix greet.sh."),
			}
			resp, err := llm.GenerateContent(t.Context(), history, opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkStreamed(t)
			// OpenAI: one choice, holding the text and every call.
			if len(resp.Choices) != 1 {
				t.Fatalf("%d choices, want 1", len(resp.Choices))
			}
			c := resp.Choices[0]
			if c.Content != "Reading and testing." {
				t.Errorf("content %q", c.Content)
			}
			if len(c.ToolCalls) != 2 {
				t.Fatalf("%d tool calls, want 2: %+v", len(c.ToolCalls), c.ToolCalls)
			}
			for i, want := range []struct{ name, args string }{{"read_file", `{"path":"greet.sh"}`}, {"run", `{"cmd":"sh test.sh"}`}} {
				tc := c.ToolCalls[i]
				if tc.ID == "" || tc.Type != "function" || tc.FunctionCall.Name != want.name || tc.FunctionCall.Arguments != want.args {
					t.Errorf("call %d: %+v %+v, want %s %s", i, tc, tc.FunctionCall, want.name, want.args)
				}
			}
			if c.ToolCalls[0].ID == c.ToolCalls[1].ID {
				t.Errorf("both calls have id %q", c.ToolCalls[0].ID)
			}
			if c.StopReason != "tool_calls" {
				t.Errorf("stop reason %q", c.StopReason)
			}
			gi := c.GenerationInfo
			if gi["PromptTokens"] != 321 || gi["CompletionTokens"] != 45 || gi["TotalTokens"] != 366 || gi["PromptCachedTokens"] != 300 {
				t.Errorf("usage in GenerationInfo: prompt %v completion %v total %v cached %v",
					gi["PromptTokens"], gi["CompletionTokens"], gi["TotalTokens"], gi["PromptCachedTokens"])
			}

			// Send the results back. OpenAI takes the assistant message
			// whole: its text and both calls in one MessageContent, then
			// one tool message per result.
			ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: c.Content}}}
			for _, tc := range c.ToolCalls {
				ai.Parts = append(ai.Parts, tc)
			}
			history = append(history, ai,
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: c.ToolCalls[0].ID, Name: "read_file", Content: "echo Helo"}}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: c.ToolCalls[1].ID, Name: "run", Content: "FAIL: want Hello"}}},
			)
			resp, err = llm.GenerateContent(t.Context(), history, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Choices[0].Content; got != "greet.sh prints Helo; test.sh fails." || len(resp.Choices[0].ToolCalls) != 0 {
				t.Errorf("second answer %q with %d calls", got, len(resp.Choices[0].ToolCalls))
			}

			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests logged, want 2", len(reqs))
			}
			r := reqs[1]
			if r.Wire != WireChat || r.Model != "gpt-scripted" || r.Stream != stream || r.System != "You fix typos." {
				t.Errorf("request: wire %q model %q stream %v system %q", r.Wire, r.Model, r.Stream, r.System)
			}
			if diff := cmp.Diff([]string{"read_file", "run"}, r.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			want := []Message{
				{Role: "user", Text: "Fix greet.sh."},
				{Role: "assistant", Text: "Reading and testing.", ToolCalls: []ToolCall{
					{ID: c.ToolCalls[0].ID, Name: "read_file", Args: json.RawMessage(`{"path":"greet.sh"}`)},
					{ID: c.ToolCalls[1].ID, Name: "run", Args: json.RawMessage(`{"cmd":"sh test.sh"}`)},
				}},
				{Role: "tool", ToolResults: []ToolResult{
					{CallID: c.ToolCalls[0].ID, Content: "echo Helo"},
					{CallID: c.ToolCalls[1].ID, Content: "FAIL: want Hello"},
				}},
			}
			if diff := cmp.Diff(want, r.Messages); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLangchaingoAnthropic(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			s := startServer(t, map[string]*Script{"claude-scripted": lcScript()})
			llm, err := anthropic.New(anthropic.WithBaseURL(s.URL()+"/v1"), anthropic.WithToken("x"), anthropic.WithModel("claude-scripted"))
			if err != nil {
				t.Fatal(err)
			}
			opts, checkStreamed := streamOpts(stream)
			opts = append(opts, llms.WithTools(lcTools), llms.WithMaxTokens(500))
			history := []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeSystem, "You fix typos."),
				llms.TextParts(llms.ChatMessageTypeHuman, "Fix greet.sh."),
			}
			resp, err := llm.GenerateContent(t.Context(), history, opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkStreamed(t)
			// Anthropic: one choice per content block — the text, then
			// each call.
			if len(resp.Choices) != 3 {
				t.Fatalf("%d choices, want 3 (text, call, call)", len(resp.Choices))
			}
			if resp.Choices[0].Content != "Reading and testing." || len(resp.Choices[0].ToolCalls) != 0 {
				t.Errorf("choice 0: %q with %d calls", resp.Choices[0].Content, len(resp.Choices[0].ToolCalls))
			}
			var calls []llms.ToolCall
			for i, want := range []struct{ name, args string }{{"read_file", `{"path":"greet.sh"}`}, {"run", `{"cmd":"sh test.sh"}`}} {
				c := resp.Choices[i+1]
				if len(c.ToolCalls) != 1 {
					t.Fatalf("choice %d has %d calls, want 1", i+1, len(c.ToolCalls))
				}
				tc := c.ToolCalls[0]
				if !strings.HasPrefix(tc.ID, "toolu_") || tc.FunctionCall.Name != want.name || tc.FunctionCall.Arguments != want.args {
					t.Errorf("choice %d: %+v %+v, want %s %s", i+1, tc, tc.FunctionCall, want.name, want.args)
				}
				if c.StopReason != "tool_use" {
					t.Errorf("choice %d: stop reason %q", i+1, c.StopReason)
				}
				calls = append(calls, tc)
			}
			for i, c := range resp.Choices {
				gi := c.GenerationInfo
				// Anthropic's input_tokens leave out the cache reads.
				if gi["InputTokens"] != 21 || gi["OutputTokens"] != 45 || gi["CacheReadInputTokens"] != 300 {
					t.Errorf("choice %d usage: input %v output %v cache read %v; want 21, 45, 300",
						i, gi["InputTokens"], gi["OutputTokens"], gi["CacheReadInputTokens"])
				}
			}

			// Send the results back. langchaingo's anthropic provider only
			// sends the first part of an AI or tool message, so each part
			// goes in a MessageContent of its own; the server merges them
			// back into one assistant turn and one set of results.
			history = append(history,
				llms.TextParts(llms.ChatMessageTypeAI, resp.Choices[0].Content),
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0]}},
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[1]}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: calls[0].ID, Name: "read_file", Content: "echo Helo"}}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: calls[1].ID, Name: "run", Content: "FAIL: want Hello"}}},
			)
			resp, err = llm.GenerateContent(t.Context(), history, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) != 1 || resp.Choices[0].Content != "greet.sh prints Helo; test.sh fails." || resp.Choices[0].StopReason != "end_turn" {
				t.Errorf("second answer: %d choices, first %q (%s)", len(resp.Choices), resp.Choices[0].Content, resp.Choices[0].StopReason)
			}

			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests logged, want 2", len(reqs))
			}
			r := reqs[1]
			if r.Wire != WireMessages || r.Model != "claude-scripted" || r.Stream != stream || r.System != "You fix typos." || r.MaxTokens != 500 {
				t.Errorf("request: wire %q model %q stream %v system %q max tokens %d", r.Wire, r.Model, r.Stream, r.System, r.MaxTokens)
			}
			if r.Header.Get("x-api-key") != "x" || r.Header.Get("anthropic-version") == "" {
				t.Errorf("headers %v", r.Header)
			}
			want := []Message{
				{Role: "user", Text: "Fix greet.sh."},
				{Role: "assistant", Text: "Reading and testing.", ToolCalls: []ToolCall{
					{ID: calls[0].ID, Name: "read_file", Args: json.RawMessage(`{"path":"greet.sh"}`)},
					{ID: calls[1].ID, Name: "run", Args: json.RawMessage(`{"cmd":"sh test.sh"}`)},
				}},
				{Role: "tool", ToolResults: []ToolResult{
					{CallID: calls[0].ID, Content: "echo Helo"},
					{CallID: calls[1].ID, Content: "FAIL: want Hello"},
				}},
			}
			if diff := cmp.Diff(want, r.Messages); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLangchaingoErrors(t *testing.T) {
	s := startServer(t, map[string]*Script{"": {Turns: []Turn{
		{Error: &HTTPError{Status: 429, Message: "slow down", RetryAfterS: 3}},
		{Error: &HTTPError{Status: 529, Message: "overloaded"}},
	}}})
	oa, err := openai.New(openai.WithBaseURL(s.URL()+"/v1"), openai.WithToken("x"))
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.WithBaseURL(s.URL()+"/v1"), anthropic.WithToken("x"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}
	for _, tc := range []struct {
		llm  llms.Model
		want string
	}{
		{oa, "status code: 429: slow down"},
		{an, "status code: 529: overloaded"},
		{oa, `script for model "gpt-3.5-turbo" (default script) has no turn left (played 2)`},
	} {
		if _, err := tc.llm.GenerateContent(t.Context(), msgs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}
