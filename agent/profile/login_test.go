package profile_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/agent/oauth/oauthtest"
	"github.com/hub-agents/hub/agent/profile"
)

// TestLoginProfiles: copilot and chatgpt profiles need a model and no key;
// a login URL must be an http(s) root and belongs to them only; a key
// variable is refused on them.
func TestLoginProfiles(t *testing.T) {
	for _, p := range []profile.Profile{
		{Name: "cp", Provider: profile.Copilot, Model: "gpt-4.1"},
		{Name: "ghe", Provider: profile.Copilot, Model: "gpt-4.1", LoginURL: "https://github.example.com"},
		{Name: "cg", Provider: profile.ChatGPT, Model: "gpt-5-codex"},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		if !p.LogsIn() || p.NeedsKey() || p.KeyName() != "" {
			t.Errorf("%s: logs in %v, needs a key %v, key name %q", p.Name, p.LogsIn(), p.NeedsKey(), p.KeyName())
		}
	}
	for _, c := range []struct {
		p    profile.Profile
		want string
	}{
		{profile.Profile{Name: "cp", Provider: profile.Copilot}, "name a model"},
		{profile.Profile{Name: "cp", Provider: profile.Copilot, Model: "m", LoginURL: "github.com"}, "not an http(s) URL"},
		{profile.Profile{Name: "o", Provider: profile.OpenAI, Model: "m", LoginURL: "https://github.com"}, "a login URL is for"},
		{profile.Profile{Name: "cp", Provider: profile.Copilot, Model: "m", KeyEnv: "GH_TOKEN"}, "takes no key variable"},
	} {
		if err := c.p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// TestLoginKeyStatusAndValues: before a login, Key says how to log in and
// Check says "needs login"; after one, the key source is "login", Check
// says logged in (making sure the access token is good), and KeyValues
// holds every stored token so hub redacts them by value.
func TestLoginKeyStatusAndValues(t *testing.T) {
	srv, err := oauthtest.StartWith(&oauthtest.Server{APIBase: "http://127.0.0.1:9/v1", Auto: func(int) string { return oauthtest.Approve }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := profile.Store{Dir: t.TempDir(), Environ: func(string) (string, bool) { return "", false }}
	p := profile.Profile{Name: "cp", Provider: profile.Copilot, Model: "gpt-4.1", LoginURL: srv.URL()}
	if err := s.Set(p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Key(p); err == nil || !strings.Contains(err.Error(), "hub profile login cp") {
		t.Fatalf("Key before the login: %v", err)
	}
	if st := s.Check(ctx, p, http.DefaultClient, nil); st.Login != profile.NeedsLogin || st.Usable() {
		t.Fatalf("Check before the login: %+v", st)
	}
	f, err := oauth.Start(ctx, nil, p.Provider, p.LoginURL)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := oauth.Finish(ctx, nil, s.Logins(), p.Name, p.LoginURL, tok); err != nil {
		t.Fatal(err)
	}
	if _, src, err := s.Key(p); err != nil || src != profile.FromLogin {
		t.Fatalf("Key after the login: %q, %v", src, err)
	}
	st := s.Check(ctx, p, http.DefaultClient, nil)
	if st.Login != profile.LoggedIn || !st.Usable() || !strings.Contains(st.Detail, "logged in to GitHub Copilot") {
		t.Fatalf("Check after the login: %+v", st)
	}
	vals := s.KeyValues()
	for _, secret := range append(srv.GitHubTokens(), srv.CopilotTokens()...) {
		if !slices.Contains(vals, secret) {
			t.Error("KeyValues lacks a login token")
		}
		if strings.Contains(st.Detail, secret) {
			t.Error("Check's detail shows a token")
		}
	}
	// The same name on another login server is not logged in there.
	moved := p
	moved.LoginURL = "https://github.example.com"
	if _, _, err := s.Key(moved); err == nil || !strings.Contains(err.Error(), "another provider or login server") {
		t.Fatalf("Key of the profile moved to another server: %v", err)
	}
	// Removing the profile forgets its login.
	if err := s.Remove("cp"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Logins().Load("cp"); !errors.Is(err, oauth.ErrNotLoggedIn) {
		t.Fatalf("the login outlived its profile: %v", err)
	}
}
