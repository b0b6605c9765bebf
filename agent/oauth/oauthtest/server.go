// Package oauthtest is a scripted login server on loopback that stands in
// for GitHub (device flow and Copilot API tokens) and auth.openai.com
// (ChatGPT's device flow and token endpoint) in tests, as package scripted
// stands in for the model. It keeps the rules a real server keeps: a poll
// sooner than the interval is told to slow down, a code past its lifetime
// is expired, a token it did not issue is refused.
package oauthtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Decisions a user makes about a code.
const (
	Pending = "pending"
	Approve = "approve"
	Deny    = "deny"
	// Expire ends the code's life now.
	Expire = "expire"
)

// Server is the fake login server. Set the fields before the first request.
type Server struct {
	// Interval is the poll interval it asks for (default 50ms).
	Interval time.Duration
	// SlowDownBy is what a slow_down adds to the interval (default 100ms);
	// it is named in the answer, as GitHub does.
	SlowDownBy time.Duration
	// ExpiresIn is each code's lifetime (default 10s).
	ExpiresIn time.Duration
	// Auto, if set, is asked at each poll what the user has done about
	// the code so far (poll counts from 1); a decision made with Decide
	// wins over it.
	Auto func(poll int) string
	// SlowDownFirst answers the first n polls of each code with slow_down.
	SlowDownFirst int
	// CopilotTTL is each Copilot API token's lifetime (default 30m), and
	// RefreshIn when to refresh it (default 25m).
	CopilotTTL, RefreshIn time.Duration
	// AccessTTL is each ChatGPT access token's lifetime (default 1h).
	AccessTTL time.Duration
	// APIBase is the Copilot API address its tokens name.
	APIBase string
	// AccountID is the ChatGPT account the id tokens name.
	AccountID string

	ln  net.Listener
	srv *http.Server

	mu        sync.Mutex
	codes     map[string]*code // by device code (or device auth id)
	decided   map[string]string
	gh        map[string]bool // GitHub tokens issued
	copilot   []string        // Copilot tokens issued, in order
	access    []string        // ChatGPT access tokens issued
	refresh   map[string]bool // live refresh tokens
	authCodes map[string]string
	log       []Request
}

type code struct {
	user     string
	expires  time.Time
	interval time.Duration
	last     time.Time
	polls    int
	done     bool
}

// Request is one request the server got: its path and its form or JSON
// fields (flattened to strings).
type Request struct {
	Method, Path string
	Fields       map[string]string
	Header       http.Header
	At           time.Time
}

// Start serves on a loopback port until Close.
func Start() (*Server, error) { return StartWith(&Server{}) }

// StartWith serves s.
func StartWith(s *Server) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.codes, s.decided, s.gh, s.refresh, s.authCodes = map[string]*code{}, map[string]string{}, map[string]bool{}, map[string]bool{}, map[string]string{}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the server's root: a profile's login URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Decide records the user's decision about a user code.
func (s *Server) Decide(userCode, decision string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided[userCode] = decision
}

// Requests returns what the server got so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// DeviceCodes returns every device code (and device auth id) issued.
func (s *Server) DeviceCodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for dc := range s.codes {
		out = append(out, dc)
	}
	return out
}

// GitHubTokens returns the GitHub tokens issued.
func (s *Server) GitHubTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.gh {
		out = append(out, t)
	}
	return out
}

// CopilotTokens returns the Copilot API tokens issued, oldest first.
func (s *Server) CopilotTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.copilot...)
}

// AccessTokens returns the ChatGPT access tokens issued, oldest first.
func (s *Server) AccessTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.access...)
}

func (s *Server) interval() time.Duration { return or(s.Interval, 50*time.Millisecond) }

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func random(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func userCode() string {
	const letters = "BCDFGHJKLMNPQRSTVWXZ"
	var b [8]byte
	rand.Read(b[:])
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, letters[int(c)%len(letters)])
	}
	return string(out)
}

func secs(d time.Duration) float64 { return d.Seconds() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	fields := map[string]string{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		for k, v := range m {
			if str, ok := v.(string); ok {
				fields[k] = str
			}
		}
	} else if r.ParseForm() == nil {
		for k := range r.PostForm {
			fields[k] = r.PostForm.Get(k)
		}
	}
	s.mu.Lock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Fields: fields, Header: r.Header.Clone(), At: time.Now()})
	s.mu.Unlock()
	switch r.Method + " " + r.URL.Path {
	case "POST /login/device/code":
		s.ghCode(w, fields)
	case "POST /login/oauth/access_token":
		s.ghPoll(w, fields)
	case "GET /api/v3/copilot_internal/v2/token":
		s.copilotToken(w, r)
	case "POST /api/accounts/deviceauth/usercode":
		s.cgCode(w, fields)
	case "POST /api/accounts/deviceauth/token":
		s.cgPoll(w, fields)
	case "POST /oauth/token":
		s.cgToken(w, fields)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
	}
}

func (s *Server) newCode() (string, *code) {
	c := &code{user: userCode(), expires: time.Now().Add(or(s.ExpiresIn, 10*time.Second)), interval: s.interval()}
	dc := random("dc_")
	s.mu.Lock()
	s.codes[dc] = c
	s.mu.Unlock()
	return dc, c
}

// poll decides a poll of device code dc: "" (unknown), pending, slow_down,
// expired, approve or deny.
func (s *Server) poll(dc string) (string, *code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.codes[dc]
	if c == nil || c.done {
		return "", nil
	}
	now := time.Now()
	c.polls++
	early := !c.last.IsZero() && now.Sub(c.last) < c.interval-c.interval/10
	c.last = now
	switch {
	case now.After(c.expires) || s.decided[c.user] == Expire:
		return "expired", c
	case c.polls <= s.SlowDownFirst || early:
		c.interval += or(s.SlowDownBy, 100*time.Millisecond)
		return "slow_down", c
	}
	d := s.decided[c.user]
	if d == "" && s.Auto != nil {
		d = s.Auto(c.polls)
	}
	if d == Approve || d == Deny {
		c.done = true
		return d, c
	}
	return Pending, c
}

func (s *Server) ghCode(w http.ResponseWriter, f map[string]string) {
	if f["client_id"] == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unauthorized_client"})
		return
	}
	dc, c := s.newCode()
	writeJSON(w, 200, map[string]any{"device_code": dc, "user_code": c.user, "verification_uri": s.URL() + "/login/device",
		"expires_in": secs(c.expires.Sub(time.Now())), "interval": secs(c.interval)})
}

func (s *Server) ghPoll(w http.ResponseWriter, f map[string]string) {
	if f["grant_type"] != "urn:ietf:params:oauth:grant-type:device_code" {
		writeJSON(w, 200, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	// GitHub answers 200 with an error field.
	switch d, c := s.poll(f["device_code"]); d {
	case "":
		writeJSON(w, 200, map[string]string{"error": "incorrect_device_code"})
	case "expired":
		writeJSON(w, 200, map[string]string{"error": "expired_token"})
	case "slow_down":
		writeJSON(w, 200, map[string]any{"error": "slow_down", "interval": secs(c.interval)})
	case Pending:
		writeJSON(w, 200, map[string]string{"error": "authorization_pending"})
	case Deny:
		writeJSON(w, 200, map[string]string{"error": "access_denied"})
	case Approve:
		tok := random("gho_")
		s.mu.Lock()
		s.gh[tok] = true
		s.mu.Unlock()
		writeJSON(w, 200, map[string]string{"access_token": tok, "token_type": "bearer", "scope": "read:user"})
	}
}

func (s *Server) copilotToken(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	s.mu.Lock()
	ok = ok && s.gh[tok]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	ct := random("tid=cop_")
	s.mu.Lock()
	s.copilot = append(s.copilot, ct)
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"token": ct, "expires_at": time.Now().Add(or(s.CopilotTTL, 30*time.Minute)).Unix(),
		"refresh_in": int(or(s.RefreshIn, 25*time.Minute).Seconds()), "endpoints": map[string]string{"api": s.APIBase}})
}

// ValidCopilot reports whether tok is the newest Copilot token issued.
func (s *Server) ValidCopilot(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.copilot) > 0 && s.copilot[len(s.copilot)-1] == tok
}

func (s *Server) cgCode(w http.ResponseWriter, f map[string]string) {
	if f["client_id"] == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing client_id"})
		return
	}
	id, c := s.newCode()
	writeJSON(w, 200, map[string]any{"device_auth_id": id, "user_code": c.user, "interval": secs(c.interval)})
}

func (s *Server) cgPoll(w http.ResponseWriter, f map[string]string) {
	d, c := s.poll(f["device_auth_id"])
	if c != nil && c.user != f["user_code"] {
		d = ""
	}
	switch d {
	case "", Pending, "slow_down":
		// OpenAI answers 403 (or 404) until the user has authorized.
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "authorization_pending"})
	case "expired":
		writeJSON(w, http.StatusGone, map[string]string{"error": "expired"})
	case Deny:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "denied"})
	case Approve:
		ac, verifier := random("ac_"), random("pkce_")
		s.mu.Lock()
		s.authCodes[ac] = verifier
		s.mu.Unlock()
		writeJSON(w, 200, map[string]string{"authorization_code": ac, "code_verifier": verifier, "code_challenge": "unused"})
	}
}

func (s *Server) cgToken(w http.ResponseWriter, f map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f["grant_type"] {
	case "authorization_code":
		v, ok := s.authCodes[f["code"]]
		if !ok || v != f["code_verifier"] || f["redirect_uri"] == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.authCodes, f["code"])
	case "refresh_token":
		if !s.refresh[f["refresh_token"]] {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.refresh, f["refresh_token"]) // one use
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := random("cg_at_"), random("cg_rt_")
	s.access = append(s.access, at)
	s.refresh[rt] = true
	claims, _ := json.Marshal(map[string]any{"https://api.openai.com/auth": map[string]string{"chatgpt_account_id": s.AccountID}})
	idt := "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + "."
	writeJSON(w, 200, map[string]any{"access_token": at, "refresh_token": rt, "id_token": idt,
		"expires_in": int(or(s.AccessTTL, time.Hour).Seconds())})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
