// Package oauth logs the built-in worker into a subscription by the OAuth
// device flow (RFC 8628 and OpenAI's variant of it) and keeps the tokens
// fresh: GitHub Copilot (a GitHub token, traded for short-lived Copilot API
// tokens) and ChatGPT (access, refresh and id tokens from auth.openai.com).
// Tokens live in <config dir>/logins/<profile>.json (mode 0600, written
// atomically). Nothing here logs or returns a token to a caller that shows
// things: the device code and every token stay inside this package, the
// store file and the model client's Authorization header.
package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Providers that log in by device flow.
const (
	Copilot = "copilot"
	ChatGPT = "chatgpt"
)

// DefaultRoot is each provider's login server.
var DefaultRoot = map[string]string{
	Copilot: "https://github.com",
	ChatGPT: "https://auth.openai.com",
}

// Client ids the flows identify as: the Copilot editor plugins' GitHub app
// and the Codex CLI's.
const (
	copilotClientID = "Iv1.b507a08c87ecfe98"
	chatgptClientID = "app_EMoamEEZ73f0CkXaXp7hrann"
)

// Copilot's editor headers, which its API asks every caller for.
var CopilotHeaders = map[string]string{
	"Editor-Version":         "hub/1",
	"Editor-Plugin-Version":  "hub/1",
	"Copilot-Integration-Id": "vscode-chat",
	"User-Agent":             "hub",
}

// Errors a flow ends with.
var (
	ErrDenied   = errors.New("the user denied the login")
	ErrExpired  = errors.New("the code expired before the user entered it")
	ErrReplaced = errors.New("a newer login for this profile replaced this one")
	// ErrNotLoggedIn means there are no tokens for the profile.
	ErrNotLoggedIn = errors.New("not logged in")
)

// root returns the provider's login root: the profile's, or the default.
func root(provider, loginURL string) string {
	if loginURL != "" {
		return strings.TrimRight(loginURL, "/")
	}
	return DefaultRoot[provider]
}

// githubAPI is the REST root that goes with a GitHub login root: api.github.com
// for github.com, <root>/api/v3 for GitHub Enterprise Server (and tests).
func githubAPI(loginRoot string) string {
	if u, err := url.Parse(loginRoot); err == nil && u.Host == "github.com" {
		return "https://api.github.com"
	}
	return loginRoot + "/api/v3"
}

// Supported reports whether provider logs in by device flow.
func Supported(provider string) bool { _, ok := DefaultRoot[provider]; return ok }

// Tokens are what a login leaves: the stored file's content.
type Tokens struct {
	Provider string `json:"provider"`
	LoginURL string `json:"login_url,omitempty"`
	// GitHubToken is Copilot's long-lived GitHub token: what fetches API tokens.
	GitHubToken string `json:"github_token,omitempty"`
	// AccessToken is what the model API takes: the Copilot API token, or ChatGPT's access token.
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
	// AccountID is the ChatGPT account the id token names.
	AccountID string `json:"account_id,omitempty"`
	// APIBase is where Copilot's chat API answers for this account.
	APIBase   string    `json:"api_base,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RefreshAt is when to fetch a new access token (before ExpiresAt).
	RefreshAt  time.Time `json:"refresh_at,omitzero"`
	LoggedInAt time.Time `json:"logged_in_at,omitzero"`
}

// values are the secrets the tokens hold.
func (t Tokens) values() []string {
	var out []string
	for _, v := range []string{t.GitHubToken, t.AccessToken, t.RefreshToken, t.IDToken} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// due reports whether the access token should be replaced at now.
func (t Tokens) due(now time.Time) bool {
	if t.AccessToken == "" {
		return true
	}
	if !t.RefreshAt.IsZero() && !now.Before(t.RefreshAt) {
		return true
	}
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt.Add(-time.Minute))
}

// Flow is one device login waiting for its user. Only the verification
// address and the user code are for showing; the device code stays here.
type Flow struct {
	Provider        string
	VerificationURI string
	UserCode        string
	ExpiresAt       time.Time
	// Interval is the wait between polls, raised on slow_down.
	Interval time.Duration

	root, deviceCode, deviceAuthID string
	hc                             *http.Client
}

// Start asks the provider's login server for a code.
func Start(ctx context.Context, hc *http.Client, provider, loginURL string) (*Flow, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	f := &Flow{Provider: provider, root: root(provider, loginURL), hc: hc}
	switch provider {
	case Copilot:
		return f, f.startGitHub(ctx)
	case ChatGPT:
		return f, f.startChatGPT(ctx)
	}
	return nil, fmt.Errorf("provider %s has no device login (only %s and %s do)", provider, Copilot, ChatGPT)
}

// seconds reads a JSON number or numeric string as a duration.
func seconds(raw json.RawMessage) (time.Duration, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func (f *Flow) startGitHub(ctx context.Context) error {
	var r struct {
		DeviceCode      string          `json:"device_code"`
		UserCode        string          `json:"user_code"`
		VerificationURI string          `json:"verification_uri"`
		ExpiresIn       json.RawMessage `json:"expires_in"`
		Interval        json.RawMessage `json:"interval"`
	}
	form := url.Values{"client_id": {copilotClientID}, "scope": {"read:user"}}
	if _, err := f.post(ctx, f.root+"/login/device/code", form, nil, &r); err != nil {
		return err
	}
	if r.DeviceCode == "" || r.UserCode == "" || r.VerificationURI == "" {
		return errors.New("the login server's answer lacks a device code, user code or verification address")
	}
	f.deviceCode, f.UserCode, f.VerificationURI = r.DeviceCode, r.UserCode, r.VerificationURI
	f.Interval = 5 * time.Second
	if d, ok := seconds(r.Interval); ok && d > 0 {
		f.Interval = d
	}
	exp := 15 * time.Minute
	if d, ok := seconds(r.ExpiresIn); ok && d > 0 {
		exp = d
	}
	f.ExpiresAt = time.Now().Add(exp)
	return nil
}

func (f *Flow) startChatGPT(ctx context.Context) error {
	var r struct {
		DeviceAuthID string          `json:"device_auth_id"`
		UserCode     string          `json:"user_code"`
		UserCodeAlt  string          `json:"usercode"`
		Interval     json.RawMessage `json:"interval"`
	}
	body := map[string]string{"client_id": chatgptClientID}
	if _, err := f.post(ctx, f.root+"/api/accounts/deviceauth/usercode", nil, body, &r); err != nil {
		return err
	}
	if r.UserCode == "" {
		r.UserCode = r.UserCodeAlt
	}
	if r.DeviceAuthID == "" || r.UserCode == "" {
		return errors.New("the login server's answer lacks a device auth id or user code")
	}
	f.deviceAuthID, f.UserCode = r.DeviceAuthID, r.UserCode
	f.VerificationURI = f.root + "/codex/device"
	f.Interval = 5 * time.Second
	if d, ok := seconds(r.Interval); ok && d > 0 {
		f.Interval = d
	}
	// The server gives no lifetime; Codex gives up after 15 minutes.
	f.ExpiresAt = time.Now().Add(15 * time.Minute)
	return nil
}

// SlowDown is the interval after a slow_down answer: the one the server
// names, or the old one plus five seconds (RFC 8628, section 3.5).
func SlowDown(old time.Duration, named time.Duration, ok bool) time.Duration {
	if ok && named > old {
		return named
	}
	return old + 5*time.Second
}

// Wait polls until the user authorizes (the tokens, not yet stored), denies
// (ErrDenied), the code expires (ErrExpired) or ctx ends.
func (f *Flow) Wait(ctx context.Context) (*Tokens, error) {
	for {
		wait := time.Until(f.ExpiresAt)
		if wait <= 0 {
			return nil, ErrExpired
		}
		t := time.NewTimer(min(f.Interval, wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		var (
			tok  *Tokens
			done bool
			err  error
		)
		if f.Provider == Copilot {
			tok, done, err = f.pollGitHub(ctx)
		} else {
			tok, done, err = f.pollChatGPT(ctx)
		}
		if err != nil || done {
			return tok, err
		}
	}
}

func (f *Flow) pollGitHub(ctx context.Context) (*Tokens, bool, error) {
	var r struct {
		AccessToken string          `json:"access_token"`
		Error       string          `json:"error"`
		Description string          `json:"error_description"`
		Interval    json.RawMessage `json:"interval"`
	}
	form := url.Values{"client_id": {copilotClientID}, "device_code": {f.deviceCode},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	status, err := f.post(ctx, f.root+"/login/oauth/access_token", form, nil, &r)
	if err != nil && r.Error == "" {
		return nil, false, err
	}
	switch r.Error {
	case "":
		if r.AccessToken == "" {
			return nil, false, fmt.Errorf("the login server answered HTTP %d without a token", status)
		}
		return &Tokens{Provider: Copilot, GitHubToken: r.AccessToken, LoggedInAt: time.Now()}, true, nil
	case "authorization_pending":
		return nil, false, nil
	case "slow_down":
		d, ok := seconds(r.Interval)
		f.Interval = SlowDown(f.Interval, d, ok)
		return nil, false, nil
	case "expired_token":
		return nil, false, ErrExpired
	case "access_denied":
		return nil, false, ErrDenied
	}
	return nil, false, fmt.Errorf("the login server refused: %s %s", r.Error, r.Description)
}

func (f *Flow) pollChatGPT(ctx context.Context) (*Tokens, bool, error) {
	var r struct {
		AuthorizationCode string `json:"authorization_code"`
		CodeVerifier      string `json:"code_verifier"`
		Error             any    `json:"error"`
	}
	body := map[string]string{"device_auth_id": f.deviceAuthID, "user_code": f.UserCode}
	status, err := f.post(ctx, f.root+"/api/accounts/deviceauth/token", nil, body, &r)
	switch {
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return nil, false, nil // not authorized yet
	case status == http.StatusGone:
		return nil, false, ErrExpired
	case status == http.StatusUnauthorized:
		return nil, false, ErrDenied
	case err != nil:
		return nil, false, err
	case r.AuthorizationCode == "" || r.CodeVerifier == "":
		return nil, false, errors.New("the login server's answer lacks an authorization code or verifier")
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {r.AuthorizationCode},
		"redirect_uri": {f.root + "/deviceauth/callback"}, "client_id": {chatgptClientID}, "code_verifier": {r.CodeVerifier}}
	var tr tokenReply
	if _, err := f.post(ctx, f.root+"/oauth/token", form, nil, &tr); err != nil {
		return nil, false, fmt.Errorf("exchange the authorization code: %w", err)
	}
	t := &Tokens{Provider: ChatGPT, LoggedInAt: time.Now()}
	if err := tr.apply(t, time.Now()); err != nil {
		return nil, false, err
	}
	return t, true, nil
}

// tokenReply is an OAuth token endpoint's answer.
type tokenReply struct {
	AccessToken  string          `json:"access_token"`
	RefreshToken string          `json:"refresh_token"`
	IDToken      string          `json:"id_token"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
}

func (tr tokenReply) apply(t *Tokens, now time.Time) error {
	if tr.AccessToken == "" {
		return errors.New("the token endpoint's answer has no access token")
	}
	t.AccessToken = tr.AccessToken
	if tr.RefreshToken != "" {
		t.RefreshToken = tr.RefreshToken
	}
	if tr.IDToken != "" {
		t.IDToken = tr.IDToken
		t.AccountID = accountID(tr.IDToken)
	}
	t.ExpiresAt, t.RefreshAt = time.Time{}, time.Time{}
	if d, ok := seconds(tr.ExpiresIn); ok && d > 0 {
		t.ExpiresAt = now.Add(d)
	}
	return nil
}

// accountID reads the ChatGPT account id from an id token's claims (the
// token is not verified: it came straight from the token endpoint over TLS).
func accountID(idToken string) string {
	parts := strings.Split(idToken, ".")
	if len(parts) < 2 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Auth struct {
			AccountID string `json:"chatgpt_account_id"`
		} `json:"https://api.openai.com/auth"`
	}
	if json.Unmarshal(b, &claims) != nil {
		return ""
	}
	return claims.Auth.AccountID
}

// post sends a form (or a JSON body) and decodes a JSON answer into out,
// which is filled even on an error status (OAuth errors come as 4xx JSON).
func (f *Flow) post(ctx context.Context, u string, form url.Values, body any, out any) (int, error) {
	return send(ctx, f.hc, http.MethodPost, u, form, body, nil, out)
}

func send(ctx context.Context, hc *http.Client, method, u string, form url.Values, body any, h http.Header, out any) (int, error) {
	var rd io.Reader
	ctype := ""
	switch {
	case form != nil:
		rd, ctype = strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"
	case body != nil:
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd, ctype = strings.NewReader(string(b)), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reach %s: %w", hostOf(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	jerr := json.Unmarshal(b, out)
	if resp.StatusCode/100 != 2 {
		// The body is not echoed: an error page may carry what was sent.
		return resp.StatusCode, fmt.Errorf("%s answered HTTP %d", hostOf(u), resp.StatusCode)
	}
	if jerr != nil {
		return resp.StatusCode, fmt.Errorf("%s answered something other than JSON", hostOf(u))
	}
	return resp.StatusCode, nil
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Scheme + "://" + p.Host
	}
	return "the login server"
}
