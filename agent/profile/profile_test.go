package profile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
)

// fakeEnv is an Environ that sees only vars, so no test reads the real
// environment.
func fakeEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// newStore returns a store on a config dir that does not exist yet (so the
// store creates it) and an empty environment.
func newStore(t *testing.T) profile.Store {
	t.Helper()
	return profile.Store{Dir: filepath.Join(t.TempDir(), "config", "hub"), Environ: fakeEnv(nil)}
}

var demo = profile.Profile{Name: profile.Demo, Provider: profile.Scripted, Model: "scripted-demo", Script: profile.Demo, BuiltIn: true}

func TestValidateAccepts(t *testing.T) {
	for _, p := range []profile.Profile{
		{Name: "cheap", Provider: profile.OpenAI, Model: "gpt-4.1-mini"},
		{Name: "gw", Provider: profile.OpenAI, Model: "m", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", Fallbacks: []string{"a", "b"}},
		{Name: "claude", Provider: profile.Anthropic, Model: "claude-sonnet-4-5", MaxTokens: 1_000_000, ContextWindow: 10_000_000},
		{Name: "local", Provider: profile.Ollama, Model: "qwen2.5-coder", BaseURL: "http://127.0.0.1:11434/v1"},
		{Name: "play", Provider: profile.Scripted, Script: "script.json"},
		{Name: "a.b_c-9", Provider: profile.Scripted, Script: profile.Demo},
		{Name: strings.Repeat("a", 40), Provider: profile.Ollama, Model: "m"},
		{Name: "k", Provider: profile.OpenAI, Model: "m", KeyEnv: "_private9"},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", p, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	ok := profile.Profile{Name: "p", Provider: profile.OpenAI, Model: "m"}
	with := func(f func(p *profile.Profile)) profile.Profile {
		p := ok
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		p    profile.Profile
		want []string // substrings of the message
	}{
		{"empty name", with(func(p *profile.Profile) { p.Name = "" }), []string{`profile name ""`, "lower-case"}},
		{"upper-case name", with(func(p *profile.Profile) { p.Name = "Cheap" }), []string{`"Cheap"`}},
		{"name starts with dash", with(func(p *profile.Profile) { p.Name = "-x" }), []string{`"-x"`}},
		{"name starts with dot", with(func(p *profile.Profile) { p.Name = ".x" }), []string{`".x"`}},
		{"name with slash", with(func(p *profile.Profile) { p.Name = "a/b" }), []string{`"a/b"`}},
		{"name with space", with(func(p *profile.Profile) { p.Name = "a b" }), []string{`"a b"`}},
		{"name too long", with(func(p *profile.Profile) { p.Name = strings.Repeat("a", 41) }), []string{"1-40"}},
		{"no provider", with(func(p *profile.Profile) { p.Provider = "" }), []string{"name a provider", "openai, anthropic, gemini, ollama, scripted"}},
		{"unknown provider", with(func(p *profile.Profile) { p.Provider = "foo" }), []string{`unknown provider "foo"`, "openai, anthropic, gemini, ollama, scripted"}},
		{"provider case matters", with(func(p *profile.Profile) { p.Provider = "OpenAI" }), []string{`unknown provider "OpenAI"`}},
		{"no model", with(func(p *profile.Profile) { p.Model = "" }), []string{"name a model"}},
		{"blank model", with(func(p *profile.Profile) { p.Model = "  \t" }), []string{"name a model"}},
		{"ollama without model", profile.Profile{Name: "p", Provider: profile.Ollama}, []string{"name a model"}},
		{"scripted without script", profile.Profile{Name: "p", Provider: profile.Scripted, Model: "m"}, []string{"needs a script"}},
		{"empty fallback", with(func(p *profile.Profile) { p.Fallbacks = []string{"a", " "} }), []string{"fallback model is empty"}},
		{"base URL without scheme", with(func(p *profile.Profile) { p.BaseURL = "api.example.com/v1" }), []string{`base URL "api.example.com/v1"`, "http(s)"}},
		{"base URL not http", with(func(p *profile.Profile) { p.BaseURL = "ftp://example.com/v1" }), []string{"not an http(s) URL"}},
		{"base URL without host", with(func(p *profile.Profile) { p.BaseURL = "http:///v1" }), []string{"not an http(s) URL"}},
		{"base URL unparseable", with(func(p *profile.Profile) { p.BaseURL = "http://[::1" }), []string{"not an http(s) URL"}},
		{"key env starts with digit", with(func(p *profile.Profile) { p.KeyEnv = "1KEY" }), []string{`key variable "1KEY"`}},
		{"key env with dash", with(func(p *profile.Profile) { p.KeyEnv = "MY-KEY" }), []string{`key variable "MY-KEY"`}},
		{"key env with equals", with(func(p *profile.Profile) { p.KeyEnv = "A=B" }), []string{`key variable "A=B"`}},
		{"negative max tokens", with(func(p *profile.Profile) { p.MaxTokens = -1 }), []string{"max_tokens and context_window"}},
		{"huge max tokens", with(func(p *profile.Profile) { p.MaxTokens = 1_000_001 }), []string{"max_tokens"}},
		{"negative context window", with(func(p *profile.Profile) { p.ContextWindow = -1 }), []string{"context_window"}},
		{"huge context window", with(func(p *profile.Profile) { p.ContextWindow = 10_000_001 }), []string{"context_window"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error", tc.p)
			}
			if !errors.Is(err, profile.ErrInvalid) {
				t.Errorf("Validate error %q does not wrap ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error %q does not mention %q", err, w)
				}
			}
			// Set refuses it the same way, and writes nothing.
			s := newStore(t)
			if err := s.Set(tc.p); !errors.Is(err, profile.ErrInvalid) {
				t.Errorf("Set = %v, want ErrInvalid", err)
			}
			if _, err := os.Stat(filepath.Join(s.Dir, "profiles.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused Set left profiles.json behind (stat: %v)", err)
			}
		})
	}
}

func TestProfileKeyNameAndModels(t *testing.T) {
	for _, tc := range []struct {
		p        profile.Profile
		keyName  string
		needsKey bool
		models   []string
	}{
		{profile.Profile{Provider: profile.OpenAI, Model: "m"}, "OPENAI_API_KEY", true, []string{"m"}},
		{profile.Profile{Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_KEY", Fallbacks: []string{"f1", "f2"}}, "GW_KEY", true, []string{"m", "f1", "f2"}},
		{profile.Profile{Provider: profile.Anthropic, Model: "c"}, "ANTHROPIC_API_KEY", true, []string{"c"}},
		{profile.Profile{Provider: profile.Ollama, Model: "q"}, "", false, []string{"q"}},
		{profile.Profile{Provider: profile.Ollama, Model: "q", KeyEnv: "OLLAMA_KEY"}, "OLLAMA_KEY", false, []string{"q"}},
		{profile.Profile{Provider: profile.Scripted, Model: "scripted-demo", Script: profile.Demo}, "", false, []string{"scripted-demo"}},
	} {
		if got := tc.p.KeyName(); got != tc.keyName {
			t.Errorf("%+v: KeyName = %q, want %q", tc.p, got, tc.keyName)
		}
		if got := tc.p.NeedsKey(); got != tc.needsKey {
			t.Errorf("%+v: NeedsKey = %v, want %v", tc.p, got, tc.needsKey)
		}
		if diff := cmp.Diff(tc.models, tc.p.Models()); diff != "" {
			t.Errorf("%+v: Models (-want +got):\n%s", tc.p, diff)
		}
	}
}

// Models must not let a caller's append write into the profile's fallbacks.
func TestModelsDoesNotAlias(t *testing.T) {
	fb := make([]string, 1, 4)
	fb[0] = "f1"
	p := profile.Profile{Provider: profile.OpenAI, Model: "m", Fallbacks: fb}
	ms := p.Models()
	ms[1] = "changed"
	if diff := cmp.Diff([]string{"f1"}, p.Fallbacks); diff != "" {
		t.Errorf("Models aliased the fallbacks (-want +got):\n%s", diff)
	}
}

func TestEmptyStore(t *testing.T) {
	s := newStore(t)
	ps, def, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]profile.Profile{demo}, ps); diff != "" {
		t.Errorf("List of an empty store (-want +got):\n%s", diff)
	}
	if def != "" {
		t.Errorf("default = %q, want none", def)
	}
	if _, err := s.Get(""); !errors.Is(err, profile.ErrNoDefault) {
		t.Errorf("Get(\"\") = %v, want ErrNoDefault", err)
	}
	got, err := s.Get(profile.Demo)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(demo, got); diff != "" {
		t.Errorf("Get(demo) (-want +got):\n%s", diff)
	}
	// Reading never creates the config dir.
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading created %s (stat: %v)", s.Dir, err)
	}
}

func TestSetGetListRemoveDefault(t *testing.T) {
	s := newStore(t)
	cheap := profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "gpt-4.1-mini", Fallbacks: []string{"gpt-4.1-nano"}, MaxTokens: 4096}
	claude := profile.Profile{Name: "claude", Provider: profile.Anthropic, Model: "claude-sonnet-4-5", KeyEnv: "MY_ANTHROPIC", ContextWindow: 200000}
	local := profile.Profile{Name: "local", Provider: profile.Ollama, Model: "qwen2.5-coder", BaseURL: "http://127.0.0.1:11434/v1"}

	// The first profile set becomes the default; later ones do not.
	for _, p := range []profile.Profile{cheap, claude, local} {
		if err := s.Set(p); err != nil {
			t.Fatalf("Set(%s): %v", p.Name, err)
		}
	}
	// A BuiltIn flag from a caller is not stored.
	if err := s.Set(profile.Profile{Name: "local", Provider: profile.Ollama, Model: "qwen2.5-coder", BaseURL: "http://127.0.0.1:11434/v1", BuiltIn: true}); err != nil {
		t.Fatal(err)
	}
	ps, def, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]profile.Profile{cheap, claude, demo, local}, ps); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if def != "cheap" {
		t.Errorf("default = %q, want the first profile set, cheap", def)
	}
	for _, tc := range []struct {
		name string
		want profile.Profile
	}{{"", cheap}, {"cheap", cheap}, {"claude", claude}, {"local", local}, {"demo", demo}} {
		got, err := s.Get(tc.name)
		if err != nil {
			t.Fatalf("Get(%q): %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Get(%q) (-want +got):\n%s", tc.name, diff)
		}
	}

	// Replacing a profile keeps the default where it was.
	cheap2 := cheap
	cheap2.Model, cheap2.Fallbacks = "gpt-4.1-nano", nil
	if err := s.Set(cheap2); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(""); !cmp.Equal(cheap2, got) {
		t.Errorf("after replacing cheap, Get(\"\") = %+v, want %+v", got, cheap2)
	}

	// The default moves to any profile, the built-in demo included.
	for _, name := range []string{"claude", profile.Demo} {
		if err := s.SetDefault(name); err != nil {
			t.Fatalf("SetDefault(%s): %v", name, err)
		}
		if _, def, _ := s.List(); def != name {
			t.Errorf("after SetDefault(%s), default = %q", name, def)
		}
		if got, err := s.Get(""); err != nil || got.Name != name {
			t.Errorf("after SetDefault(%s), Get(\"\") = %+v, %v", name, got, err)
		}
	}
	if err := s.SetDefault("nope"); !errors.Is(err, profile.ErrNotFound) {
		t.Errorf("SetDefault(nope) = %v, want ErrNotFound", err)
	}
	if _, def, _ := s.List(); def != profile.Demo {
		t.Errorf("a refused SetDefault moved the default to %q", def)
	}

	// Removing a profile that is not the default keeps the default.
	if err := s.Remove("local"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("local"); !errors.Is(err, profile.ErrNotFound) {
		t.Errorf("Get(local) after Remove = %v, want ErrNotFound", err)
	}
	if _, def, _ := s.List(); def != profile.Demo {
		t.Errorf("removing local moved the default to %q", def)
	}

	// Removing the default clears it.
	if err := s.SetDefault("claude"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("claude"); err != nil {
		t.Fatal(err)
	}
	ps, def, err = s.List()
	if err != nil {
		t.Fatal(err)
	}
	if def != "" {
		t.Errorf("after removing the default, default = %q, want none", def)
	}
	if diff := cmp.Diff([]profile.Profile{cheap2, demo}, ps); diff != "" {
		t.Errorf("List after removals (-want +got):\n%s", diff)
	}
	if _, err := s.Get(""); !errors.Is(err, profile.ErrNoDefault) {
		t.Errorf("Get(\"\") after removing the default = %v, want ErrNoDefault", err)
	}
	if err := s.Remove("claude"); !errors.Is(err, profile.ErrNotFound) {
		t.Errorf("second Remove(claude) = %v, want ErrNotFound", err)
	}

	// With no default, the next profile set becomes the default again.
	if err := s.Set(claude); err != nil {
		t.Fatal(err)
	}
	if _, def, _ := s.List(); def != "claude" {
		t.Errorf("default = %q, want claude (set while there was none)", def)
	}
}

func TestBuiltIn(t *testing.T) {
	s := newStore(t)
	err := s.Set(profile.Profile{Name: profile.Demo, Provider: profile.OpenAI, Model: "m"})
	if !errors.Is(err, profile.ErrBuiltIn) {
		t.Errorf("Set(demo) = %v, want ErrBuiltIn", err)
	}
	if err := s.Remove(profile.Demo); !errors.Is(err, profile.ErrBuiltIn) {
		t.Errorf("Remove(demo) = %v, want ErrBuiltIn", err)
	}
	if err := s.SetDefault(profile.Demo); err != nil {
		t.Fatalf("SetDefault(demo) = %v", err)
	}
	got, err := s.Get("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(demo, got); diff != "" {
		t.Errorf("Get(\"\") with demo the default (-want +got):\n%s", diff)
	}
	// Demo stays the default when a first profile is set.
	if err := s.Set(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, def, _ := s.List(); def != profile.Demo {
		t.Errorf("default = %q, want demo kept", def)
	}
}

func TestGetUnknown(t *testing.T) {
	s := newStore(t)
	if err := s.Set(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get("nope")
	if !errors.Is(err, profile.ErrNotFound) {
		t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
	}
	for _, w := range []string{`"nope"`, "cheap, demo", "hub profile set"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Get(nope) error %q does not mention %q", err, w)
		}
	}
	if err := s.Remove("nope"); !errors.Is(err, profile.ErrNotFound) {
		t.Errorf("Remove(nope) = %v, want ErrNotFound", err)
	}
}

func TestCorruptFile(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	path := filepath.Join(s.Dir, "profiles.json")
	bad := []byte(`{"profiles": {"cheap": `)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s on a corrupt profiles.json = nil, want an error", what)
			return
		}
		for _, w := range []string{path, "not valid JSON", "fix it or remove it"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s error %q does not mention %q", what, err, w)
			}
		}
	}
	_, _, err := s.List()
	check("List", err)
	_, err = s.Get("cheap")
	check("Get", err)
	_, err = s.Get("")
	check("Get(\"\")", err)
	check("Set", s.Set(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}))
	check("Remove", s.Remove("cheap"))
	check("SetDefault", s.SetDefault(profile.Demo))
	// Nothing overwrote the user's file.
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(bad), string(got)); diff != "" {
		t.Errorf("profiles.json changed (-want +got):\n%s", diff)
	}
}

// A hand-edited file: the map key is the profile's name, and a null map is
// an empty one.
func TestHandEditedFile(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	path := filepath.Join(s.Dir, "profiles.json")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"default": "fast", "profiles": {"fast": {"name": "other", "provider": "openai", "model": "m"}}}`)
	got, err := s.Get("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(profile.Profile{Name: "fast", Provider: profile.OpenAI, Model: "m"}, got); diff != "" {
		t.Errorf("Get(\"\") (-want +got):\n%s", diff)
	}

	write(`{"profiles": null}`)
	if err := s.Set(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}); err != nil {
		t.Fatalf("Set on a file with null profiles: %v", err)
	}
	if _, def, _ := s.List(); def != "cheap" {
		t.Errorf("default = %q, want cheap", def)
	}

	// A default naming a profile that is gone reads as not found.
	write(`{"default": "gone", "profiles": {}}`)
	if _, err := s.Get(""); !errors.Is(err, profile.ErrNotFound) {
		t.Errorf("Get(\"\") with a dangling default = %v, want ErrNotFound", err)
	}
}

func TestFileModes(t *testing.T) {
	root := t.TempDir()
	s := profile.Store{Dir: filepath.Join(root, "a", "b"), Environ: fakeEnv(nil)}
	if err := s.Set(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetKey("OPENAI_API_KEY", "sk-secret"); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "a"), s.Dir} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", dir, got)
		}
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", e.Name(), got)
		}
	}
	// No temporary file is left behind.
	if diff := cmp.Diff([]string{"env", "env.lock", "profiles.json", "profiles.json.lock"}, names); diff != "" {
		t.Errorf("files in the config dir (-want +got):\n%s", diff)
	}
	if s.EnvFile() != filepath.Join(s.Dir, "env") {
		t.Errorf("EnvFile = %s", s.EnvFile())
	}
	// The key is in the env file and nowhere else.
	b, err := os.ReadFile(filepath.Join(s.Dir, "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-secret") {
		t.Errorf("profiles.json holds the key:\n%s", b)
	}
}

// Several writers at once: the lock keeps every change.
func TestConcurrentSet(t *testing.T) {
	s := newStore(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine has its own Store value, as separate processes would.
			st := profile.Store{Dir: s.Dir, Environ: fakeEnv(nil)}
			errs <- st.Set(profile.Profile{Name: fmt.Sprintf("p%02d", i), Provider: profile.OpenAI, Model: "m"})
			errs <- st.SetKey(fmt.Sprintf("KEY_%02d", i), fmt.Sprintf("value-%02d", i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ps, def, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for i := range n {
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	var got []string
	for _, p := range ps {
		if p.Name != profile.Demo {
			got = append(got, p.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profiles after concurrent Set (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(def, "p") {
		t.Errorf("default = %q, want one of the profiles set", def)
	}
	for i := range n {
		p := profile.Profile{Name: "x", Provider: profile.OpenAI, Model: "m", KeyEnv: fmt.Sprintf("KEY_%02d", i)}
		key, src, err := s.Key(p)
		if err != nil || key != fmt.Sprintf("value-%02d", i) || src != profile.FromEnvFile {
			t.Errorf("Key(KEY_%02d) = %q, %q, %v after concurrent SetKey", i, key, src, err)
		}
	}
}
