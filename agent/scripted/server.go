package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBody bounds a request body; agent CLIs send long histories, but not
// this long.
const maxBody = 64 << 20

// Options configure a Server. A nil *Options means the defaults.
type Options struct {
	// Logf, when set, receives one line per request and per problem (never
	// a body or a header). Nil means silent.
	Logf func(format string, args ...any)
}

// A Server plays scripts to model clients. Create it with New; it is safe
// for concurrent use (see the package documentation).
type Server struct {
	logf func(format string, args ...any)
	done chan struct{} // closed by Close: ends the waits of delayed turns

	mu         sync.Mutex
	scripts    map[string]*playback
	responders map[string]Responder
	requests   []Request
	seq        int // numbers response and tool call ids

	hmu      sync.Mutex // guards stopping and the Adds of handlers
	stopping bool
	handlers sync.WaitGroup // requests being served

	life      sync.Mutex
	started   bool
	closed    bool
	srv       *http.Server
	url       string
	serveDone chan struct{}
	serveErr  error
}

// playback is a script being played.
type playback struct {
	turns  []Turn
	played int
}

// New returns a server with no script. Give it scripts with SetScript, then
// Start it or mount Handler.
func New(o *Options) *Server {
	s := &Server{
		logf:    func(string, ...any) {},
		done:    make(chan struct{}),
		scripts: map[string]*playback{},
	}
	if o != nil && o.Logf != nil {
		s.logf = o.Logf
	}
	return s
}

// SetScript sets the script played to requests whose "model" field is model
// (on the Gemini wire, whose path names model); model "" sets the default
// script, played to requests whose model has no script of its own. It
// replaces any script already set for model, from its first turn. The server keeps its own copy of sc. It refuses an invalid
// script (see Script.Validate) and leaves the current one in place.
func (s *Server) SetScript(model string, sc *Script) error {
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scripted: script for model %q: %w", model, err)
	}
	turns := sc.clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[model] = &playback{turns: turns}
	return nil
}

// A Responder answers a request from what the request holds (its history,
// its tools) instead of from a fixed order of turns: agent CLIs make
// requests a script cannot foresee (a title to generate, a tool search). It
// returns the turn to play, or false to answer that no turn is left. It is
// called with the server's lock not held, possibly from several goroutines
// at once, and must not change the request.
type Responder func(req *Request) (Turn, bool)

// SetResponder sets f to answer requests whose "model" field is model (""
// for every model without a responder or script of its own). A responder
// is asked before the model's script.
func (s *Server) SetResponder(model string, f Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.responders == nil {
		s.responders = map[string]Responder{}
	}
	s.responders[model] = f
}

// Remaining returns how many turns of the script set for model ("" for the
// default script) are not yet played; 0 when there is no such script.
func (s *Server) Remaining(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.scripts[model]; p != nil {
		return len(p.turns) - p.played
	}
	return 0
}

// Requests returns every well-formed model request received so far, in the
// order they took their turn, including those answered with a scripted
// error or refused because no turn was left. Malformed requests, token
// counts and model listings are not kept. The slice is a copy; the requests
// in it share their bodies and headers with the log, so do not change them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Start listens on addr, which must be a loopback address such as
// "127.0.0.1:0" (port 0 picks a free port), and serves in the background
// until Close. It refuses any other address, and a second Start.
func (s *Server) Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("scripted: start on %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("scripted: start on %q: refused, only a loopback address (127.0.0.1, ::1, localhost) is allowed", addr)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("scripted: start: server is closed")
	}
	if s.started {
		return fmt.Errorf("scripted: start on %q: already serving on %s", addr, s.url)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("scripted: start: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("scripted: start on %q: refused, it resolved to %s, not loopback", addr, ln.Addr())
	}
	s.started = true
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	s.logf("scripted: serving on %s", s.url)
	return nil
}

// URL returns the server's base URL, such as "http://127.0.0.1:40123";
// OpenAI and Anthropic clients append /v1, Gemini clients take it as it is
// (GOOGLE_GEMINI_BASE_URL). It is empty until Start.
func (s *Server) URL() string {
	s.life.Lock()
	defer s.life.Unlock()
	return s.url
}

// Handler returns the server's HTTP handler, for httptest or for mounting in
// another server. A dropped turn aborts its response with
// panic(http.ErrAbortHandler), which net/http turns into a cut connection;
// middleware in front of the handler must let that panic through.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Close stops serving, cuts open connections, ends the waits of delayed
// turns and waits for the requests being served to end, also those served
// through Handler, which from then on answers 503. Once Close returns,
// Options.Logf is not called any more. Close may be called more than once;
// it returns the error that stopped serving, if any.
func (s *Server) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.hmu.Lock()
	s.stopping = true
	s.hmu.Unlock()
	close(s.done)
	var err error
	if s.started {
		err = s.srv.Close()
		<-s.serveDone
	}
	s.handlers.Wait()
	if s.serveErr != nil {
		return fmt.Errorf("scripted: serve: %w", s.serveErr)
	}
	if err != nil {
		return fmt.Errorf("scripted: close: %w", err)
	}
	return nil
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	wire := wireOf(r.URL.Path)
	s.hmu.Lock()
	if s.stopping {
		s.hmu.Unlock()
		writeError(w, wire, http.StatusServiceUnavailable, "scripted model: server is closed")
		return
	}
	s.handlers.Add(1)
	s.hmu.Unlock()
	defer s.handlers.Done()
	route := func(method string, serve func(http.ResponseWriter, *http.Request)) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, wire, http.StatusMethodNotAllowed, fmt.Sprintf("scripted model: %s %s: method not allowed, use %s", r.Method, r.URL.Path, method))
			return
		}
		serve(w, r)
	}
	switch r.URL.Path {
	case "/v1/chat/completions":
		route(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, WireChat) })
	case "/v1/responses":
		route(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, WireResponses) })
	case "/v1/messages":
		route(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, WireMessages) })
	case "/v1/messages/count_tokens":
		route(http.MethodPost, s.serveCountTokens)
	case "/v1/models":
		route(http.MethodGet, s.serveModels)
	case geminiModels:
		route(http.MethodGet, s.serveModels)
	default:
		_, method, ok := geminiPath(r.URL.Path)
		switch {
		case !ok:
		case method == "generateContent", method == "streamGenerateContent":
			route(http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, WireGemini) })
			return
		case method == "countTokens":
			route(http.MethodPost, s.serveCountTokens)
			return
		case method == "":
			route(http.MethodGet, s.serveModels)
			return
		}
		s.logf("scripted: %s %s: not found", r.Method, r.URL.Path)
		writeError(w, wire, http.StatusNotFound, fmt.Sprintf("scripted model: no such endpoint: %s %s", r.Method, r.URL.Path))
	}
}

// geminiModels is where the Gemini wire lists its models; a model's
// methods are under it: /v1beta/models/{model}:{method}.
const geminiModels = "/v1beta/models"

// geminiPath splits a path under /v1beta/models/ into the model and the
// method ("" for the model itself, as in GET /v1beta/models/{model}).
func geminiPath(path string) (model, method string, ok bool) {
	rest, ok := strings.CutPrefix(path, geminiModels+"/")
	if !ok {
		return "", "", false
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		rest, method = rest[:i], rest[i+1:]
	}
	if rest == "" || strings.Contains(rest, "/") {
		return "", "", false
	}
	return rest, method, true
}

// wireOf is the wire of a path, for the shape of its error answers:
// WireGemini under /v1beta/, else "" (the OpenAI and Anthropic wires share
// one shape).
func wireOf(path string) string {
	if strings.HasPrefix(path, "/v1beta/") {
		return WireGemini
	}
	return ""
}

// readBody reads the request body, answering 400 or 413 itself when it
// cannot.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, wireOf(r.URL.Path), http.StatusRequestEntityTooLarge, fmt.Sprintf("scripted model: %s: body exceeds %d bytes", r.URL.Path, maxBody))
		} else {
			writeError(w, wireOf(r.URL.Path), http.StatusBadRequest, fmt.Sprintf("scripted model: %s: reading body: %v", r.URL.Path, err))
		}
		s.logf("scripted: %s: reading body: %v", r.URL.Path, err)
		return nil, false
	}
	return body, true
}

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, wire string) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var (
		req          Request
		includeUsage bool
		err          error
	)
	switch wire {
	case WireChat:
		req, includeUsage, err = parseChat(body)
	case WireResponses:
		req, err = parseResponses(body)
	case WireGemini:
		model, method, _ := geminiPath(r.URL.Path)
		req, err = parseGemini(body, model, method == "streamGenerateContent")
	default:
		req, err = parseMessages(body)
	}
	if err != nil {
		s.logf("scripted: %s: malformed request: %v", r.URL.Path, err)
		writeError(w, wire, http.StatusBadRequest, fmt.Sprintf("scripted model: %s: malformed request body: %v", r.URL.Path, err))
		return
	}
	req.Body = body
	req.Header = r.Header.Clone()
	req.Query = r.URL.Query()

	turn, id, err := s.take(&req)
	if err != nil {
		s.logf("scripted: %s model %q: %v", wire, req.Model, err)
		writeError(w, wire, http.StatusInternalServerError, err.Error())
		return
	}
	if turn.DelayMS > 0 {
		timer := time.NewTimer(time.Duration(turn.DelayMS) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			s.logf("scripted: %s model %q: client gave up during the %dms delay", wire, req.Model, turn.DelayMS)
			return
		case <-s.done:
			writeError(w, wire, http.StatusServiceUnavailable, fmt.Sprintf("scripted model: server closed during the %dms delay of the turn", turn.DelayMS))
			return
		}
	}
	for k, v := range turn.Headers {
		w.Header().Set(k, v)
	}
	if e := turn.Error; e != nil {
		if e.RetryAfterS > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterS))
		}
		msg := e.Message
		if msg == "" {
			msg = http.StatusText(e.Status) + " (scripted)"
		}
		writeJSON(w, e.Status, errorReply(wire, e.Status, msg, e.RetryAfterS))
		return
	}
	out := reply{turn: turn, id: id, model: req.Model, usage: usage(&turn, &req), created: time.Now().Unix()}
	if out.model == "" {
		out.model = "scripted"
	}
	var werr error
	switch wire {
	case WireChat:
		werr = writeChat(w, &out, req.Stream, includeUsage)
	case WireResponses:
		werr = writeResponses(w, &out, req.Stream)
	case WireGemini:
		werr = writeGemini(w, &out, req.Stream, req.Query.Get("alt") == "sse")
	default:
		werr = writeMessages(w, &out, req.Stream)
	}
	if werr != nil {
		s.logf("scripted: %s model %q: writing the reply: %v", wire, req.Model, werr)
	}
}

// take records req and hands it the next turn of its script, with tool call
// ids filled in, and the number for the reply's ids.
func (s *Server) take(req *Request) (Turn, int, error) {
	if f, id := s.responder(req); f != nil {
		t, ok := f(req)
		if !ok {
			return Turn{}, 0, fmt.Errorf("scripted model: the responder for model %q has no answer for this request", req.Model)
		}
		if err := t.validate(); err != nil {
			return Turn{}, 0, fmt.Errorf("scripted model: the responder for model %q answered an invalid turn: %w", req.Model, err)
		}
		s.logf("scripted: %s model %q: responder turn %d", req.Wire, req.Model, id)
		return withIDs(t, id, req.Wire), id, nil
	}
	t, id, played, total, err := s.next(req)
	if err == nil { // logged outside the lock: Logf may call back into s
		s.logf("scripted: %s model %q: turn %d of %d", req.Wire, req.Model, played, total)
	}
	return t, id, err
}

// next does the work of take under the lock; played and total count the
// turns of the script.
func (s *Server) next(req *Request) (t Turn, id, played, total int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, *req)
	name := strconv.Quote(req.Model)
	p := s.scripts[req.Model]
	if p == nil {
		p = s.scripts[""]
		if p == nil {
			return Turn{}, 0, 0, 0, fmt.Errorf("scripted model: script for model %s has no turn left (played 0; no script for this model and no default script)", name)
		}
		if req.Model != "" {
			name += " (default script)"
		}
	}
	if p.played >= len(p.turns) {
		return Turn{}, 0, 0, 0, fmt.Errorf("scripted model: script for model %s has no turn left (played %d)", name, p.played)
	}
	t = p.turns[p.played]
	p.played++
	s.seq++
	id = s.seq
	return withIDs(t, id, req.Wire), id, p.played, len(p.turns), nil
}

// responder returns the responder for req, with the request recorded and
// numbered, or nil when its model is played from a script.
func (s *Server) responder(req *Request) (Responder, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.responders[req.Model]
	if f == nil && s.scripts[req.Model] == nil {
		f = s.responders[""]
	}
	if f == nil {
		return nil, 0
	}
	s.requests = append(s.requests, *req)
	s.seq++
	return f, s.seq
}

// withIDs fills in the tool call ids a turn left empty, in the wire's style.
func withIDs(t Turn, id int, wire string) Turn {
	prefix := "call_"
	if wire == WireMessages {
		prefix = "toolu_"
	}
	calls := make([]ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("%sscripted_%d_%d", prefix, id, i+1)
		}
		calls[i] = c
	}
	t.ToolCalls = calls
	return t
}

// serveCountTokens counts the prompt tokens of a request as usage estimates
// them: Anthropic's POST /v1/messages/count_tokens, or Gemini's POST
// /v1beta/models/{model}:countTokens (its body the contents alone, or a
// whole request under "generateContentRequest").
func (s *Server) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	wire := wireOf(r.URL.Path)
	var (
		req Request
		err error
	)
	if wire == WireGemini {
		var gc geminiCounting
		if err = json.Unmarshal(body, &gc); err == nil {
			gr := &gc.geminiRequest
			if gc.GenerateContentRequest != nil {
				gr = gc.GenerateContentRequest
			}
			req, err = gr.request("", false)
		}
	} else {
		req, err = parseMessages(body)
	}
	if err != nil {
		writeError(w, wire, http.StatusBadRequest, fmt.Sprintf("scripted model: %s: malformed request body: %v", r.URL.Path, err))
		return
	}
	n := tokens(req.inputChars())
	if wire == WireGemini {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": n})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": n})
}

// serveModels lists the scripted model names, plus "scripted" when there is
// a default script: in a shape both OpenAI and Anthropic clients read, or
// under /v1beta/models in Gemini's, which also answers for one model
// (GET /v1beta/models/{model}, whatever its name: any model is played).
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var names []string
	for name := range s.scripts {
		if name == "" {
			name = "scripted"
		}
		names = append(names, name)
	}
	s.mu.Unlock()
	slices.Sort(names)
	names = slices.Compact(names)
	if wireOf(r.URL.Path) == WireGemini {
		if model, _, ok := geminiPath(r.URL.Path); ok {
			writeJSON(w, http.StatusOK, geminiModel(model))
			return
		}
		models := make([]map[string]any, 0, len(names))
		for _, name := range names {
			models = append(models, geminiModel(name))
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": models})
		return
	}
	created := time.Now()
	data := make([]map[string]any, 0, len(names))
	for _, name := range names {
		data = append(data, map[string]any{
			"id": name, "object": "model", "type": "model", "display_name": name,
			"created": created.Unix(), "created_at": created.UTC().Format(time.RFC3339), "owned_by": "scripted",
		})
	}
	list := map[string]any{"object": "list", "data": data, "has_more": false}
	if len(names) > 0 {
		list["first_id"], list["last_id"] = names[0], names[len(names)-1]
	}
	writeJSON(w, http.StatusOK, list)
}

// geminiModel describes a model the Gemini way.
func geminiModel(name string) map[string]any {
	return map[string]any{
		"name": "models/" + name, "baseModelId": name, "version": "scripted", "displayName": name,
		"supportedGenerationMethods": []string{"generateContent", "countTokens"},
	}
}

// writeError answers with an error body in the shape of wire (see
// errorReply).
func writeError(w http.ResponseWriter, wire string, status int, msg string) {
	writeJSON(w, status, errorReply(wire, status, msg, 0))
}

// errorReply is an error answer's body. The OpenAI and Anthropic wires share
// one that clients of both read: {"type":"error","error":{"type":…,
// "message":…}}. Gemini's is Google's {"error":{"code":…,"message":…,
// "status":…}}, where a wait to retry after (retryAfterS > 0; 0 for none)
// is a RetryInfo detail, as Google sends it with a 429.
func errorReply(wire string, status int, msg string, retryAfterS int) map[string]any {
	if wire != WireGemini {
		return map[string]any{
			"type":  "error",
			"error": map[string]any{"type": errorType(status), "message": msg},
		}
	}
	e := map[string]any{"code": status, "message": msg, "status": googleStatus(status)}
	if retryAfterS > 0 {
		e["details"] = []any{map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.Itoa(retryAfterS) + "s",
		}}
	}
	return map[string]any{"error": e}
}

// googleStatus is the google.rpc.Code name Google's APIs answer an HTTP
// status with (the usual one, where several codes share a status).
func googleStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusInternalServerError:
		return "INTERNAL"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "UNKNOWN"
}

func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain maps and structs are written
		panic(fmt.Sprintf("scripted: marshal reply: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
