package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// geminiModes are the Gemini wire's three ways to answer: one JSON object,
// a streamed JSON array, server-sent events.
var geminiModes = []struct {
	name        string
	stream, sse bool
}{
	{"json", false, false}, {"array", true, false}, {"sse", true, true},
}

// geminiURL is the URL of a Gemini call of model, in a mode.
func geminiURL(s *Server, model string, stream, sse bool) string {
	method := "generateContent"
	if stream {
		method = "streamGenerateContent"
	}
	u := s.URL() + "/v1beta/models/" + model + ":" + method
	if sse {
		u += "?alt=sse"
	}
	return u
}

// geminiUser is a minimal Gemini body: a system instruction, one user text.
func geminiUser(system, text string) string {
	b, _ := json.Marshal(map[string]any{
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": system}}},
		"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}},
	})
	return string(b)
}

// geminiChunk is a GenerateContentResponse as a client reads it, strictly:
// the fields that must be there are pointers.
type geminiChunk struct {
	Candidates []struct {
		Index   *int `json:"index"`
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

// decodeGemini reads a successful Gemini reply in any mode, putting its
// chunks together as the SDKs do, and checks what every client relies on:
// one candidate in each chunk, role "model", a finish reason and usage on
// the last chunk only, whole function calls.
func decodeGemini(resp *http.Response, stream, sse bool) (result, string, error) {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return result{}, "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	wantType := "application/json"
	if sse {
		wantType = "text/event-stream"
	}
	if ct := resp.Header.Get("Content-Type"); ct != wantType {
		return result{}, "", fmt.Errorf("content type %q, want %q", ct, wantType)
	}
	var chunks []geminiChunk
	switch {
	case sse:
		events, err := readSSE(resp.Body)
		if err != nil {
			return result{}, "", err
		}
		for i, e := range events {
			if e.name != "" {
				return result{}, "", fmt.Errorf("event %d is named %q; Gemini's are not", i, e.name)
			}
			var c geminiChunk
			if err := strictDecode(e.data, &c); err != nil {
				return result{}, "", fmt.Errorf("event %d: %w", i, err)
			}
			chunks = append(chunks, c)
		}
	case stream:
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return result{}, "", err
		}
		if err := strictDecode(string(b), &chunks); err != nil {
			return result{}, "", fmt.Errorf("array stream: %w", err)
		}
	default:
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return result{}, "", err
		}
		var c geminiChunk
		if err := strictDecode(string(b), &c); err != nil {
			return result{}, "", err
		}
		chunks = append(chunks, c)
	}
	if len(chunks) == 0 {
		return result{}, "", fmt.Errorf("no chunk")
	}
	var res result
	for i, c := range chunks {
		last := i == len(chunks)-1
		if len(c.Candidates) != 1 || c.Candidates[0].Index == nil || *c.Candidates[0].Index != 0 {
			return result{}, "", fmt.Errorf("chunk %d: want one candidate of index 0, got %+v", i, c.Candidates)
		}
		cand := c.Candidates[0]
		if cand.Content.Role != "model" {
			return result{}, "", fmt.Errorf("chunk %d: role %q", i, cand.Content.Role)
		}
		if (cand.FinishReason != "") != last || (c.UsageMetadata != nil) != last {
			return result{}, "", fmt.Errorf("chunk %d of %d: finish reason %q, usage %v: want both on the last chunk only", i+1, len(chunks), cand.FinishReason, c.UsageMetadata != nil)
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.Text != nil && p.FunctionCall == nil:
				res.Text += *p.Text
			case p.FunctionCall != nil && p.Text == nil:
				fc := p.FunctionCall
				if !json.Valid(fc.Args) {
					return result{}, "", fmt.Errorf("chunk %d: call %s: args %q", i, fc.Name, fc.Args)
				}
				res.Calls = append(res.Calls, ToolCall{ID: fc.ID, Name: fc.Name, Args: fc.Args})
			default:
				return result{}, "", fmt.Errorf("chunk %d: a part with neither or both of text and functionCall", i)
			}
		}
		if last {
			res.Finish = cand.FinishReason
			u := c.UsageMetadata
			if u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
				return result{}, "", fmt.Errorf("totalTokenCount %d != %d + %d", u.TotalTokenCount, u.PromptTokenCount, u.CandidatesTokenCount)
			}
			res.Usage = Usage{Input: u.PromptTokenCount, Output: u.CandidatesTokenCount, CachedInput: u.CachedContentTokenCount}
		}
	}
	if stream {
		res.Events = len(chunks)
	}
	return res, chunks[0].ModelVersion, nil
}

// strictDecode decodes one JSON value, refusing trailing data.
func strictDecode(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the value")
	}
	return nil
}

// geminiError reads Google's error answer.
func geminiError(t *testing.T, resp *http.Response) (code int, status, msg string, details []map[string]any) {
	t.Helper()
	var e struct {
		Error *struct {
			Code    int              `json:"code"`
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := strictDecode(string(b), &e); err != nil || e.Error == nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	if e.Error.Code != resp.StatusCode || e.Error.Message == "" || e.Error.Status == "" {
		t.Fatalf("bad error body %s (HTTP %d)", b, resp.StatusCode)
	}
	return e.Error.Code, e.Error.Status, e.Error.Message, e.Error.Details
}

func TestGeminiTextTurn(t *testing.T) {
	const text = "Fixed the typo in greet.sh — test.sh passes now."
	for _, m := range geminiModes {
		t.Run(m.name, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"gemini-scripted": {Turns: []Turn{{Text: text}}}})
			resp := post(t.Context(), t, geminiURL(s, "gemini-scripted", m.stream, m.sse), geminiUser("You fix typos.", "fix the typo"))
			got, model, err := decodeGemini(resp, m.stream, m.sse)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != text || len(got.Calls) != 0 || got.Finish != "STOP" || model != "gemini-scripted" {
				t.Errorf("got text %q, %d calls, finish %q, model %q", got.Text, len(got.Calls), got.Finish, model)
			}
			if m.stream && got.Events < 3 {
				t.Errorf("the text came in %d chunks, want it in pieces", got.Events)
			}
			// The estimate: "You fix typos." and "fix the typo" are 26
			// characters, 7 tokens; the reply's 48 are 12.
			if want := (Usage{Input: 7, Output: 12}); got.Usage != want {
				t.Errorf("usage %+v, want the estimate %+v", got.Usage, want)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests logged", len(reqs))
			}
			r := reqs[0]
			want := []Message{{Role: "user", Text: "fix the typo"}}
			if r.Wire != WireGemini || r.Model != "gemini-scripted" || r.Stream != m.stream || r.System != "You fix typos." || !cmp.Equal(r.Messages, want) {
				t.Errorf("logged %s %q stream %v system %q messages %+v", r.Wire, r.Model, r.Stream, r.System, r.Messages)
			}
		})
	}
}

func TestGeminiToolCallRoundTrip(t *testing.T) {
	turn := Turn{
		Text: "Writing the file, then checking.",
		ToolCalls: []ToolCall{
			{Name: "write_file", Args: json.RawMessage(`{"file_path": "hello.txt", "content": "hi there, this is long enough to be split\n"}`)},
			{ID: "my_call", Name: "run_shell_command", Args: json.RawMessage(`{"command":"cat hello.txt"}`)},
		},
	}
	for _, m := range geminiModes {
		t.Run(m.name, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"": {Turns: []Turn{turn, {Text: "Done."}}}})
			resp := post(t.Context(), t, geminiURL(s, "gemini-2.5-pro", m.stream, m.sse), geminiUser("sys", "write hello.txt"))
			got, _, err := decodeGemini(resp, m.stream, m.sse)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != turn.Text || got.Finish != "STOP" || len(got.Calls) != 2 {
				t.Fatalf("text %q, finish %q, calls %+v", got.Text, got.Finish, got.Calls)
			}
			if !strings.HasPrefix(got.Calls[0].ID, "call_") {
				t.Errorf("made-up id %q, want one starting call_", got.Calls[0].ID)
			}
			wantCalls := []ToolCall{
				{ID: got.Calls[0].ID, Name: "write_file", Args: json.RawMessage(`{"file_path":"hello.txt","content":"hi there, this is long enough to be split\n"}`)},
				{ID: "my_call", Name: "run_shell_command", Args: json.RawMessage(`{"command":"cat hello.txt"}`)},
			}
			if diff := cmp.Diff(wantCalls, compactArgs(t, got.Calls)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}

			// The client sends the calls back as Gemini CLI does: the model's
			// content with its calls (and a thought and a signature, which
			// the log leaves out), then one user content with the results,
			// paired by id.
			parts := []any{
				map[string]any{"text": "Let me think.", "thought": true},
				map[string]any{"text": got.Text},
			}
			var results []any
			for i, c := range got.Calls {
				parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": c.Args}, "thoughtSignature": "sig"})
				response := map[string]any{"output": fmt.Sprintf("result %d", i+1)}
				if i == 1 {
					response = map[string]any{"error": "exit status 1"}
				}
				results = append(results, map[string]any{"functionResponse": map[string]any{"id": c.ID, "name": c.Name, "response": response}})
			}
			body, _ := json.Marshal(map[string]any{"contents": []any{
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": "write hello.txt"}}},
				map[string]any{"role": "model", "parts": parts},
				map[string]any{"role": "user", "parts": results},
			}})
			got2, _, err := decodeGemini(post(t.Context(), t, geminiURL(s, "gemini-2.5-pro", m.stream, m.sse), string(body)), m.stream, m.sse)
			if err != nil {
				t.Fatal(err)
			}
			if got2.Text != "Done." {
				t.Errorf("second turn %q", got2.Text)
			}
			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests logged", len(reqs))
			}
			want := []Message{
				{Role: "user", Text: "write hello.txt"},
				{Role: "assistant", Text: turn.Text, ToolCalls: wantCalls},
				{Role: "tool", ToolResults: []ToolResult{
					{CallID: got.Calls[0].ID, Content: "result 1"},
					{CallID: "my_call", Content: "exit status 1", IsError: true},
				}},
			}
			msgs := reqs[1].Messages
			for i := range msgs {
				msgs[i].ToolCalls = compactArgs(t, msgs[i].ToolCalls)
			}
			if diff := cmp.Diff(want, msgs); diff != "" {
				t.Errorf("logged history (-want +got):\n%s", diff)
			}
		})
	}
}

// A history without call ids (the API's older clients) still pairs each
// result with its call: by name and order.
func TestGeminiDerivedCallIDs(t *testing.T) {
	s := startServer(t, map[string]*Script{"": {Turns: []Turn{{Text: "ok"}}}})
	call := func(name, path string) any {
		return map[string]any{"functionCall": map[string]any{"name": name, "args": map[string]any{"path": path}}}
	}
	response := func(name string, id string, response any) any {
		fr := map[string]any{"name": name, "response": response}
		if id != "" {
			fr["id"] = id
		}
		return map[string]any{"functionResponse": fr}
	}
	body, _ := json.Marshal(map[string]any{
		"tools": []any{
			map[string]any{"functionDeclarations": []any{map[string]any{"name": "read_file"}, map[string]any{"name": "list"}}},
			map[string]any{"googleSearch": map[string]any{}},
		},
		"generationConfig": map[string]any{"maxOutputTokens": 300},
		"contents": []any{
			map[string]any{"parts": []any{map[string]any{"text": "read a and b, list c"}}}, // no role: user
			map[string]any{"role": "model", "parts": []any{call("read_file", "a"), call("read_file", "b"), call("list", "c")}},
			map[string]any{"role": "user", "parts": []any{
				response("read_file", "", map[string]any{"output": "A"}),
				response("read_file", "", map[string]any{"content": []int{1, 2}}),
				response("list", "", nil),
				map[string]any{"text": "and now?"},
			}},
			map[string]any{"role": "model", "parts": []any{call("read_file", "d")}},
			// A result whose call was dropped from the history, then the
			// result of the call above.
			map[string]any{"role": "function", "parts": []any{response("grep", "", map[string]any{"output": "x"}), response("read_file", "", map[string]any{"output": "D"})}},
		},
	})
	resp := post(t.Context(), t, s.URL()+"/v1beta/models/m:generateContent", string(body))
	if _, _, err := decodeGemini(resp, false, false); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	want := []Message{
		{Role: "user", Text: "read a and b, list c"},
		{Role: "assistant", ToolCalls: []ToolCall{
			{ID: "read_file#1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)},
			{ID: "read_file#2", Name: "read_file", Args: json.RawMessage(`{"path":"b"}`)},
			{ID: "list#1", Name: "list", Args: json.RawMessage(`{"path":"c"}`)},
		}},
		{Role: "tool", ToolResults: []ToolResult{
			{CallID: "read_file#1", Content: "A"},
			{CallID: "read_file#2", Content: `{"content":[1,2]}`},
			{CallID: "list#1"},
		}},
		{Role: "user", Text: "and now?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "read_file#3", Name: "read_file", Args: json.RawMessage(`{"path":"d"}`)}}},
		{Role: "tool", ToolResults: []ToolResult{{CallID: "grep#1", Content: "x"}, {CallID: "read_file#3", Content: "D"}}},
	}
	if diff := cmp.Diff(want, r.Messages); diff != "" {
		t.Errorf("logged history (-want +got):\n%s", diff)
	}
	if wantTools := []string{"read_file", "list", "googleSearch"}; !cmp.Equal(r.Tools, wantTools) || r.MaxTokens != 300 {
		t.Errorf("tools %v, max tokens %d; want %v, 300", r.Tools, r.MaxTokens, wantTools)
	}
}

func TestGeminiUsage(t *testing.T) {
	for _, m := range geminiModes {
		t.Run(m.name, func(t *testing.T) {
			u := Usage{Input: 1200, Output: 40, CachedInput: 1000}
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "ok", Usage: &u}}}})
			got, _, err := decodeGemini(post(t.Context(), t, geminiURL(s, "m", m.stream, m.sse), geminiUser("s", "hi")), m.stream, m.sse)
			if err != nil {
				t.Fatal(err)
			}
			if got.Usage != u {
				t.Errorf("usage %+v, want %+v", got.Usage, u)
			}
		})
	}
}

func TestGeminiErrors(t *testing.T) {
	for _, m := range geminiModes {
		t.Run(m.name, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{
				{Error: &HTTPError{Status: 429, Message: "Quota exceeded (scripted)", RetryAfterS: 7}},
				{Error: &HTTPError{Status: 503}},
				{Text: "after the errors"},
			}}})
			url := geminiURL(s, "m", m.stream, m.sse)
			resp := post(t.Context(), t, url, geminiUser("s", "hi"))
			code, status, msg, details := geminiError(t, resp)
			if code != 429 || status != "RESOURCE_EXHAUSTED" || msg != "Quota exceeded (scripted)" || resp.Header.Get("Retry-After") != "7" {
				t.Errorf("429: %d %s %q, Retry-After %q", code, status, msg, resp.Header.Get("Retry-After"))
			}
			wantDetails := []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}}
			if !cmp.Equal(details, wantDetails) {
				t.Errorf("details %v, want %v", details, wantDetails)
			}
			resp = post(t.Context(), t, url, geminiUser("s", "hi"))
			if code, status, msg, details := geminiError(t, resp); code != 503 || status != "UNAVAILABLE" || msg != "Service Unavailable (scripted)" || details != nil {
				t.Errorf("503: %d %s %q %v", code, status, msg, details)
			}
			if got, _, err := decodeGemini(post(t.Context(), t, url, geminiUser("s", "hi")), m.stream, m.sse); err != nil || got.Text != "after the errors" {
				t.Errorf("after the errors: %q, %v", got.Text, err)
			}
			resp = post(t.Context(), t, url, geminiUser("s", "hi"))
			if code, status, msg, _ := geminiError(t, resp); code != 500 || status != "INTERNAL" || !strings.Contains(msg, `model "m" has no turn left`) {
				t.Errorf("no turn left: %d %s %q", code, status, msg)
			}
		})
	}
}

func TestGeminiMalformedAndUnknown(t *testing.T) {
	s := startServer(t, map[string]*Script{"": {Turns: []Turn{{Text: "ok"}}}})
	gen := "/v1beta/models/m:generateContent"
	for _, tc := range []struct{ path, body, want string }{
		{gen, `{"contents": [`, "malformed request body: unexpected end of JSON input"},
		{gen, `{"contents": {"role": "user"}}`, "malformed request body: json: cannot unmarshal object"},
		{gen, `{"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}`, `contents[0]: unsupported role "assistant"`},
		{gen, `{"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "done"}}]}]}`, `contents[0].parts[0].functionResponse.response: must be a JSON object`},
		{gen, `{"tools": [{"functionDeclarations": {"name": "f"}}]}`, `tools[0].functionDeclarations`},
		{"/v1beta/models/m:streamGenerateContent?alt=sse", `[]`, "malformed request body"},
		{"/v1beta/models/m:countTokens", `{`, "malformed request body"},
	} {
		resp := post(t.Context(), t, s.URL()+tc.path, tc.body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: status %d, want 400", tc.path, tc.body, resp.StatusCode)
			continue
		}
		path, _, _ := strings.Cut(tc.path, "?")
		if _, status, msg, _ := geminiError(t, resp); status != "INVALID_ARGUMENT" || !strings.Contains(msg, tc.want) || !strings.Contains(msg, path) {
			t.Errorf("%s %s: %s %q, want a message naming the path and containing %q", tc.path, tc.body, status, msg, tc.want)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d malformed requests logged, want none", n)
	}
	if n := s.Remaining(""); n != 1 {
		t.Errorf("Remaining = %d, want 1: malformed requests consume no turn", n)
	}

	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"POST", "/v1beta/models/m:embedContent", 404, "NOT_FOUND"},
		{"POST", "/v1beta/models/:generateContent", 404, "NOT_FOUND"},
		{"POST", "/v1beta/tunedModels/m:generateContent", 404, "NOT_FOUND"},
		{"GET", "/v1beta/models/m:generateContent", 405, "FAILED_PRECONDITION"},
		{"POST", "/v1beta/models", 405, "FAILED_PRECONDITION"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, s.URL()+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if code, status, msg, _ := geminiError(t, resp); code != tc.status || status != tc.want || !strings.Contains(msg, tc.path) {
			t.Errorf("%s %s: %d %s %q, want %d %s", tc.method, tc.path, code, status, msg, tc.status, tc.want)
		}
		resp.Body.Close()
	}
}

func TestGeminiDrop(t *testing.T) {
	for _, m := range geminiModes {
		t.Run(m.name, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "never whole", Drop: true}}}})
			resp := post(t.Context(), t, geminiURL(s, "m", m.stream, m.sse), geminiUser("s", "hi"))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200 then a cut", resp.StatusCode)
			}
			b, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Fatalf("read the whole body %q, want a cut connection", b)
			}
			// A stream is cut after the start of the model's content, before
			// any of its text (a JSON body, in the middle).
			if m.stream && bytes.Contains(b, []byte("never")) {
				t.Errorf("the cut stream holds the text: %q", b)
			}
		})
	}
}

// The API key reaches the log's headers or query, as the client sent it,
// and never the server's own log.
func TestGeminiKeyAndCountTokens(t *testing.T) {
	const key = "AIza-scripted-secret"
	var mu sync.Mutex
	var lines []string
	s := startServerWith(t, map[string]*Script{"": {Turns: []Turn{{Text: "one"}, {Text: "two"}}}}, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, geminiURL(s, "m", true, true), strings.NewReader(geminiUser("s", "hi")))
	req.Header.Set("x-goog-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decodeGemini(resp, true, true); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, _, err := decodeGemini(post(t.Context(), t, s.URL()+"/v1beta/models/m:generateContent?key="+key, geminiUser("s", "hi")), false, false); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Header.Get("X-Goog-Api-Key") != key || reqs[0].Query.Get("alt") != "sse" || reqs[1].Query.Get("key") != key {
		t.Fatalf("the log does not hold the key as sent: %d requests", len(reqs))
	}

	// countTokens takes the contents alone or a whole request; it consumes
	// no turn and is not logged.
	for _, body := range []string{
		`{"contents": [{"role": "user", "parts": [{"text": "twelve chars"}]}]}`,
		`{"generateContentRequest": {"model": "models/m", "systemInstruction": {"parts": [{"text": "four"}]}, "contents": [{"role": "user", "parts": [{"text": "twelve chars"}]}]}}`,
	} {
		resp := post(t.Context(), t, s.URL()+"/v1beta/models/m:countTokens?key="+key, body)
		var got map[string]int
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
			t.Fatalf("countTokens: %d %v", resp.StatusCode, err)
		}
		want := 3 // twelve characters
		if strings.Contains(body, "four") {
			want = 4
		}
		if !cmp.Equal(got, map[string]int{"totalTokens": want}) {
			t.Errorf("countTokens %s: %v, want %d tokens", body, got, want)
		}
	}
	if len(s.Requests()) != 2 {
		t.Errorf("countTokens was logged")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, key) {
			t.Errorf("the server logged the key: %q", l)
		}
	}
}

func TestGeminiModels(t *testing.T) {
	s := startServer(t, map[string]*Script{
		"gemini-scripted": {Turns: []Turn{{Text: "x"}}},
		"":                {Turns: []Turn{{Text: "x"}}},
	})
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
	type model struct {
		Name    string   `json:"name"`
		Methods []string `json:"supportedGenerationMethods"`
	}
	var list struct {
		Models []model `json:"models"`
	}
	get("/v1beta/models", &list)
	methods := []string{"generateContent", "countTokens"}
	want := []model{{"models/gemini-scripted", methods}, {"models/scripted", methods}}
	if !cmp.Equal(list.Models, want) {
		t.Errorf("models %+v, want %+v", list.Models, want)
	}
	var one model
	get("/v1beta/models/gemini-2.5-flash", &one)
	if !cmp.Equal(one, model{"models/gemini-2.5-flash", methods}) {
		t.Errorf("model %+v", one)
	}
}
