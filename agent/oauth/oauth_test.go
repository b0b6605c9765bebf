package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/agent/oauth/oauthtest"
)

func fake(t *testing.T, s *oauthtest.Server) *oauthtest.Server {
	t.Helper()
	s, err := oauthtest.StartWith(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// polls returns the times of the token polls the server got.
func polls(s *oauthtest.Server, path string) []time.Time {
	var out []time.Time
	for _, r := range s.Requests() {
		if r.Path == path {
			out = append(out, r.At)
		}
	}
	return out
}

func TestCopilotLoginPendingThenApproved(t *testing.T) {
	s := fake(t, &oauthtest.Server{APIBase: "http://127.0.0.1:9/v1", Auto: func(poll int) string {
		if poll >= 3 {
			return oauthtest.Approve
		}
		return oauthtest.Pending
	}})
	f, err := oauth.Start(ctx(t), nil, oauth.Copilot, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if f.UserCode == "" || f.VerificationURI != s.URL()+"/login/device" {
		t.Fatalf("flow shows %q at %q", f.UserCode, f.VerificationURI)
	}
	tok, err := f.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(polls(s, "/login/oauth/access_token")); n != 3 {
		t.Fatalf("%d polls, want 3 (two pending, then approved)", n)
	}
	if tok.GitHubToken == "" || tok.AccessToken != "" {
		t.Fatalf("after the flow: %+v", tok)
	}
	st := oauth.Store{Dir: t.TempDir()}
	if err := oauth.Finish(ctx(t), nil, st, "cp", s.URL(), tok); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load("cp")
	if err != nil {
		t.Fatal(err)
	}
	if got.GitHubToken != s.GitHubTokens()[0] || !s.ValidCopilot(got.AccessToken) || got.APIBase != "http://127.0.0.1:9/v1" {
		t.Fatalf("stored %+v", got)
	}
	fi, err := os.Stat(st.Path("cp"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	// The device code was sent to the token endpoint, and is nowhere in the file.
	b, _ := os.ReadFile(st.Path("cp"))
	for _, dc := range s.DeviceCodes() {
		if strings.Contains(string(b), dc) {
			t.Fatal("the device code is in the token file")
		}
	}
}

func TestCopilotSlowDownRaisesInterval(t *testing.T) {
	s := fake(t, &oauthtest.Server{Interval: 50 * time.Millisecond, SlowDownBy: 250 * time.Millisecond, SlowDownFirst: 1,
		Auto: func(poll int) string {
			if poll >= 3 {
				return oauthtest.Approve
			}
			return oauthtest.Pending
		}})
	f, err := oauth.Start(ctx(t), nil, oauth.Copilot, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx(t)); err != nil {
		t.Fatal(err)
	}
	p := polls(s, "/login/oauth/access_token")
	if len(p) != 3 {
		t.Fatalf("%d polls, want 3", len(p))
	}
	if gap := p[1].Sub(p[0]); gap < 300*time.Millisecond {
		t.Fatalf("the poll after slow_down came %v later; the server asked for 300ms", gap)
	}
	if f.Interval != 300*time.Millisecond {
		t.Fatalf("interval %v after slow_down, want the 300ms the server named", f.Interval)
	}
}

func TestSlowDownWithoutIntervalAddsFiveSeconds(t *testing.T) {
	if got := oauth.SlowDown(2*time.Second, 0, false); got != 7*time.Second {
		t.Fatalf("slow_down from 2s without an interval: %v, want 7s", got)
	}
	if got := oauth.SlowDown(2*time.Second, time.Second, true); got != 7*time.Second {
		t.Fatalf("slow_down naming a shorter interval: %v, want 7s", got)
	}
}

func TestCopilotDeniedAndExpired(t *testing.T) {
	for _, c := range []struct {
		decision string
		want     error
	}{{oauthtest.Deny, oauth.ErrDenied}, {oauthtest.Expire, oauth.ErrExpired}} {
		s := fake(t, &oauthtest.Server{})
		f, err := oauth.Start(ctx(t), nil, oauth.Copilot, s.URL())
		if err != nil {
			t.Fatal(err)
		}
		s.Decide(f.UserCode, c.decision)
		if _, err := f.Wait(ctx(t)); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.decision, err, c.want)
		}
	}
	// A code nobody enters runs out on the client's side too.
	s := fake(t, &oauthtest.Server{ExpiresIn: 300 * time.Millisecond})
	f, err := oauth.Start(ctx(t), nil, oauth.Copilot, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := f.Wait(ctx(t)); !errors.Is(err, oauth.ErrExpired) {
		t.Fatalf("unanswered code: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("the wait went on long past the code's life")
	}
}

func login(t *testing.T, s *oauthtest.Server, provider string, st oauth.Store, name string) {
	t.Helper()
	s.Auto = func(int) string { return oauthtest.Approve }
	f, err := oauth.Start(ctx(t), nil, provider, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := oauth.Finish(ctx(t), nil, st, name, s.URL(), tok); err != nil {
		t.Fatal(err)
	}
}

func TestCopilotRefreshBeforeExpiryAndOn401(t *testing.T) {
	s := fake(t, &oauthtest.Server{APIBase: "http://x/v1"})
	st := oauth.Store{Dir: t.TempDir()}
	login(t, s, oauth.Copilot, st, "cp")
	now := time.Now()
	var heard []string
	src := &oauth.Source{Store: st, Profile: "cp", Now: func() time.Time { return now }, OnToken: func(v ...string) { heard = append(heard, v...) }}
	h := http.Header{}
	if err := src.Authorize(ctx(t), h, false); err != nil {
		t.Fatal(err)
	}
	first := s.CopilotTokens()[0]
	if h.Get("Authorization") != "Bearer "+first || h.Get("Copilot-Integration-Id") == "" || h.Get("Editor-Version") == "" {
		t.Fatalf("headers %v", h)
	}
	if n := len(s.CopilotTokens()); n != 1 {
		t.Fatalf("a fresh token was replaced: %d issued", n)
	}
	// Past refresh_in (25m), before expires_at (30m): a new token, stored.
	now = now.Add(26 * time.Minute)
	if err := src.Authorize(ctx(t), h, false); err != nil {
		t.Fatal(err)
	}
	if n := len(s.CopilotTokens()); n != 2 {
		t.Fatalf("%d tokens issued, want a refresh", n)
	}
	second := s.CopilotTokens()[1]
	if h.Get("Authorization") != "Bearer "+second {
		t.Fatal("the refreshed token is not the one sent")
	}
	got, _ := st.Load("cp")
	if got.AccessToken != second {
		t.Fatal("the refreshed token was not stored")
	}
	if fi, _ := os.Stat(st.Path("cp")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v after refresh", fi.Mode().Perm())
	}
	if !strings.Contains(strings.Join(heard, " "), second) {
		t.Fatal("OnToken did not hear of the refreshed token")
	}
	// The API refused it: one fresh token.
	if err := src.Authorize(ctx(t), h, true); err != nil {
		t.Fatal(err)
	}
	if n := len(s.CopilotTokens()); n != 3 || h.Get("Authorization") != "Bearer "+s.CopilotTokens()[2] {
		t.Fatalf("after a 401: %d tokens issued", n)
	}
	// A logged-out profile says how to log in.
	other := &oauth.Source{Store: st, Profile: "nobody"}
	if _, err := other.Token(ctx(t), false); err == nil || !strings.Contains(err.Error(), "hub profile login nobody") {
		t.Fatalf("not logged in: %v", err)
	}
}

func TestChatGPTLoginAndRefresh(t *testing.T) {
	s := fake(t, &oauthtest.Server{AccountID: "acct-7", AccessTTL: time.Hour})
	st := oauth.Store{Dir: t.TempDir()}
	login(t, s, oauth.ChatGPT, st, "cg")
	tok, err := st.Load("cg")
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != s.AccessTokens()[0] || tok.RefreshToken == "" || tok.AccountID != "acct-7" {
		t.Fatalf("stored %+v", tok)
	}
	now := time.Now()
	src := &oauth.Source{Store: st, Profile: "cg", Now: func() time.Time { return now }}
	h := http.Header{}
	if err := src.Authorize(ctx(t), h, false); err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer "+tok.AccessToken || h.Get("ChatGPT-Account-Id") != "acct-7" {
		t.Fatalf("headers %v", h)
	}
	now = now.Add(59*time.Minute + 30*time.Second) // within a minute of expiry
	if err := src.Authorize(ctx(t), h, false); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Load("cg")
	if len(s.AccessTokens()) != 2 || got.AccessToken != s.AccessTokens()[1] || got.RefreshToken == tok.RefreshToken {
		t.Fatalf("after refresh: issued %d, stored a new access and refresh token: %v", len(s.AccessTokens()), got.RefreshToken != tok.RefreshToken)
	}
	// The old refresh token was single-use: a second process holding the old
	// copy would be refused, so the source re-reads the file under the lock.
	src2 := &oauth.Source{Store: st, Profile: "cg", Now: func() time.Time { return now }}
	if _, err := src2.Token(ctx(t), false); err != nil {
		t.Fatal(err)
	}
	if len(s.AccessTokens()) != 2 {
		t.Fatal("a second source refreshed a token another had just refreshed")
	}
}

func TestChatGPTDenied(t *testing.T) {
	s := fake(t, &oauthtest.Server{})
	f, err := oauth.Start(ctx(t), nil, oauth.ChatGPT, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if f.VerificationURI != s.URL()+"/codex/device" {
		t.Fatalf("verification at %s", f.VerificationURI)
	}
	s.Decide(f.UserCode, oauthtest.Deny)
	if _, err := f.Wait(ctx(t)); !errors.Is(err, oauth.ErrDenied) {
		t.Fatalf("denied: %v", err)
	}
}
