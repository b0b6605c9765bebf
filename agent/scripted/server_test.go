package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoadScript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.json")
	const text = `{"turns": [
		{"text": "Let me look.", "tool_calls": [{"name": "read_file", "args": {"path": "greet.sh"}}]},
		{"error": {"status": 429, "message": "slow down", "retry_after_s": 2}},
		{"drop": true},
		{"text": "Fixed.", "usage": {"input": 1200, "output": 40, "cached_input": 1000}, "delay_ms": 5,
		 "headers": {"anthropic-ratelimit-unified-5h-utilization": "0.5"}}
	]}`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := LoadScript(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Turns) != 4 {
		t.Fatalf("%d turns, want 4", len(sc.Turns))
	}
	if c := sc.Turns[0].ToolCalls[0]; c.Name != "read_file" || string(c.Args) != `{"path": "greet.sh"}` {
		t.Errorf("tool call %+v", c)
	}
	if e := sc.Turns[1].Error; e == nil || *e != (HTTPError{Status: 429, Message: "slow down", RetryAfterS: 2}) {
		t.Errorf("error %+v", e)
	}
	if !sc.Turns[2].Drop {
		t.Errorf("turn 3 does not drop")
	}
	if u := sc.Turns[3].Usage; u == nil || *u != (Usage{Input: 1200, Output: 40, CachedInput: 1000}) || sc.Turns[3].DelayMS != 5 {
		t.Errorf("turn 4 %+v", sc.Turns[3])
	}
	if h := sc.Turns[3].Headers; len(h) != 1 || h["anthropic-ratelimit-unified-5h-utilization"] != "0.5" {
		t.Errorf("turn 4 headers %v", h)
	}
}

func TestLoadScriptRefuses(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"unknown field", `{"turns": [{"text": "hi", "tool_call": []}]}`, `unknown field "tool_call"`},
		{"unknown top-level field", `{"turns": [{"text": "hi"}], "model": "x"}`, `unknown field "model"`},
		{"unknown usage field", `{"turns": [{"text": "hi", "usage": {"prompt": 3}}]}`, `unknown field "prompt"`},
		{"not JSON", `turns: []`, `invalid character`},
		{"trailing data", `{"turns": [{"text": "hi"}]} {}`, `unexpected data after the script`},
		{"no turns", `{"turns": []}`, `script has no turns`},
		{"empty turn", `{"turns": [{"text": "hi"}, {"delay_ms": 5}]}`, `turn 2: empty turn`},
		{"error with text", `{"turns": [{"text": "hi", "error": {"status": 500}}]}`, `turn 1: error excludes text`},
		{"bad status", `{"turns": [{"error": {"status": 200}}]}`, `turn 1: error status 200 is not in 400..599`},
		{"nameless call", `{"turns": [{"tool_calls": [{"args": {}}]}]}`, `turn 1: tool call 1: name is empty`},
		{"args not an object", `{"turns": [{"tool_calls": [{"name": "x", "args": [1]}]}]}`, `tool call 1 (x): args must be a JSON object`},
		{"same id twice", `{"turns": [{"tool_calls": [{"id": "a", "name": "x"}, {"id": "a", "name": "y"}]}]}`, `id "a" is used twice`},
		{"cache over input", `{"turns": [{"text": "hi", "usage": {"input": 1, "output": 1, "cached_input": 2}}]}`, `cached_input 2 exceeds input 1`},
		{"negative delay", `{"turns": [{"text": "hi", "delay_ms": -1}]}`, `delay_ms is negative`},
		{"bad header name", `{"turns": [{"text": "hi", "headers": {"x y": "1"}}]}`, `header "x y" is not a valid header name`},
		{"header value with a newline", `{"turns": [{"text": "hi", "headers": {"x-y": "1\r\nz: 2"}}]}`, `header x-y: the value holds a line break`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadScript(strings.NewReader(tc.script))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "scripted: load script: ") {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSetScript(t *testing.T) {
	s := New(nil)
	if err := s.SetScript("m", &Script{}); err == nil || !strings.Contains(err.Error(), `model "m": script has no turns`) {
		t.Errorf("empty script: %v", err)
	}
	if err := s.SetScript("m", nil); err == nil {
		t.Errorf("nil script accepted")
	}
	sc := &Script{Turns: []Turn{{Text: "one"}, {Text: "two", ToolCalls: []ToolCall{{Name: "x", Args: json.RawMessage(`{"a":1}`)}}}}}
	if err := s.SetScript("m", sc); err != nil {
		t.Fatal(err)
	}
	// The server plays its own copy.
	sc.Turns[0].Text = "changed"
	sc.Turns[1].ToolCalls[0].Args[5] = '2'
	if err := s.SetScript("m", &Script{Turns: []Turn{{}}}); err == nil {
		t.Errorf("invalid script accepted")
	}
	if n := s.Remaining("m"); n != 2 {
		t.Errorf("Remaining = %d after a refused SetScript, want 2", n)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()
	for _, want := range []string{"one", `{"a":1}`} {
		resp := post(t.Context(), t, ts.URL+"/v1/chat/completions", userBody(WireChat, "m", false, "hi"))
		got, err := decode(WireChat, false, resp)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want && (len(got.Calls) == 0 || string(got.Calls[0].Args) != want) {
			t.Errorf("got %+v, want %s", got, want)
		}
	}
	if n := s.Remaining("m"); n != 0 {
		t.Errorf("Remaining = %d, want 0", n)
	}
	if n := s.Remaining("other"); n != 0 {
		t.Errorf("Remaining of an unknown model = %d, want 0", n)
	}
}

func TestScriptExhausted(t *testing.T) {
	for _, wire := range []string{WireChat, WireResponses, WireMessages} {
		t.Run(wire, func(t *testing.T) {
			s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "only"}}}})
			url := s.URL() + wirePaths[wire]
			if _, err := decode(wire, true, post(t.Context(), t, url, userBody(wire, "m", true, "one"))); err != nil {
				t.Fatal(err)
			}
			resp := post(t.Context(), t, url, userBody(wire, "m", true, "two"))
			if resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500", resp.StatusCode)
			}
			if _, msg := errorBody(t, resp); msg != `scripted model: script for model "m" has no turn left (played 1)` {
				t.Errorf("message %q", msg)
			}
			resp = post(t.Context(), t, url, userBody(wire, "unknown", false, "three"))
			if resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("status %d for a model without script, want 500", resp.StatusCode)
			}
			if _, msg := errorBody(t, resp); !strings.HasPrefix(msg, `scripted model: script for model "unknown" has no turn left (played 0`) {
				t.Errorf("message %q", msg)
			}
			if n := len(s.Requests()); n != 3 {
				t.Errorf("%d requests logged, want 3: refused requests are logged too", n)
			}
		})
	}
}

func TestDefaultScript(t *testing.T) {
	s := startServer(t, map[string]*Script{
		"a": {Turns: []Turn{{Text: "from a"}}},
		"":  {Turns: []Turn{{Text: "default 1"}, {Text: "default 2"}}},
	})
	for _, tc := range []struct{ model, want string }{{"b", "default 1"}, {"a", "from a"}, {"", "default 2"}} {
		got, err := decode(WireMessages, false, post(t.Context(), t, s.URL()+"/v1/messages", userBody(WireMessages, tc.model, false, "hi")))
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != tc.want {
			t.Errorf("model %q got %q, want %q", tc.model, got.Text, tc.want)
		}
	}
	resp := post(t.Context(), t, s.URL()+"/v1/messages", userBody(WireMessages, "b", false, "hi"))
	if _, msg := errorBody(t, resp); msg != `scripted model: script for model "b" (default script) has no turn left (played 2)` {
		t.Errorf("message %q", msg)
	}
	if resp := post(t.Context(), t, s.URL()+"/v1/messages", userBody(WireMessages, "a", false, "hi")); resp.StatusCode != 500 {
		t.Errorf("model a after its script: status %d, want 500 (no fallback to the default)", resp.StatusCode)
	}
}

func TestMalformedRequests(t *testing.T) {
	s := startServer(t, map[string]*Script{"": {Turns: []Turn{{Text: "ok"}}}})
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model": "m", "messages": [`, "malformed request body: unexpected end of JSON input"},
		{"/v1/chat/completions", `{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}`, `messages[0]: unsupported role "wizard"`},
		{"/v1/chat/completions", `{"model": "m", "messages": [{"role": "user", "content": 5}]}`, `content must be a string or an array of parts, not a number`},
		{"/v1/responses", `[]`, "malformed request body"},
		{"/v1/responses", `{"input": [{"role": "user", "content": {"x": 1}}]}`, `input[0]: content must be a string or an array of parts, not an object`},
		{"/v1/messages", `not json`, "malformed request body: invalid character"},
		{"/v1/messages", `{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 3}]}]}`, `messages[0].content[0]`},
		{"/v1/messages/count_tokens", `{`, "malformed request body"},
	} {
		resp := post(t.Context(), t, s.URL()+tc.path, tc.body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: status %d, want 400", tc.path, tc.body, resp.StatusCode)
			continue
		}
		if typ, msg := errorBody(t, resp); typ != "invalid_request_error" || !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.path) {
			t.Errorf("%s %s: %s %q, want a message naming the path and containing %q", tc.path, tc.body, typ, msg, tc.want)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d malformed requests logged, want none", n)
	}
	if n := s.Remaining(""); n != 1 {
		t.Errorf("Remaining = %d, want 1: malformed requests consume no turn", n)
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	s := startServer(t, nil)
	resp := post(t.Context(), t, s.URL()+"/v1/completions", `{}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
	if typ, msg := errorBody(t, resp); typ != "not_found_error" || !strings.Contains(msg, "/v1/completions") {
		t.Errorf("%s %q", typ, msg)
	}
	resp, err := http.Get(s.URL() + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/messages: status %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	errorBody(t, resp)
}

func TestModels(t *testing.T) {
	s := startServer(t, map[string]*Script{
		"claude-scripted": {Turns: []Turn{{Text: "x"}}},
		"gpt-scripted":    {Turns: []Turn{{Text: "x"}}},
		"":                {Turns: []Turn{{Text: "x"}}},
	})
	resp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
			Type   string `json:"type"`
		} `json:"data"`
		HasMore *bool `json:"has_more"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.Object != "model" || m.Type != "model" {
			t.Errorf("entry %+v", m)
		}
		ids = append(ids, m.ID)
	}
	if want := []string{"claude-scripted", "gpt-scripted", "scripted"}; !slices.Equal(ids, want) || list.Object != "list" || list.HasMore == nil {
		t.Errorf("models %v (object %q), want %v", ids, list.Object, want)
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		s := New(nil)
		err := s.Start(addr)
		if err == nil {
			s.Close()
			t.Errorf("Start(%q) succeeded", addr)
			continue
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("Start(%q): %v does not name the address", addr, err)
		}
	}
	s := New(nil)
	if err := s.Start("[::1]:0"); err == nil {
		if !strings.HasPrefix(s.URL(), "http://[::1]:") {
			t.Errorf("URL %q", s.URL())
		}
		s.Close()
	} // else: no IPv6 loopback on this machine
}

func TestLifecycle(t *testing.T) {
	s := New(nil)
	if s.URL() != "" {
		t.Errorf("URL before Start = %q", s.URL())
	}
	if err := s.Start("localhost:0"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://") {
		t.Errorf("URL %q", s.URL())
	}
	if err := s.Start("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "already serving on "+s.URL()) {
		t.Errorf("second Start: %v", err)
	}
	url := s.URL()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err == nil {
		t.Errorf("Start after Close succeeded")
	}
	if _, err := http.Get(url + "/v1/models"); err == nil {
		t.Errorf("still serving after Close")
	}
	// Handler answers 503 once the server is closed.
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("Handler after Close: status %d, want 503", rec.Code)
	}
}

func TestConcurrentRequestsGetDistinctTurns(t *testing.T) {
	const n = 30
	var turns []Turn
	for i := range n {
		turns = append(turns, Turn{Text: fmt.Sprintf("turn %d", i+1)})
	}
	s := startServer(t, map[string]*Script{"m": {Turns: turns}})
	wires := []string{WireChat, WireResponses, WireMessages}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []string
		errs []error
	)
	for i := range n {
		wg.Go(func() {
			wire, stream := wires[i%3], i%2 == 0
			body := userBody(wire, "m", stream, fmt.Sprintf("caller %d", i))
			resp, err := http.Post(s.URL()+wirePaths[wire], "application/json", strings.NewReader(body))
			if err == nil {
				defer resp.Body.Close()
				var res result
				res, err = decode(wire, stream, resp)
				mu.Lock()
				got = append(got, res.Text)
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("caller %d (%s): %w", i, wire, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := make([]string, n)
	for i := range n {
		want[i] = turns[i].Text
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("turns played %v, want each of %v once", got, want)
	}
	reqs := s.Requests()
	if len(reqs) != n || s.Remaining("m") != 0 {
		t.Errorf("%d requests logged, %d turns left; want %d and 0", len(reqs), s.Remaining("m"), n)
	}
	callers := map[string]bool{}
	for _, r := range reqs {
		callers[r.Messages[0].Text] = true
	}
	if len(callers) != n {
		t.Errorf("the log holds %d distinct callers, want %d", len(callers), n)
	}
}

func TestDelay(t *testing.T) {
	t.Run("played after the delay", func(t *testing.T) {
		s := startServer(t, map[string]*Script{"m": {Turns: []Turn{{Text: "late", DelayMS: 50}}}})
		start := time.Now()
		got, err := decode(WireChat, false, post(t.Context(), t, s.URL()+"/v1/chat/completions", userBody(WireChat, "m", false, "hi")))
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != "late" || time.Since(start) < 50*time.Millisecond {
			t.Errorf("got %q after %v, want \"late\" after at least 50ms", got.Text, time.Since(start))
		}
	})
	t.Run("client cancels", func(t *testing.T) {
		taken := make(chan struct{}, 1)
		gaveUp := make(chan struct{}, 1)
		s := startServerWith(t, map[string]*Script{"m": {Turns: []Turn{{Text: "never", DelayMS: 600_000}, {Text: "next"}}}}, func(line string) {
			switch {
			case strings.Contains(line, "turn 1 of 2"):
				signal(taken)
			case strings.Contains(line, "client gave up"):
				signal(gaveUp)
			}
		})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(userBody(WireMessages, "m", true, "hi")))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("got an answer: status %d", resp.StatusCode)
			}
			errc <- err
		}()
		waitFor(t, taken, "the turn to be taken")
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("client error %v, want context.Canceled", err)
		}
		waitFor(t, gaveUp, "the server to stop waiting") // well before the 10 minutes
		ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		got, err := decode(WireMessages, false, post(ctx, t, s.URL()+"/v1/messages", userBody(WireMessages, "m", false, "again")))
		if err != nil || got.Text != "next" {
			t.Errorf("next turn: %q, %v", got.Text, err)
		}
	})
	t.Run("close ends the wait", func(t *testing.T) {
		taken := make(chan struct{}, 1)
		s := New(&Options{Logf: func(format string, args ...any) {
			if strings.Contains(fmt.Sprintf(format, args...), "turn 1 of 1") {
				signal(taken)
			}
		}})
		if err := s.SetScript("", &Script{Turns: []Turn{{Text: "never", DelayMS: 600_000}}}); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		defer ts.Close()
		type answer struct {
			resp *http.Response
			err  error
		}
		answers := make(chan answer, 1)
		go func() {
			resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(userBody(WireResponses, "m", true, "hi")))
			answers <- answer{resp, err}
		}()
		waitFor(t, taken, "the turn to be taken")
		if err := s.Close(); err != nil { // returns once the delayed handler has ended
			t.Fatal(err)
		}
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		defer a.resp.Body.Close()
		if _, msg := errorBody(t, a.resp); a.resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "server closed during the 600000ms delay") {
			t.Errorf("answer %d %q, want 503 saying the server closed", a.resp.StatusCode, msg)
		}
	})
}

// signal notes an event on ch without ever blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// waitFor waits for an event on ch, failing the test if none comes within a
// minute.
func waitFor(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestResponder: a responder answers from the request itself, ahead of the
// model's script, on every wire; false answers "no turn" as a 500.
func TestResponder(t *testing.T) {
	s := startServer(t, map[string]*Script{"scripted": {Turns: []Turn{{Text: "from the script"}}}})
	s.SetResponder("", func(r *Request) (Turn, bool) {
		last := r.Messages[len(r.Messages)-1].Text
		if last == "nothing" {
			return Turn{}, false
		}
		return Turn{Text: "echo: " + last}, true
	})
	for _, wire := range []string{WireChat, WireResponses, WireMessages} {
		got, err := decode(wire, true, post(t.Context(), t, s.URL()+wirePaths[wire], userBody(wire, "any", true, "hi "+wire)))
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != "echo: hi "+wire {
			t.Errorf("%s: got %q", wire, got.Text)
		}
	}
	got, err := decode(WireChat, false, post(t.Context(), t, s.URL()+wirePaths[WireChat], userBody(WireChat, "scripted", false, "hi")))
	if err != nil || got.Text != "from the script" {
		t.Errorf("a model with a script of its own: %q, %v", got.Text, err)
	}
	resp := post(t.Context(), t, s.URL()+wirePaths[WireChat], userBody(WireChat, "any", false, "nothing"))
	if _, msg := errorBody(t, resp); resp.StatusCode != 500 || !strings.Contains(msg, "has no answer") {
		t.Errorf("no answer: %d %q", resp.StatusCode, msg)
	}
	if n := len(s.Requests()); n != 5 {
		t.Errorf("%d requests logged, want 5", n)
	}
	s.SetResponder("bad", func(*Request) (Turn, bool) { return Turn{}, true })
	resp = post(t.Context(), t, s.URL()+wirePaths[WireChat], userBody(WireChat, "bad", false, "x"))
	if _, msg := errorBody(t, resp); !strings.Contains(msg, "invalid turn") {
		t.Errorf("an empty turn: %q", msg)
	}
}

// TestNamespacedCalls: on the Responses wire, tools offered in a namespace
// (as Codex offers MCP tools) are reported with it, and a call carries it.
func TestNamespacedCalls(t *testing.T) {
	s := startServer(t, nil)
	s.SetResponder("", func(r *Request) (Turn, bool) {
		return Turn{ToolCalls: []ToolCall{{Name: "echo", Namespace: r.Namespaces["echo"], Args: json.RawMessage(`{"text":"x"}`)}}}, true
	})
	body := `{"model":"m","stream":true,"input":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"shell"},` +
		`{"type":"namespace","name":"mcp__hub","tools":[{"type":"function","name":"echo"}]}]}`
	resp := post(t.Context(), t, s.URL()+"/v1/responses", body)
	raw, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(raw), `"namespace":"mcp__hub"`) || !strings.Contains(string(raw), `"name":"echo"`) {
		t.Errorf("the call lacks its namespace:\n%s", raw)
	}
	req := s.Requests()[0]
	if req.Namespaces["echo"] != "mcp__hub" || req.Namespaces["shell"] != "" {
		t.Errorf("namespaces %v", req.Namespaces)
	}
	hist := `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"echo","namespace":"mcp__hub","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"done"}]}`
	post(t.Context(), t, s.URL()+"/v1/responses", hist)
	if c := s.Requests()[1].Messages[0].ToolCalls[0]; c.Namespace != "mcp__hub" {
		t.Errorf("history call %+v", c)
	}
}
