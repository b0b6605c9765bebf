package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Responses is the OpenAI Responses API as ChatGPT subscriptions reach it
// (what the Codex CLI speaks): streamed, unstored.
const Responses = "responses"

// ChatGPTBaseURL is where a ChatGPT subscription's Responses API answers.
const ChatGPTBaseURL = "https://chatgpt.com/backend-api/codex"

// responsesLLM is an llms.Model over POST <base>/responses. It sends the
// history as input items each time (store is false) and reads the
// response.completed event of the stream, which holds the whole answer.
type responsesLLM struct {
	hc    *http.Client
	base  string
	key   string
	model string
}

func (l *responsesLLM) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, options...)
}

type responsesTool struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

func (l *responsesLLM) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	var instructions []string
	input := []map[string]any{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch v := p.(type) {
			case llms.TextContent:
				switch m.Role {
				case llms.ChatMessageTypeSystem:
					instructions = append(instructions, v.Text)
				case llms.ChatMessageTypeAI:
					input = append(input, map[string]any{"type": "message", "role": "assistant",
						"content": []map[string]any{{"type": "output_text", "text": v.Text}}})
				default:
					input = append(input, map[string]any{"type": "message", "role": "user",
						"content": []map[string]any{{"type": "input_text", "text": v.Text}}})
				}
			case llms.ToolCall:
				if v.FunctionCall != nil {
					input = append(input, map[string]any{"type": "function_call", "call_id": v.ID,
						"name": v.FunctionCall.Name, "arguments": v.FunctionCall.Arguments})
				}
			case llms.ToolCallResponse:
				input = append(input, map[string]any{"type": "function_call_output", "call_id": v.ToolCallID, "output": v.Content})
			default:
				return nil, fmt.Errorf("the responses client sends text and tool calls only, not %T", p)
			}
		}
	}
	body := map[string]any{"model": l.model, "instructions": strings.Join(instructions, "\n\n"), "input": input,
		"store": false, "stream": true}
	if len(o.Tools) > 0 {
		var tools []responsesTool
		for _, t := range o.Tools {
			if t.Function != nil {
				tools = append(tools, responsesTool{Type: "function", Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
			}
		}
		body["tools"], body["tool_choice"], body["parallel_tool_calls"] = tools, "auto", true
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base+"/responses", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+l.key)
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	done, err := readCompleted(resp.Body)
	if err != nil {
		return nil, err
	}
	return done.content(), nil
}

// responsesReply is the part of a finished response the client reads.
type responsesReply struct {
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		CallID  string `json:"call_id"`
		Name    string `json:"name"`
		Args    string `json:"arguments"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		Input  int `json:"input_tokens"`
		Output int `json:"output_tokens"`
		Cached struct {
			Tokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
	Incomplete *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// readCompleted reads a server-sent event stream up to the response's end.
func readCompleted(r io.Reader) (*responsesReply, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var ev struct {
			Type     string          `json:"type"`
			Response *responsesReply `json:"response"`
			Message  string          `json:"message"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "response.completed", "response.incomplete":
			if ev.Response == nil {
				return nil, errors.New("the stream ended its response without it")
			}
			return ev.Response, nil
		case "response.failed":
			msg := "the response failed"
			if ev.Response != nil && ev.Response.Error != nil {
				msg += ": " + ev.Response.Error.Message
			}
			return nil, errors.New(msg)
		case "error":
			return nil, fmt.Errorf("the stream reported an error: %s", ev.Message)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the stream ended before the response completed")
}

func (r *responsesReply) content() *llms.ContentResponse {
	ch := &llms.ContentChoice{StopReason: "stop", GenerationInfo: map[string]any{
		"PromptTokens": r.Usage.Input, "CompletionTokens": r.Usage.Output, "PromptCachedTokens": r.Usage.Cached.Tokens}}
	var text []string
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Type == "output_text" {
					text = append(text, c.Text)
				}
			}
		case "function_call":
			ch.ToolCalls = append(ch.ToolCalls, llms.ToolCall{ID: it.CallID, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: it.Name, Arguments: it.Args}})
		}
	}
	ch.Content = strings.Join(text, "")
	if len(ch.ToolCalls) > 0 {
		ch.StopReason = "tool_calls"
	} else if r.Incomplete != nil && r.Incomplete.Reason != "" {
		ch.StopReason = r.Incomplete.Reason
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{ch}}
}
