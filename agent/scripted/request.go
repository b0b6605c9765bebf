package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// The wire formats, as found in Request.Wire.
const (
	WireChat      = "chat"      // OpenAI Chat Completions, POST /v1/chat/completions
	WireResponses = "responses" // OpenAI Responses, POST /v1/responses
	WireMessages  = "messages"  // Anthropic Messages, POST /v1/messages
	// WireGemini is Google's Gemini API (v1beta), POST
	// /v1beta/models/{model}:generateContent or :streamGenerateContent.
	WireGemini = "gemini"
)

// A Request is a model request as the server received it, parsed into a
// wire-neutral form.
type Request struct {
	Wire string // WireChat, WireResponses, WireMessages or WireGemini
	// Model is the request's "model" field; on the Gemini wire, the model
	// named in the path.
	Model  string
	Stream bool // the client asked for a stream
	// System joins, one per line, the top-level system prompt (Anthropic
	// "system", Responses "instructions", Gemini "systemInstruction") and
	// every system or developer
	// message that comes before the first other message.
	System string
	// Messages is the history, normalised: see Message.
	Messages  []Message
	Tools     []string // names of the tools offered, in order
	MaxTokens int      // the output token limit asked for; 0 when none
	// Namespaces maps the name of each tool offered inside a namespace (the
	// Responses wire) to that namespace; a call must name it.
	Namespaces map[string]string
	Body       json.RawMessage // the body as received
	Header     http.Header     // the headers as received (credentials included)
	// Query is the URL's query as received: Gemini's ?alt=sse, and its
	// ?key= when the client sends its API key there (credentials included).
	Query url.Values
}

// A Message is one entry of a normalised history. Role is "user",
// "assistant", "tool" or "system".
//
// Normalisation makes the same conversation read the same whatever the wire:
// consecutive assistant entries (a Responses message item and its
// function_call items; Anthropic assistant messages sent one block each) are
// merged into one assistant Message, text first, tool calls in order;
// consecutive tool results (Chat "tool" messages, Responses
// function_call_output items, Anthropic tool_result blocks) are merged into
// one "tool" Message. An Anthropic user message holding tool results becomes
// a "tool" Message followed, when it also holds text, by a "user" Message;
// so does a Gemini user content holding functionResponse parts.
// System messages that come after the first other message stay in place with
// Role "system". Text parts of one entry are joined with newlines; parts that
// are not text (images, thinking, reasoning, Gemini thought parts) are left
// out.
type Message struct {
	Role        string
	Text        string
	ToolCalls   []ToolCall   // assistant only
	ToolResults []ToolResult // tool only
}

// A ToolResult is the result of one tool call, sent back by the client.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool // Anthropic is_error, Gemini's "error" key; the OpenAI wires have none
}

// history builds a normalised history.
type history struct {
	system []string
	msgs   []Message
	begun  bool // a non-system message was added
}

func (h *history) addSystem(text string) {
	if !h.begun {
		if text != "" {
			h.system = append(h.system, text)
		}
		return
	}
	h.msgs = append(h.msgs, Message{Role: "system", Text: text})
}

func (h *history) add(m Message) {
	h.begun = true
	if n := len(h.msgs); n > 0 && h.msgs[n-1].Role == m.Role {
		last := &h.msgs[n-1]
		switch m.Role {
		case "assistant":
			last.Text = joinText(last.Text, m.Text)
			last.ToolCalls = append(last.ToolCalls, m.ToolCalls...)
			return
		case "tool":
			last.ToolResults = append(last.ToolResults, m.ToolResults...)
			return
		}
	}
	h.msgs = append(h.msgs, m)
}

func (h *history) fill(r *Request) {
	r.System = strings.Join(h.system, "\n")
	r.Messages = h.msgs
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// part is one element of a content array, in any of the three wires.
type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`          // Anthropic tool_use
	Name      string          `json:"name"`        // Anthropic tool_use
	Input     json.RawMessage `json:"input"`       // Anthropic tool_use
	ToolUseID string          `json:"tool_use_id"` // Anthropic tool_result
	Content   json.RawMessage `json:"content"`     // Anthropic tool_result
	IsError   bool            `json:"is_error"`    // Anthropic tool_result
}

// parseContent reads a content value: absent, null, a string, or an array of
// parts. text joins the text parts.
func parseContent(raw json.RawMessage) (text string, parts []part, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		err = json.Unmarshal(raw, &text)
		return text, nil, err
	case '[':
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, err
		}
		for _, p := range parts {
			switch p.Type {
			case "text", "input_text", "output_text":
				text = joinText(text, p.Text)
			}
		}
		return text, parts, nil
	}
	kind := "a number"
	switch raw[0] {
	case '{':
		kind = "an object"
	case 't', 'f':
		kind = "a boolean"
	}
	return "", nil, fmt.Errorf("content must be a string or an array of parts, not %s", kind)
}

// rawArgs turns arguments sent as a string into JSON: as they are when they
// are JSON, else as a JSON string.
func rawArgs(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// chatRequest is the part of a Chat Completions request the server reads.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

// parseChat parses a Chat Completions body; includeUsage reports
// stream_options.include_usage.
func parseChat(body []byte) (r Request, includeUsage bool, err error) {
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return r, false, err
	}
	r = Request{Wire: WireChat, Model: cr.Model, Stream: cr.Stream, MaxTokens: cr.MaxCompletionTokens}
	if r.MaxTokens == 0 {
		r.MaxTokens = cr.MaxTokens
	}
	includeUsage = cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage
	for _, t := range cr.Tools {
		r.Tools = append(r.Tools, t.Function.Name)
	}
	var h history
	for i, m := range cr.Messages {
		text, _, err := parseContent(m.Content)
		if err != nil {
			return r, false, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			h.addSystem(text)
		case "user":
			h.add(Message{Role: "user", Text: text})
		case "assistant":
			msg := Message{Role: "assistant", Text: text}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Args: rawArgs(c.Function.Arguments)})
			}
			h.add(msg)
		case "tool":
			h.add(Message{Role: "tool", ToolResults: []ToolResult{{CallID: m.ToolCallID, Content: text}}})
		default:
			return r, false, fmt.Errorf("messages[%d]: unsupported role %q", i, m.Role)
		}
	}
	h.fill(&r)
	return r, includeUsage, nil
}

// responsesRequest is the part of a Responses request the server reads.
type responsesRequest struct {
	Model           string          `json:"model"`
	Stream          bool            `json:"stream"`
	Instructions    json.RawMessage `json:"instructions"`
	Input           json.RawMessage `json:"input"`
	Tools           []responsesTool `json:"tools"`
	MaxOutputTokens int             `json:"max_output_tokens"`
}

type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"` // type "namespace"
}

type responsesItem struct {
	Type      string          `json:"type"`
	Namespace string          `json:"namespace"` // function_call of a namespaced tool
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"` // function_call
	Input     string          `json:"input"`     // custom_tool_call
	Output    json.RawMessage `json:"output"`    // *_call_output
}

// toolNames lists the tools offered: a namespace lists its inner tools, a
// built-in tool without a name is listed by its type.
func toolNames(tools []responsesTool) []string {
	var names []string
	for _, t := range tools {
		switch {
		case t.Type == "namespace":
			names = append(names, toolNames(t.Tools)...)
		case t.Name != "":
			names = append(names, t.Name)
		default:
			names = append(names, t.Type)
		}
	}
	return names
}

// namespaces maps each namespaced tool's name to its namespace.
func namespaces(tools []responsesTool) map[string]string {
	var m map[string]string
	for _, t := range tools {
		if t.Type != "namespace" {
			continue
		}
		for _, in := range t.Tools {
			if m == nil {
				m = map[string]string{}
			}
			m[in.Name] = t.Name
		}
	}
	return m
}

func parseResponses(body []byte) (r Request, err error) {
	var rr responsesRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		return r, err
	}
	r = Request{Wire: WireResponses, Model: rr.Model, Stream: rr.Stream, MaxTokens: rr.MaxOutputTokens, Tools: toolNames(rr.Tools),
		Namespaces: namespaces(rr.Tools)}
	var h history
	instructions, _, err := parseContent(rr.Instructions)
	if err != nil {
		return r, fmt.Errorf("instructions: %w", err)
	}
	h.addSystem(instructions)
	input := bytes.TrimSpace(rr.Input)
	if len(input) > 0 && input[0] == '"' {
		var text string
		if err := json.Unmarshal(input, &text); err != nil {
			return r, fmt.Errorf("input: %w", err)
		}
		h.add(Message{Role: "user", Text: text})
		h.fill(&r)
		return r, nil
	}
	var items []responsesItem
	if len(input) > 0 && !bytes.Equal(input, []byte("null")) {
		if err := json.Unmarshal(input, &items); err != nil {
			return r, fmt.Errorf("input: %w", err)
		}
	}
	for i, it := range items {
		switch it.Type {
		case "", "message":
			text, _, err := parseContent(it.Content)
			if err != nil {
				return r, fmt.Errorf("input[%d]: %w", i, err)
			}
			switch it.Role {
			case "system", "developer":
				h.addSystem(text)
			case "user", "assistant":
				h.add(Message{Role: it.Role, Text: text})
			default:
				return r, fmt.Errorf("input[%d]: unsupported role %q", i, it.Role)
			}
		case "function_call":
			h.add(Message{Role: "assistant", ToolCalls: []ToolCall{{ID: it.CallID, Name: it.Name, Namespace: it.Namespace, Args: rawArgs(it.Arguments)}}})
		case "custom_tool_call":
			input, _ := json.Marshal(it.Input) // a string always marshals
			h.add(Message{Role: "assistant", ToolCalls: []ToolCall{{ID: it.CallID, Name: it.Name, Args: input}}})
		case "function_call_output", "custom_tool_call_output":
			text, _, err := parseContent(it.Output)
			if err != nil {
				return r, fmt.Errorf("input[%d] output: %w", i, err)
			}
			h.add(Message{Role: "tool", ToolResults: []ToolResult{{CallID: it.CallID, Content: text}}})
		default:
			// reasoning, web_search_call and other items carry no history
			// the log keeps.
		}
	}
	h.fill(&r)
	return r, nil
}

// messagesRequest is the part of an Anthropic Messages request the server
// reads.
type messagesRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	MaxTokens int `json:"max_tokens"`
}

func parseMessages(body []byte) (r Request, err error) {
	var mr messagesRequest
	if err := json.Unmarshal(body, &mr); err != nil {
		return r, err
	}
	r = Request{Wire: WireMessages, Model: mr.Model, Stream: mr.Stream, MaxTokens: mr.MaxTokens}
	for _, t := range mr.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	var h history
	system, _, err := parseContent(mr.System)
	if err != nil {
		return r, fmt.Errorf("system: %w", err)
	}
	h.addSystem(system)
	for i, m := range mr.Messages {
		text, parts, err := parseContent(m.Content)
		if err != nil {
			return r, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "system":
			h.addSystem(text)
		case "user":
			var results []ToolResult
			for j, p := range parts {
				if p.Type != "tool_result" {
					continue
				}
				content, _, err := parseContent(p.Content)
				if err != nil {
					return r, fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
				}
				results = append(results, ToolResult{CallID: p.ToolUseID, Content: content, IsError: p.IsError})
			}
			if len(results) > 0 {
				h.add(Message{Role: "tool", ToolResults: results})
			}
			if text != "" || len(results) == 0 {
				h.add(Message{Role: "user", Text: text})
			}
		case "assistant":
			msg := Message{Role: "assistant", Text: text}
			for _, p := range parts {
				if p.Type == "tool_use" {
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: p.ID, Name: p.Name, Args: bytes.Clone(p.Input)})
				}
			}
			h.add(msg)
		default:
			return r, fmt.Errorf("messages[%d]: unsupported role %q", i, m.Role)
		}
	}
	h.fill(&r)
	return r, nil
}

// geminiRequest is the part of a Gemini generateContent request the server
// reads. Field names are the camelCase ones Google's SDKs send.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	// Tools are read key by key: functionDeclarations, or a built-in tool
	// (googleSearch, codeExecution, …) listed by its key.
	Tools            []map[string]json.RawMessage `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// geminiContent is a Gemini Content: a role ("user", "model"; empty means
// "user") and its parts.
type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// geminiPart is one part of a Content; parts other than text, function
// calls and function responses (inlineData, fileData, executableCode, …)
// carry no history the log keeps.
type geminiPart struct {
	Text             string              `json:"text"`
	Thought          bool                `json:"thought"` // the text is the model's thinking
	FunctionCall     *geminiFunctionCall `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// geminiCounting is a countTokens body: the contents alone, or a whole
// generateContent request.
type geminiCounting struct {
	geminiRequest
	GenerateContentRequest *geminiRequest `json:"generateContentRequest"`
}

// parseGemini parses a generateContent body for model, streamed or not (the
// wire puts both in the path, not the body).
//
// Call ids: the Gemini API only recently gave function calls an "id", which
// a functionResponse echoes; older clients and older histories send neither.
// So that the log still pairs each result with its call, a call without an
// id gets "<name>#<k>", k counting the calls of that name from 1 in the
// order of contents, and a response without an id takes the id of the call
// it answers: the k-th response of a name answers the k-th call of that name
// (Gemini answers a turn's calls in the next content, in order). The ids are
// stable from one request to the next while the history only grows; a
// client that drops old contents (compression) renumbers them. A response
// left without a call (its call was dropped) gets "<name>#<k>" too.
func parseGemini(body []byte, model string, stream bool) (r Request, err error) {
	var gr geminiRequest
	if err := json.Unmarshal(body, &gr); err != nil {
		return r, err
	}
	return gr.request(model, stream)
}

func (gr *geminiRequest) request(model string, stream bool) (r Request, err error) {
	r = Request{Wire: WireGemini, Model: model, Stream: stream, MaxTokens: gr.GenerationConfig.MaxOutputTokens}
	for i, t := range gr.Tools {
		decls, ok := t["functionDeclarations"]
		if !ok {
			r.Tools = append(r.Tools, slices.Sorted(maps.Keys(t))...)
			continue
		}
		var fns []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(decls, &fns); err != nil {
			return r, fmt.Errorf("tools[%d].functionDeclarations: %w", i, err)
		}
		for _, f := range fns {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	var h history
	if si := gr.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			h.addSystem(p.Text)
		}
	}
	calls := map[string][]string{} // the ids of the calls of each name, in order
	answered := map[string]int{}   // how many responses of each name were read
	for i, c := range gr.Contents {
		var text string
		for _, p := range c.Parts {
			if !p.Thought {
				text = joinText(text, p.Text)
			}
		}
		switch c.Role {
		case "", "user", "function": // "function": function responses, in the API's first version
			var results []ToolResult
			for j, p := range c.Parts {
				fr := p.FunctionResponse
				if fr == nil {
					continue
				}
				res, err := geminiResult(fr.Response)
				if err != nil {
					return r, fmt.Errorf("contents[%d].parts[%d].functionResponse.response: %w", i, j, err)
				}
				if res.CallID = fr.ID; res.CallID == "" {
					k := answered[fr.Name]
					if k < len(calls[fr.Name]) {
						res.CallID = calls[fr.Name][k]
					} else {
						res.CallID = fmt.Sprintf("%s#%d", fr.Name, k+1)
					}
				}
				answered[fr.Name]++
				results = append(results, res)
			}
			if len(results) > 0 {
				h.add(Message{Role: "tool", ToolResults: results})
			}
			if text != "" || len(results) == 0 {
				h.add(Message{Role: "user", Text: text})
			}
		case "model":
			msg := Message{Role: "assistant", Text: text}
			for _, p := range c.Parts {
				fc := p.FunctionCall
				if fc == nil {
					continue
				}
				id := fc.ID
				if id == "" {
					id = fmt.Sprintf("%s#%d", fc.Name, len(calls[fc.Name])+1)
				}
				calls[fc.Name] = append(calls[fc.Name], id)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: fc.Name, Args: bytes.Clone(fc.Args)})
			}
			h.add(msg)
		default:
			return r, fmt.Errorf("contents[%d]: unsupported role %q", i, c.Role)
		}
	}
	h.fill(&r)
	return r, nil
}

// geminiResult reads a functionResponse's response, a JSON object. As the
// API documents it, an "output" key holds the function's output and an
// "error" key its error; an object with neither is the output as a whole.
// A string value is taken as it is, any other as JSON.
func geminiResult(raw json.RawMessage) (ToolResult, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ToolResult{}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return ToolResult{}, errors.New("must be a JSON object")
	}
	value := func(v json.RawMessage) string {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			return string(v)
		}
		return b.String()
	}
	if e, ok := obj["error"]; ok {
		return ToolResult{Content: value(e), IsError: true}, nil
	}
	if out, ok := obj["output"]; ok {
		return ToolResult{Content: value(out)}, nil
	}
	return ToolResult{Content: value(raw)}, nil
}

// tokens estimates the tokens of n characters: one per four, rounded up.
func tokens(n int) int { return (n + 3) / 4 }

func chars(s string) int { return utf8.RuneCountInString(s) }

// inputChars counts the characters of a request's prompt: system, history
// and tool names.
func (r *Request) inputChars() int {
	n := chars(r.System)
	for _, m := range r.Messages {
		n += chars(m.Text)
		for _, c := range m.ToolCalls {
			n += chars(c.Name) + chars(string(c.Args))
		}
		for _, res := range m.ToolResults {
			n += chars(res.Content)
		}
	}
	for _, t := range r.Tools {
		n += chars(t)
	}
	return n
}

// usage is the usage reported for turn t answering r.
func usage(t *Turn, r *Request) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	out := chars(t.Text)
	for _, c := range t.ToolCalls {
		out += chars(c.Name) + chars(c.args())
	}
	return Usage{Input: tokens(r.inputChars()), Output: tokens(out)}
}
