package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/internal/atomicfile"
)

// Store keeps each profile's tokens in <Dir>/logins/<profile>.json.
type Store struct{ Dir string }

func (s Store) dir() string                { return filepath.Join(s.Dir, "logins") }
func (s Store) Path(profile string) string { return filepath.Join(s.dir(), profile+".json") }

// Load returns the profile's tokens, or ErrNotLoggedIn.
func (s Store) Load(profile string) (Tokens, error) {
	var t Tokens
	b, err := os.ReadFile(s.Path(profile))
	if errors.Is(err, os.ErrNotExist) {
		return t, ErrNotLoggedIn
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("%s is not valid JSON; log in again with `hub profile login %s`", s.Path(profile), profile)
	}
	return t, nil
}

// Save writes the profile's tokens (mode 0600, atomically).
func (s Store) Save(profile string, t Tokens) error {
	if err := os.MkdirAll(s.dir(), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.Path(profile), append(b, '\n'), 0o600)
}

// Remove forgets the profile's tokens.
func (s Store) Remove(profile string) error {
	err := os.Remove(s.Path(profile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Values returns every token stored, for redaction by value. A caller must
// never print, log or pass on what it returns.
func (s Store) Values() []string {
	ents, err := os.ReadDir(s.dir())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() && !strings.HasPrefix(name, ".") {
			if t, err := s.Load(name); err == nil {
				out = append(out, t.values()...)
			}
		}
	}
	return out
}

// lock serializes refreshes of one profile across processes: a ChatGPT
// refresh token is good for one use.
func (s Store) lock(profile string) (func(), error) {
	if err := os.MkdirAll(s.dir(), 0o700); err != nil {
		return nil, err
	}
	l := flock.New(s.Path(profile) + ".lock")
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("lock the login of %s: %w", profile, err)
	}
	return func() { l.Unlock() }, nil
}

// Source hands out a profile's access token, refreshed before it expires
// and stored again when refreshed. It is safe for concurrent use.
type Source struct {
	Store   Store
	Profile string
	HTTP    *http.Client // default http.DefaultClient
	// OnToken, if set, hears of the secrets of every tokens it hands out
	// anew, the first ones included (to redact them).
	OnToken func(values ...string)
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu  sync.Mutex
	cur Tokens
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Token returns tokens whose access token is good now, refreshing first
// when it is due or when force is set (after the API refused it).
func (s *Source) Token(ctx context.Context, force bool) (Tokens, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.AccessToken != "" && !force && !s.cur.due(s.now()) {
		return s.cur, nil
	}
	unlock, err := s.Store.lock(s.Profile)
	if err != nil {
		return Tokens{}, err
	}
	defer unlock()
	t, err := s.Store.Load(s.Profile)
	if err != nil {
		if errors.Is(err, ErrNotLoggedIn) {
			return Tokens{}, fmt.Errorf("profile %s is not logged in: run `hub profile login %s`", s.Profile, s.Profile)
		}
		return Tokens{}, err
	}
	// Another process may have refreshed it since this one's copy.
	stale := force && t.AccessToken != "" && t.AccessToken == s.cur.AccessToken
	if t.due(s.now()) || stale || (force && s.cur.AccessToken == "") {
		if err := s.refresh(ctx, &t); err != nil {
			return Tokens{}, err
		}
		if err := s.Store.Save(s.Profile, t); err != nil {
			return Tokens{}, fmt.Errorf("store the refreshed token of %s: %w", s.Profile, err)
		}
	}
	if s.OnToken != nil && t.AccessToken != s.cur.AccessToken {
		s.OnToken(t.values()...)
	}
	s.cur = t
	return t, nil
}

func (s *Source) refresh(ctx context.Context, t *Tokens) error {
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	switch t.Provider {
	case Copilot:
		return copilotToken(ctx, hc, t, s.now())
	case ChatGPT:
		if t.RefreshToken == "" {
			return fmt.Errorf("profile %s has no refresh token: run `hub profile login %s`", s.Profile, s.Profile)
		}
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken},
			"client_id": {chatgptClientID}, "scope": {"openid profile email"}}
		var tr tokenReply
		status, err := send(ctx, hc, http.MethodPost, root(ChatGPT, t.LoginURL)+"/oauth/token", form, nil, nil, &tr)
		if status == http.StatusBadRequest || status == http.StatusUnauthorized {
			return fmt.Errorf("the ChatGPT login of %s has ended (HTTP %d): run `hub profile login %s`", s.Profile, status, s.Profile)
		}
		if err != nil {
			return fmt.Errorf("refresh the ChatGPT token: %w", err)
		}
		return tr.apply(t, s.now())
	}
	return fmt.Errorf("profile %s: tokens of unknown provider %q; run `hub profile login %s`", s.Profile, t.Provider, s.Profile)
}

// CopilotToken trades t's GitHub token for a Copilot API token, filling
// AccessToken, ExpiresAt, RefreshAt and APIBase.
func CopilotToken(ctx context.Context, hc *http.Client, t *Tokens) error {
	return copilotToken(ctx, hc, t, time.Now())
}

func copilotToken(ctx context.Context, hc *http.Client, t *Tokens, now time.Time) error {
	if t.GitHubToken == "" {
		return errors.New("no GitHub token stored: log in again")
	}
	var r struct {
		Token     string          `json:"token"`
		ExpiresAt int64           `json:"expires_at"`
		RefreshIn json.RawMessage `json:"refresh_in"`
		Endpoints struct {
			API string `json:"api"`
		} `json:"endpoints"`
	}
	h := http.Header{"Authorization": {"token " + t.GitHubToken}}
	for k, v := range CopilotHeaders {
		h.Set(k, v)
	}
	api := githubAPI(root(Copilot, t.LoginURL))
	status, err := send(ctx, hc, http.MethodGet, api+"/copilot_internal/v2/token", nil, nil, h, &r)
	switch {
	case status == http.StatusUnauthorized:
		return errors.New("GitHub no longer accepts the stored token: log in again with `hub profile login`")
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return errors.New("GitHub refused a Copilot token for this account (no Copilot subscription, or Copilot is off for it)")
	case err != nil:
		return fmt.Errorf("fetch a Copilot token: %w", err)
	case r.Token == "":
		return errors.New("GitHub's answer has no Copilot token")
	}
	t.AccessToken = r.Token
	t.ExpiresAt, t.RefreshAt = time.Time{}, time.Time{}
	if r.ExpiresAt > 0 {
		t.ExpiresAt = time.Unix(r.ExpiresAt, 0)
	}
	if d, ok := seconds(r.RefreshIn); ok && d > 0 {
		t.RefreshAt = now.Add(d)
	}
	t.APIBase = strings.TrimRight(r.Endpoints.API, "/")
	if t.APIBase == "" {
		t.APIBase = "https://api.githubcopilot.com"
	}
	return nil
}

// Authorize sets h's credentials for the model API: the access token as
// Bearer, and the provider's headers. retry asks for a fresh token, after
// the API refused the last one.
func (s *Source) Authorize(ctx context.Context, h http.Header, retry bool) error {
	t, err := s.Token(ctx, retry)
	if err != nil {
		return err
	}
	h.Set("Authorization", "Bearer "+t.AccessToken)
	switch t.Provider {
	case Copilot:
		for k, v := range CopilotHeaders {
			h.Set(k, v)
		}
	case ChatGPT:
		if t.AccountID != "" {
			h.Set("ChatGPT-Account-Id", t.AccountID)
		}
		h.Set("OpenAI-Beta", "responses=experimental")
	}
	return nil
}

// Finish completes a login: for Copilot it fetches the first API token (so
// a login without a subscription fails now, not at the first job), then it
// stores the tokens.
func Finish(ctx context.Context, hc *http.Client, st Store, profile, loginURL string, t *Tokens) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	t.LoginURL = loginURL
	if t.Provider == Copilot {
		if err := CopilotToken(ctx, hc, t); err != nil {
			return err
		}
	}
	return st.Save(profile, *t)
}
