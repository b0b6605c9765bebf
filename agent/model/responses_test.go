package model_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/scripted"
)

// tokens is an Authorizer that hands out tok-1, tok-2, … : a new one each
// time it is asked to retry.
type tokens struct {
	mu      sync.Mutex
	n       int
	retries int
}

func (a *tokens) Authorize(_ context.Context, h http.Header, retry bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 || retry {
		a.n++
	}
	if retry {
		a.retries++
	}
	h.Set("Authorization", fmt.Sprintf("Bearer tok-%d", a.n))
	return nil
}

// The Responses client speaks the wire ChatGPT subscriptions take: the
// history as input items, tools as functions, a stream read to its end;
// a 401 gets one fresh token and the same request again.
func TestResponsesClientWithLogin(t *testing.T) {
	s := scripted.New(nil)
	args, _ := json.Marshal(map[string]string{"path": "a.txt"})
	if err := s.SetScript("m", &scripted.Script{Turns: []scripted.Turn{
		{Error: &scripted.HTTPError{Status: http.StatusUnauthorized, Message: "token expired"}},
		{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "read_file", Args: args}}, Usage: &scripted.Usage{Input: 100, Output: 10}},
		{Text: "done", Usage: &scripted.Usage{Input: 150, Output: 5}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	auth := &tokens{}
	c, err := model.New(model.Options{Provider: model.Responses, BaseURL: s.URL() + "/v1", Models: []string{"m"}, Auth: auth, Free: true})
	if err != nil {
		t.Fatal(err)
	}
	tool := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file", Description: "read",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief"), llms.TextParts(llms.ChatMessageTypeHuman, "read a.txt")}
	r, err := c.Generate(context.Background(), model.Call{Messages: msgs, Tools: []llms.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].FunctionCall.Name != "read_file" || r.ToolCalls[0].ID != "call_1" || r.Usage.Input != 100 || r.Usage.Output != 10 {
		t.Fatalf("reply %+v", r)
	}
	if auth.retries != 1 {
		t.Fatalf("%d retries after the 401, want 1", auth.retries)
	}
	msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{r.ToolCalls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_1", Name: "read_file", Content: "hello"}}})
	r, err = c.Generate(context.Background(), model.Call{Messages: msgs, Tools: []llms.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "done" || r.Usage.Input != 150 {
		t.Fatalf("second reply %+v", r)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-2"} {
		if got := reqs[i].Header.Get("Authorization"); got != want {
			t.Errorf("request %d sent %q, want %q", i, got, want)
		}
	}
	last := reqs[2]
	if last.Wire != scripted.WireResponses || !last.Stream || last.System != "be brief" {
		t.Fatalf("last request: wire %s stream %v system %q", last.Wire, last.Stream, last.System)
	}
	if n := len(last.Messages); n != 3 || last.Messages[2].Role != "tool" || last.Messages[2].ToolResults[0].Content != "hello" {
		t.Fatalf("last request's history: %+v", last.Messages)
	}
}
