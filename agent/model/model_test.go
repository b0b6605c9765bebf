package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/internal/micros"
)

func TestPriceLookup(t *testing.T) {
	tab, err := model.Prices("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ok   bool
		in   micros.Micros
	}{
		{"gpt-4o", true, 2_500_000},
		{"GPT-4o", true, 2_500_000},
		{"gpt-4o-mini", true, 150_000},
		{"gpt-4o-2024-08-06", true, 2_500_000},
		{"openai/gpt-4o-mini", true, 150_000},
		{"claude-3-5-sonnet-20241022", true, 3_000_000},
		{"claude-3-5-haiku-latest", true, 800_000},
		{"gpt-4o-super", false, 0}, // no looser guessing
		{"qwen2.5-coder", false, 0},
		{"", false, 0},
	} {
		p, ok := tab.Lookup(tc.name)
		if ok != tc.ok || p.InputPerM != tc.in {
			t.Errorf("Lookup(%q) = %+v, %v; want input %d, %v", tc.name, p, ok, tc.in, tc.ok)
		}
	}
}

func TestCost(t *testing.T) {
	p := model.Price{InputPerM: 3_000_000, OutputPerM: 15_000_000, CachedInputPerM: 300_000}
	for _, tc := range []struct {
		u    model.Usage
		want micros.Micros
	}{
		{model.Usage{}, 0},
		{model.Usage{Input: 1_000_000}, 3_000_000},
		{model.Usage{Input: 1000, Output: 100}, 3000 + 1500},
		{model.Usage{Input: 1000, CachedInput: 1000}, 300},
		{model.Usage{Input: 1}, 3},                      // 3 micro-dollars
		{model.Usage{Output: 1}, 15},                    // rounded up, never down
		{model.Usage{Input: 10, CachedInput: 20}, 3},    // cached cannot exceed input
		{model.Usage{Input: -5, Output: -1}, 0},         // nonsense counts nothing
		{model.Usage{Input: 333, Output: 7}, 999 + 105}, // integers throughout
	} {
		if got := p.Cost(tc.u); got != tc.want {
			t.Errorf("Cost(%+v) = %d, want %d", tc.u, got, tc.want)
		}
	}
}

func TestPriceOverrides(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"version":"mine","models":{"my-model":{"input":1,"output":2},"gpt-4o":{"input":9,"output":9}}}`)
	tab, err := model.Prices(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tab.Lookup("my-model"); !ok || p.InputPerM != 1_000_000 || p.CachedInputPerM != 1_000_000 {
		t.Errorf("override my-model = %+v, %v", p, ok)
	}
	if p, _ := tab.Lookup("gpt-4o"); p.InputPerM != 9_000_000 {
		t.Errorf("override did not replace gpt-4o: %+v", p)
	}
	if !strings.Contains(tab.Version, "mine") {
		t.Errorf("version %q does not name the overrides", tab.Version)
	}
	for _, bad := range []string{`{`, `{"models":{"x":{"input":1}}}`, `{"models":{"x":{"input":-1,"output":1}}}`, `{"models":{},"extra":1}`} {
		write(bad)
		if _, err := model.Prices(path); err == nil {
			t.Errorf("Prices accepted %s", bad)
		}
	}
	if _, err := model.Prices(filepath.Join(dir, "absent.json")); err != nil {
		t.Errorf("an absent override file is fine, got %v", err)
	}
}

// server starts a scripted model server with one script per model.
func server(t *testing.T, scripts map[string]*scripted.Script) *scripted.Server {
	t.Helper()
	s := scripted.New(nil)
	for m, sc := range scripts {
		if err := s.SetScript(m, sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func script(turns ...scripted.Turn) *scripted.Script { return &scripted.Script{Turns: turns} }

func fastRetry() *model.Retry {
	return &model.Retry{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Attempts: 3}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func hello() model.Call {
	return model.Call{Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")}}
}

func TestRetriesBusyAndLostAnswers(t *testing.T) {
	for _, provider := range []string{model.OpenAI, model.Anthropic} {
		t.Run(provider, func(t *testing.T) {
			srv := server(t, map[string]*scripted.Script{"m": script(
				scripted.Turn{Error: &scripted.HTTPError{Status: 429, RetryAfterS: 0}},
				scripted.Turn{Error: &scripted.HTTPError{Status: 529}},
				scripted.Turn{Text: "hi", Usage: &scripted.Usage{Input: 10, Output: 2}},
				scripted.Turn{Text: "cut", Drop: true},
				scripted.Turn{Text: "again", Usage: &scripted.Usage{Input: 10, Output: 2}},
			)})
			var retries []string
			rt := fastRetry()
			rt.Attempts = 4
			rt.OnRetry = func(n int, why string, _ time.Duration) { retries = append(retries, why) }
			c, err := model.New(model.Options{Provider: provider, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"m"}, Retry: rt, Free: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Generate(ctxT(t), hello())
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != "hi" || r.Usage.Input != 10 || r.Usage.Output != 2 || !r.CostKnown {
				t.Errorf("reply %+v", r)
			}
			r, err = c.Generate(ctxT(t), hello())
			if err != nil {
				t.Fatalf("a dropped answer was not retried: %v", err)
			}
			if r.Text != "again" {
				t.Errorf("second reply %q", r.Text)
			}
			if len(retries) != 3 || !strings.Contains(retries[0], "429") || !strings.Contains(retries[1], "529") || !strings.Contains(retries[2], "cut off") {
				t.Errorf("retries %q", retries)
			}
			if n := len(srv.Requests()); n != 5 {
				t.Errorf("%d requests, want 5", n)
			}
		})
	}
}

func TestRetryGivesUp(t *testing.T) {
	srv := server(t, map[string]*scripted.Script{"m": script(
		scripted.Turn{Error: &scripted.HTTPError{Status: 500}},
		scripted.Turn{Error: &scripted.HTTPError{Status: 500}},
		scripted.Turn{Error: &scripted.HTTPError{Status: 500}},
		scripted.Turn{Text: "never reached"},
	)})
	c, err := model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"m"}, Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(ctxT(t), hello())
	var ce *model.CallError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	srv := server(t, map[string]*scripted.Script{"m": script(
		scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "bad request"}},
		scripted.Turn{Text: "never reached"},
	)})
	c, _ := model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"m"}, Retry: fastRetry()})
	if _, err := c.Generate(ctxT(t), hello()); err == nil {
		t.Fatal("a 400 succeeded")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a 400 was sent %d times", n)
	}
}

func TestFallback(t *testing.T) {
	srv := server(t, map[string]*scripted.Script{
		"first":  script(scripted.Turn{Error: &scripted.HTTPError{Status: 503}}, scripted.Turn{Error: &scripted.HTTPError{Status: 503}}, scripted.Turn{Error: &scripted.HTTPError{Status: 503}}),
		"second": script(scripted.Turn{Text: "from the fallback", Usage: &scripted.Usage{Input: 1000, Output: 100}}),
	})
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"models":{"second":{"input":1,"output":10}}}`), 0o600)
	tab, err := model.Prices(prices)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"first", "second"}, Retry: fastRetry(), Prices: tab})
	r, err := c.Generate(ctxT(t), hello())
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "second" || r.Text != "from the fallback" || len(r.Failed) != 1 || !strings.HasPrefix(r.Failed[0], "first:") {
		t.Errorf("reply %+v", r)
	}
	if !r.CostKnown || r.CostMicros != 1000+1000 {
		t.Errorf("cost %d known %v, want 2000 micro-dollars", r.CostMicros, r.CostKnown)
	}
}

func TestUnknownPriceIsUnknown(t *testing.T) {
	srv := server(t, map[string]*scripted.Script{"mystery-model": script(scripted.Turn{Text: "x"})})
	c, _ := model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"mystery-model"}})
	r, err := c.Generate(ctxT(t), hello())
	if err != nil {
		t.Fatal(err)
	}
	if r.CostKnown || r.CostMicros != 0 {
		t.Errorf("an unpriced model reported cost %d known %v", r.CostMicros, r.CostKnown)
	}
	if _, known := c.Estimate(hello()); known {
		t.Error("Estimate claims to know an unpriced model's cost")
	}
}

// TestAnthropicParallelHistory sends back an assistant turn with text and
// two tool calls: every call must reach the wire (langchaingo alone sends
// only the first part of an assistant message).
func TestAnthropicParallelHistory(t *testing.T) {
	srv := server(t, map[string]*scripted.Script{"claude-x": script(
		scripted.Turn{Text: "reading both", ToolCalls: []scripted.ToolCall{
			{ID: "toolu_a", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)},
			{ID: "toolu_b", Name: "read_file", Args: json.RawMessage(`{"path":"b.txt"}`)}}},
		scripted.Turn{Text: "done"},
	)})
	c, _ := model.New(model.Options{Provider: model.Anthropic, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"claude-x"}})
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "sys"), llms.TextParts(llms.ChatMessageTypeHuman, "go")}
	r, err := c.Generate(ctxT(t), model.Call{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 2 || r.Text != "reading both" {
		t.Fatalf("reply %+v", r)
	}
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextPart(r.Text)}}
	for _, tc := range r.ToolCalls {
		ai.Parts = append(ai.Parts, tc)
	}
	msgs = append(msgs, ai)
	for _, tc := range r.ToolCalls {
		msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: "content of " + tc.ID}}})
	}
	if _, err := c.Generate(ctxT(t), model.Call{Messages: msgs, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	var calls, results []string
	for _, m := range reqs[1].Messages {
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.ID)
		}
		for _, tr := range m.ToolResults {
			results = append(results, tr.CallID+"="+tr.Content)
		}
	}
	if diff := cmp.Diff([]string{"toolu_a", "toolu_b"}, calls); diff != "" {
		t.Errorf("tool calls sent back (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"toolu_a=content of toolu_a", "toolu_b=content of toolu_b"}, results); diff != "" {
		t.Errorf("tool results sent back (-want +got):\n%s", diff)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	for _, o := range []model.Options{
		{Provider: "gemini", Models: []string{"x"}, Key: "k"},
		{Provider: model.OpenAI, Key: "k"},
		{Provider: model.OpenAI, Models: []string{"gpt-4o"}},
		{Provider: model.Anthropic, Models: []string{"claude"}},
	} {
		if _, err := model.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	if _, err := model.New(model.Options{Provider: model.Ollama, Models: []string{"qwen"}}); err != nil {
		t.Errorf("ollama needs no key: %v", err)
	}
}

func TestCancelStopsAWaitingCall(t *testing.T) {
	taken := make(chan struct{}, 1)
	srv := scripted.New(&scripted.Options{Logf: func(format string, _ ...any) {
		if strings.Contains(format, "turn %d") {
			select {
			case taken <- struct{}{}:
			default:
			}
		}
	}})
	if err := srv.SetScript("m", script(scripted.Turn{Text: "late", DelayMS: 30_000})); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, _ := model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "k", Models: []string{"m"}})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Generate(ctx, hello()); errc <- err }()
	select {
	case <-taken:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the server")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
}
