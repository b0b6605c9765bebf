package profile_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
)

const secret = "sk-test-0123456789-secret"

// request is what the fake provider saw.
type request struct {
	Method, Path, Authorization, APIKey, AnthropicVersion string
}

// provider is a model endpoint on loopback that answers every request with
// code and records what it was sent.
type provider struct {
	*httptest.Server
	mu   sync.Mutex
	seen []request
}

func newProvider(t *testing.T, code int) *provider {
	t.Helper()
	p := &provider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, request{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")})
		p.mu.Unlock()
		// A body that echoes the key: Check must not pass it on.
		w.WriteHeader(code)
		w.Write([]byte(`{"error": "bad key ` + r.Header.Get("Authorization") + r.Header.Get("x-api-key") + `"}`))
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *provider) requests() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.seen...)
}

// base points every profile at url.
func base(url string) func(profile.Profile) string {
	return func(profile.Profile) string { return url }
}

func TestCheckAgainstAServer(t *testing.T) {
	openai := profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}
	anthropic := profile.Profile{Name: "claude", Provider: profile.Anthropic, Model: "m"}
	ollama := profile.Profile{Name: "local", Provider: profile.Ollama, Model: "q"}
	withKey := map[string]string{"OPENAI_API_KEY": secret, "ANTHROPIC_API_KEY": secret}
	for _, tc := range []struct {
		name      string
		p         profile.Profile
		env       map[string]string
		code      int
		reachable bool
		usable    bool
		keySource string
		detail    []string
		sent      request
	}{
		{
			name: "openai 200", p: openai, env: withKey, code: 200, reachable: true, usable: true, keySource: profile.FromEnv,
			detail: []string{"answered HTTP 200"},
			sent:   request{Method: "GET", Path: "/v1/models", Authorization: "Bearer " + secret},
		},
		{
			name: "anthropic 200", p: anthropic, env: withKey, code: 200, reachable: true, usable: true, keySource: profile.FromEnv,
			detail: []string{"answered HTTP 200"},
			sent:   request{Method: "GET", Path: "/v1/models", APIKey: secret, AnthropicVersion: "2023-06-01"},
		},
		{
			name: "ollama needs no key", p: ollama, code: 200, reachable: true, usable: true, keySource: profile.NotNeeded,
			detail: []string{"answered HTTP 200"},
			sent:   request{Method: "GET", Path: "/v1/models"},
		},
		{
			name: "openai 401", p: openai, env: withKey, code: 401, keySource: profile.FromEnv,
			detail: []string{"refused the key", "HTTP 401", "check OPENAI_API_KEY"},
			sent:   request{Method: "GET", Path: "/v1/models", Authorization: "Bearer " + secret},
		},
		{
			name: "anthropic 403", p: anthropic, env: withKey, code: 403, keySource: profile.FromEnv,
			detail: []string{"refused the key", "HTTP 403", "check ANTHROPIC_API_KEY"},
			sent:   request{Method: "GET", Path: "/v1/models", APIKey: secret, AnthropicVersion: "2023-06-01"},
		},
		{
			name: "openai 500", p: openai, env: withKey, code: 500, keySource: profile.FromEnv,
			detail: []string{"HTTP 500", "provider is having trouble"},
			sent:   request{Method: "GET", Path: "/v1/models", Authorization: "Bearer " + secret},
		},
		{
			name: "openai 503", p: openai, env: withKey, code: 503, keySource: profile.FromEnv,
			detail: []string{"HTTP 503", "provider is having trouble"},
			sent:   request{Method: "GET", Path: "/v1/models", Authorization: "Bearer " + secret},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newProvider(t, tc.code)
			s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(tc.env)}
			// A trailing slash on the base URL is not doubled.
			st := s.Check(context.Background(), tc.p, srv.Client(), base(srv.URL+"/v1/"))
			if st.Reachable != tc.reachable || st.Usable() != tc.usable || st.KeySource != tc.keySource {
				t.Errorf("Check = reachable %v, usable %v, key source %q; want %v, %v, %q (detail %q)",
					st.Reachable, st.Usable(), st.KeySource, tc.reachable, tc.usable, tc.keySource, st.Detail)
			}
			if !cmp.Equal(tc.p, st.Profile) {
				t.Errorf("Status.Profile = %+v, want %+v", st.Profile, tc.p)
			}
			for _, w := range append(tc.detail, srv.URL+"/v1") {
				if !strings.Contains(st.Detail, w) {
					t.Errorf("Detail %q does not mention %q", st.Detail, w)
				}
			}
			if strings.Contains(st.Detail, secret) {
				t.Errorf("Detail %q holds the key", st.Detail)
			}
			if diff := cmp.Diff([]request{tc.sent}, srv.requests()); diff != "" {
				t.Errorf("requests the provider saw (-want +got):\n%s", diff)
			}
		})
	}
}

// The key can come from the env file too; it travels in the header only.
func TestCheckKeyFromEnvFile(t *testing.T) {
	srv := newProvider(t, 200)
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	if err := s.SetKey("GW_KEY", secret); err != nil {
		t.Fatal(err)
	}
	p := profile.Profile{Name: "gw", Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_KEY"}
	st := s.Check(context.Background(), p, srv.Client(), base(srv.URL))
	if !st.Usable() || st.KeySource != profile.FromEnvFile {
		t.Errorf("Check = %+v, want usable with the key from the env file", st)
	}
	if diff := cmp.Diff([]request{{Method: "GET", Path: "/models", Authorization: "Bearer " + secret}}, srv.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestCheckConnectionRefused(t *testing.T) {
	// A port that was just listened on and closed refuses connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(map[string]string{"OPENAI_API_KEY": secret})}
	st := s.Check(context.Background(), profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}, nil, base(url))
	if st.Reachable || st.Usable() {
		t.Errorf("Check = %+v, want unreachable", st)
	}
	if st.KeySource != profile.FromEnv {
		t.Errorf("KeySource = %q, want %q", st.KeySource, profile.FromEnv)
	}
	for _, w := range []string{url + " unreachable", "refused"} {
		if !strings.Contains(st.Detail, w) {
			t.Errorf("Detail %q does not mention %q", st.Detail, w)
		}
	}
	if strings.Contains(st.Detail, secret) {
		t.Errorf("Detail %q holds the key", st.Detail)
	}
}

// A server that never answers is unreachable once the caller's context ends.
func TestCheckNoAnswer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	st := s.Check(ctx, profile.Profile{Name: "local", Provider: profile.Ollama, Model: "q"}, srv.Client(), base(srv.URL))
	if st.Reachable || st.Usable() {
		t.Errorf("Check = %+v, want unreachable", st)
	}
	if !strings.Contains(st.Detail, srv.URL+" unreachable") {
		t.Errorf("Detail %q does not say unreachable", st.Detail)
	}
}

func TestCheckMissingKey(t *testing.T) {
	srv := newProvider(t, 200)
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	st := s.Check(context.Background(), profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}, srv.Client(), base(srv.URL))
	if st.Reachable || st.Usable() || st.KeySource != "" {
		t.Errorf("Check = %+v, want no key source, not usable", st)
	}
	for _, w := range []string{"OPENAI_API_KEY", "--key-stdin"} {
		if !strings.Contains(st.Detail, w) {
			t.Errorf("Detail %q does not mention %q", st.Detail, w)
		}
	}
	if got := srv.requests(); len(got) != 0 {
		t.Errorf("Check without a key still called the provider: %+v", got)
	}
}

func TestCheckEnvFileReadableByOthers(t *testing.T) {
	srv := newProvider(t, 200)
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	writeEnvFile(t, s, "OPENAI_API_KEY="+secret+"\n", 0o644)
	st := s.Check(context.Background(), profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}, srv.Client(), base(srv.URL))
	if st.Usable() || !strings.Contains(st.Detail, "chmod 600") || strings.Contains(st.Detail, secret) {
		t.Errorf("Check = %+v, want a refusal naming chmod 600 and not the key", st)
	}
	if got := srv.requests(); len(got) != 0 {
		t.Errorf("Check still called the provider: %+v", got)
	}
}

func TestCheckScripted(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	for _, p := range []profile.Profile{
		{Name: profile.Demo, Provider: profile.Scripted, Model: "scripted-demo", Script: profile.Demo, BuiltIn: true},
		{Name: "play", Provider: profile.Scripted, Script: "script.json"},
	} {
		noNetwork := func(profile.Profile) string {
			t.Errorf("Check(%s) asked for a base URL; a scripted profile needs no network", p.Name)
			return "http://127.0.0.1:1"
		}
		// A client that fails every request proves none is made.
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			t.Errorf("Check(%s) sent %s %s", p.Name, r.Method, r.URL)
			return nil, errors.New("no network in this test")
		})}
		st := s.Check(context.Background(), p, hc, noNetwork)
		if !st.Reachable || !st.Usable() || st.KeySource != profile.NotNeeded {
			t.Errorf("Check(%s) = %+v, want reachable and usable with no key needed", p.Name, st)
		}
		if !strings.Contains(st.Detail, "no network") {
			t.Errorf("Check(%s) detail %q", p.Name, st.Detail)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStatusUsable(t *testing.T) {
	openai := profile.Profile{Provider: profile.OpenAI}
	ollama := profile.Profile{Provider: profile.Ollama}
	for _, tc := range []struct {
		st   profile.Status
		want bool
	}{
		{profile.Status{Profile: openai, Reachable: true, KeySource: profile.FromEnv}, true},
		{profile.Status{Profile: openai, Reachable: true}, false},
		{profile.Status{Profile: openai, KeySource: profile.FromEnvFile}, false},
		{profile.Status{Profile: ollama, Reachable: true}, true},
		{profile.Status{Profile: ollama}, false},
	} {
		if got := tc.st.Usable(); got != tc.want {
			t.Errorf("%+v.Usable() = %v, want %v", tc.st, got, tc.want)
		}
	}
}
