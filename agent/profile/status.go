package profile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/oauth"
)

// Status says whether a profile can be used from here.
type Status struct {
	Profile   Profile `json:"profile"`
	Default   bool    `json:"default,omitempty"`
	KeySource string  `json:"key_source,omitempty"` // environment | env file | not needed; "" when missing
	// Reachable is true when the endpoint answered (and accepted the key).
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
	// Login is a login provider's state: LoggedIn or NeedsLogin.
	Login string `json:"login,omitempty"`
}

// Login states.
const (
	LoggedIn   = "logged in"
	NeedsLogin = "needs login"
)

// Usable is true when the profile has what it needs and its endpoint answers.
func (s Status) Usable() bool { return s.Reachable && (s.KeySource != "" || !s.Profile.NeedsKey()) }

// Check probes one profile: is there a key, and does the endpoint answer
// GET <base>/models with it? It spends nothing (no model call) and never
// reports the key itself.
func (s Store) Check(ctx context.Context, p Profile, hc *http.Client, baseURL func(Profile) string) Status {
	st := Status{Profile: p}
	key, src, err := s.Key(p)
	if err != nil {
		st.Detail = err.Error()
		if p.LogsIn() {
			st.Login = NeedsLogin
		}
		return st
	}
	st.KeySource = src
	if p.LogsIn() {
		return s.checkLogin(ctx, p, hc, st)
	}
	if p.Provider == Scripted {
		st.Reachable, st.Detail = true, "scripted model, played inside each job; no key, no network"
		return st
	}
	base := strings.TrimRight(baseURL(p), "/")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	models := base + "/models"
	if p.Provider == Gemini {
		models = base + "/v1beta/models" // Gemini's base URL is the API's root
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, models, nil)
	if err != nil {
		st.Detail = err.Error()
		return st
	}
	switch p.Provider {
	case Anthropic:
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		req.Header.Set("anthropic-version", "2023-06-01")
	case Gemini:
		if key != "" {
			req.Header.Set("x-goog-api-key", key)
		}
	default:
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		var msg = err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "no answer within 5s"
		}
		st.Detail = fmt.Sprintf("%s unreachable: %s", base, msg)
		return st
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		st.Detail = fmt.Sprintf("%s refused the key (HTTP %d); check %s", base, resp.StatusCode, p.KeyName())
	case resp.StatusCode >= 500:
		st.Detail = fmt.Sprintf("%s answered HTTP %d (the provider is having trouble)", base, resp.StatusCode)
	default:
		st.Reachable = true
		st.Detail = fmt.Sprintf("%s answered HTTP %d", base, resp.StatusCode)
	}
	return st
}

// checkLogin reports a login: it makes sure the access token is good,
// refreshing it (and storing the new one) when due, which spends nothing.
func (s Store) checkLogin(ctx context.Context, p Profile, hc *http.Client, st Status) Status {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	src := &oauth.Source{Store: s.Logins(), Profile: p.Name, HTTP: hc}
	t, err := src.Token(ctx, false)
	if err != nil {
		st.Login, st.Detail = NeedsLogin, err.Error()
		return st
	}
	st.Login, st.Reachable = LoggedIn, true
	what := "GitHub Copilot"
	if p.Provider == ChatGPT {
		what = "ChatGPT"
	}
	st.Detail = fmt.Sprintf("logged in to %s since %s", what, t.LoggedInAt.Local().Format("2006-01-02 15:04"))
	if !t.ExpiresAt.IsZero() {
		st.Detail += fmt.Sprintf("; access token expires in %s, refreshed as needed", time.Until(t.ExpiresAt).Round(time.Minute))
	}
	return st
}
