// Package model is the built-in worker's line to a language model: one
// Client over a profile's provider (OpenAI-compatible, Anthropic, Ollama
// through its OpenAI endpoint), built on langchaingo. It makes
// non-streaming calls, retries busy or lost attempts with backoff (Retry),
// falls back to the profile's next model when one keeps failing, reads usage
// from every answer and prices it with an embedded, versioned table
// (Prices). It knows nothing of jobs, tools or the hub: it must never log or
// return a key, and never guess a price it does not have.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/hub-agents/hub/internal/micros"
)

// Providers.
const (
	OpenAI    = "openai"    // any OpenAI-compatible Chat Completions endpoint
	Anthropic = "anthropic" // the Anthropic Messages API
	Ollama    = "ollama"    // a local Ollama, through its OpenAI-compatible /v1 (its native API drops tools)
	Gemini    = "gemini"    // Google's Gemini API (generateContent), for the agents that speak it
)

// DefaultBaseURL is where each provider answers when a profile names no base URL.
var DefaultBaseURL = map[string]string{
	OpenAI:    "https://api.openai.com/v1",
	Anthropic: "https://api.anthropic.com/v1",
	Ollama:    "http://127.0.0.1:11434/v1",
	Gemini:    "https://generativelanguage.googleapis.com",
	Responses: ChatGPTBaseURL,
}

// Options build a Client.
type Options struct {
	Provider string
	BaseURL  string // default DefaultBaseURL[Provider]
	Key      string // required for OpenAI and Anthropic; never logged
	// Models are tried in order: the first, then the fallbacks.
	Models []string
	// MaxTokens caps each answer (default 8192).
	MaxTokens int
	// Prices prices the calls (nil: the embedded table).
	Prices *Table
	// Free marks a provider that costs nothing (a local model): cost known, zero.
	Free bool
	// ContextWindow overrides the model's context size in tokens.
	ContextWindow int
	// Retry tunes retries (nil: defaults).
	Retry *Retry
	// Auth, if set, gives each request its credentials in place of Key (a
	// login's token, fresh at each call); after a 401 it is asked once for
	// a fresh one and the request goes again.
	Auth Authorizer
}

// Authorizer sets a request's credentials. retry is true after the API
// refused the last ones.
type Authorizer interface {
	Authorize(ctx context.Context, h http.Header, retry bool) error
}

// Client calls a model. It is safe for concurrent use.
type Client struct {
	provider  string
	models    []string
	llms      []llms.Model
	maxTokens int
	prices    *Table
	free      bool
	window    int
	calls     atomic.Int64
}

// New checks o and builds the client; it makes no network call.
func New(o Options) (*Client, error) {
	if o.Provider == Gemini {
		return nil, errors.New("the built-in worker speaks OpenAI-compatible and Anthropic endpoints, not Gemini's generateContent: " +
			"pick the gemini engine for a gemini profile, or make an openai profile with base URL https://generativelanguage.googleapis.com/v1beta/openai")
	}
	if _, ok := DefaultBaseURL[o.Provider]; !ok {
		return nil, fmt.Errorf("unknown provider %q; use openai (any OpenAI-compatible endpoint), anthropic, ollama or responses", o.Provider)
	}
	if len(o.Models) == 0 || strings.TrimSpace(o.Models[0]) == "" {
		return nil, errors.New("no model named; set the profile's model")
	}
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL[o.Provider]
	}
	key := o.Key
	switch {
	case key == "" && o.Provider == Ollama:
		key = "ollama" // Ollama ignores it; langchaingo insists on one
	case key == "" && o.Auth != nil:
		key = "login" // replaced on every request by Auth
	case key == "":
		return nil, fmt.Errorf("provider %s needs an API key; put it in the environment or in hub's env file (hub profile set --key-stdin)", o.Provider)
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 8192
	}
	if o.Prices == nil {
		t, err := Prices("")
		if err != nil {
			return nil, err
		}
		o.Prices = t
	}
	rt := o.Retry
	if rt == nil {
		rt = &Retry{}
	}
	hc := &http.Client{Transport: rt}
	if o.Auth != nil {
		hc.Transport = authTransport{base: rt, auth: o.Auth}
	}
	c := &Client{provider: o.Provider, models: o.Models, maxTokens: o.MaxTokens, prices: o.Prices,
		free: o.Free || o.Provider == Ollama, window: o.ContextWindow}
	for _, m := range o.Models {
		var (
			l   llms.Model
			err error
		)
		switch o.Provider {
		case Anthropic:
			l, err = anthropic.New(anthropic.WithToken(key), anthropic.WithBaseURL(base), anthropic.WithModel(m), anthropic.WithHTTPClient(hc))
		case Responses:
			l = &responsesLLM{hc: hc, base: base, key: key, model: m}
		default:
			l, err = openai.New(openai.WithToken(key), openai.WithBaseURL(base), openai.WithModel(m), openai.WithHTTPClient(hc))
		}
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", m, err)
		}
		c.llms = append(c.llms, l)
	}
	return c, nil
}

// Model is the first model of the client.
func (c *Client) Model() string { return c.models[0] }

// MaxTokens is the cap on each answer.
func (c *Client) MaxTokens() int { return c.maxTokens }

// ContextWindow is the primary model's context in tokens: the override, the
// price table's figure, or a cautious 32k.
func (c *Client) ContextWindow() int {
	if c.window > 0 {
		return c.window
	}
	if p, ok := c.prices.Lookup(c.models[0]); ok && p.ContextWindow > 0 {
		return p.ContextWindow
	}
	return 32_000
}

// Price returns what model costs and whether that is known.
func (c *Client) Price(model string) (Price, bool) {
	if c.free {
		return Price{}, true
	}
	return c.prices.Lookup(model)
}

// Calls counts the calls made so far.
func (c *Client) Calls() int64 { return c.calls.Load() }

// Call is one request.
type Call struct {
	Messages  []llms.MessageContent
	Tools     []llms.Tool
	MaxTokens int // 0: the client's
}

// Reply is one answer.
type Reply struct {
	Text      string
	ToolCalls []llms.ToolCall
	Usage     Usage
	// Model is the model that answered (a fallback, when the first failed).
	Model      string
	CostMicros micros.Micros
	CostKnown  bool
	StopReason string
	// Failed lists the models that failed before Model answered, with why.
	Failed []string
}

// Generate makes one call, on the first model that answers.
func (c *Client) Generate(ctx context.Context, call Call) (*Reply, error) {
	maxTok := call.MaxTokens
	if maxTok <= 0 {
		maxTok = c.maxTokens
	}
	msgs := call.Messages
	if c.provider == Anthropic {
		msgs = splitForAnthropic(msgs)
	}
	opts := []llms.CallOption{llms.WithMaxTokens(maxTok)}
	if len(call.Tools) > 0 {
		opts = append(opts, llms.WithTools(call.Tools))
	}
	var failed []string
	for i, l := range c.llms {
		c.calls.Add(1)
		resp, err := l.GenerateContent(ctx, msgs, opts...)
		if ctx.Err() != nil {
			// langchaingo reports a cancelled call as a plain error.
			return nil, ctx.Err()
		}
		if err != nil {
			failed = append(failed, c.models[i]+": "+err.Error())
			continue
		}
		r, err := c.reply(resp, c.models[i])
		if err != nil {
			failed = append(failed, c.models[i]+": "+err.Error())
			continue
		}
		r.Failed = failed
		return r, nil
	}
	return nil, &CallError{Failures: failed}
}

// CallError is a call that no model answered.
type CallError struct{ Failures []string }

func (e *CallError) Error() string {
	return "the model call failed: " + strings.Join(e.Failures, "; ")
}

func (c *Client) reply(resp *llms.ContentResponse, model string) (*Reply, error) {
	if resp == nil || len(resp.Choices) == 0 {
		return nil, errors.New("empty answer")
	}
	r := &Reply{Model: model}
	var text []string
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		if s := strings.TrimSpace(ch.Content); s != "" {
			text = append(text, ch.Content)
		}
		for _, tc := range ch.ToolCalls {
			if tc.FunctionCall == nil || tc.FunctionCall.Name == "" {
				continue
			}
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", c.calls.Load(), len(r.ToolCalls))
			}
			tc.Type = "function"
			if strings.TrimSpace(tc.FunctionCall.Arguments) == "" {
				tc.FunctionCall.Arguments = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, tc)
		}
		if r.StopReason == "" {
			r.StopReason = ch.StopReason
		}
	}
	r.Text = strings.Join(text, "\n")
	// Usage is repeated in every choice of one answer (Anthropic makes a
	// choice per content block): read it once.
	r.Usage = usageOf(resp.Choices[0].GenerationInfo)
	if p, ok := c.Price(model); ok {
		r.CostMicros, r.CostKnown = p.Cost(r.Usage), true
	}
	return r, nil
}

func usageOf(gi map[string]any) Usage {
	n := func(keys ...string) int {
		t := 0
		for _, k := range keys {
			switch v := gi[k].(type) {
			case int:
				t += v
			case int64:
				t += int(v)
			case float64:
				t += int(v)
			case json.Number:
				i, _ := v.Int64()
				t += int(i)
			}
		}
		return t
	}
	if _, ok := gi["InputTokens"]; ok { // Anthropic: input_tokens excludes cache reads and writes
		return Usage{Input: n("InputTokens", "CacheReadInputTokens", "CacheCreationInputTokens"),
			Output: n("OutputTokens"), CachedInput: n("CacheReadInputTokens")}
	}
	return Usage{Input: n("PromptTokens"), Output: n("CompletionTokens"), CachedInput: n("PromptCachedTokens")}
}

// splitForAnthropic gives every part of an assistant message its own
// message: langchaingo's Anthropic provider sends only the first part of
// each, which would drop every tool call after the first. The API merges
// consecutive assistant turns back into one.
func splitForAnthropic(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, m := range msgs {
		if (m.Role != llms.ChatMessageTypeAI && m.Role != llms.ChatMessageTypeTool) || len(m.Parts) <= 1 {
			out = append(out, m)
			continue
		}
		for _, p := range m.Parts {
			out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
		}
	}
	return out
}

// EstimateTokens is a rough count (four bytes a token) of what a call
// sends: messages and tool schemas. It needs no tokenizer download.
func EstimateTokens(call Call) int {
	n := 0
	for _, m := range call.Messages {
		n += 4 // role and framing
		for _, p := range m.Parts {
			switch v := p.(type) {
			case llms.TextContent:
				n += len(v.Text) / 4
			case llms.ToolCall:
				if v.FunctionCall != nil {
					n += (len(v.FunctionCall.Name) + len(v.FunctionCall.Arguments)) / 4
				}
			case llms.ToolCallResponse:
				n += len(v.Content) / 4
			}
		}
	}
	for _, t := range call.Tools {
		if t.Function != nil {
			b, _ := json.Marshal(t.Function)
			n += len(b) / 4
		}
	}
	return n
}

// Estimate bounds what the next call could cost: its input at the
// estimated size and a full answer, on the priciest of the client's models.
// known is false when any of them has no price.
func (c *Client) Estimate(call Call) (cost micros.Micros, known bool) {
	in := EstimateTokens(call)
	maxTok := call.MaxTokens
	if maxTok <= 0 {
		maxTok = c.maxTokens
	}
	known = true
	for _, m := range c.models {
		p, ok := c.Price(m)
		if !ok {
			known = false
			continue
		}
		cost = max(cost, p.Cost(Usage{Input: in, Output: maxTok}))
	}
	return cost, known
}
