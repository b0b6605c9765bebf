// Package profile owns the built-in worker's model profiles: which provider,
// endpoint, model and fallbacks a job uses, and where its key comes from.
// Profiles live in <config dir>/profiles.json; keys come from the
// environment or from <config dir>/env (KEY=value lines, mode 0600). It
// never writes a key anywhere but that env file, never returns one in a
// listing, and never hands one to a worker's shell.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/internal/atomicfile"
	"github.com/hub-agents/hub/internal/strictjson"
)

// Providers a profile may name. Scripted plays a script on a loopback model
// server inside the job: it needs no key and no network.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Ollama    = "ollama"
	Gemini    = "gemini"
	Scripted  = "scripted"
	// Copilot and ChatGPT are subscriptions reached by a device-flow login
	// (hub profile login), not a key.
	Copilot = oauth.Copilot
	ChatGPT = oauth.ChatGPT
)

// Providers lists them for messages.
var Providers = []string{OpenAI, Anthropic, Gemini, Ollama, Scripted, Copilot, ChatGPT}

// Demo is the built-in profile: the embedded scripted model of `hub demo`.
const Demo = "demo"

// Profile is one way to reach a model.
type Profile struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	BaseURL  string `json:"base_url,omitempty"`
	Model    string `json:"model"`
	// Fallbacks are tried in order when the model keeps failing.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// KeyEnv names the variable that holds the key (default OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY).
	KeyEnv        string `json:"key_env,omitempty"`
	MaxTokens     int    `json:"max_tokens,omitempty"`
	ContextWindow int    `json:"context_window,omitempty"`
	// Script is the scripted provider's script: a JSON file, or "demo" for the embedded one.
	Script string `json:"script,omitempty"`
	// LoginURL is a login provider's server (default https://github.com or
	// https://auth.openai.com): a GitHub Enterprise host, or a test's.
	LoginURL string `json:"login_url,omitempty"`
	// BuiltIn marks a profile that ships with hub (not in the file).
	BuiltIn bool `json:"built_in,omitempty"`
}

// KeyName is the variable the profile's key is read from ("" when it needs none).
func (p Profile) KeyName() string {
	if p.KeyEnv != "" {
		return p.KeyEnv
	}
	switch p.Provider {
	case OpenAI:
		return "OPENAI_API_KEY"
	case Anthropic:
		return "ANTHROPIC_API_KEY"
	case Gemini:
		return "GEMINI_API_KEY"
	}
	return ""
}

// LogsIn reports whether the profile's credentials come from a device-flow
// login (hub profile login) rather than a key.
func (p Profile) LogsIn() bool { return oauth.Supported(p.Provider) }

// NeedsKey reports whether the provider refuses calls without a key.
func (p Profile) NeedsKey() bool {
	return p.Provider == OpenAI || p.Provider == Anthropic || p.Provider == Gemini
}

// Models is the model then its fallbacks. A scripted profile's model is
// only a name on the wire ("scripted" when none is set).
func (p Profile) Models() []string {
	m := p.Model
	if m == "" && p.Provider == Scripted {
		m = "scripted"
	}
	return append([]string{m}, p.Fallbacks...)
}

var (
	nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,39}$`)
	envRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate says what is wrong with p, in words that say what to change
// (the error wraps ErrInvalid).
func (p Profile) Validate() error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (p Profile) validate() error {
	if !nameRe.MatchString(p.Name) {
		return fmt.Errorf("profile name %q: use 1-40 lower-case letters, digits, '.', '_' or '-'", p.Name)
	}
	switch p.Provider {
	case OpenAI, Anthropic, Gemini, Ollama, Scripted, Copilot, ChatGPT:
	case "":
		return fmt.Errorf("profile %s: name a provider (%s)", p.Name, strings.Join(Providers, ", "))
	default:
		return fmt.Errorf("profile %s: unknown provider %q; use one of %s (any OpenAI-compatible gateway, vLLM or LM Studio is openai with a base URL)", p.Name, p.Provider, strings.Join(Providers, ", "))
	}
	if p.Provider == Scripted {
		if p.Script == "" {
			return fmt.Errorf("profile %s: a scripted profile needs a script (a JSON file, or %q)", p.Name, Demo)
		}
	} else if strings.TrimSpace(p.Model) == "" {
		return fmt.Errorf("profile %s: name a model (e.g. gpt-4.1-mini, claude-sonnet-4-5, qwen2.5-coder)", p.Name)
	}
	for _, m := range p.Fallbacks {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("profile %s: a fallback model is empty", p.Name)
		}
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("profile %s: base URL %q is not an http(s) URL; pass something like https://api.example.com/v1", p.Name, p.BaseURL)
		}
	}
	if p.LoginURL != "" {
		u, err := url.Parse(p.LoginURL)
		if !p.LogsIn() {
			return fmt.Errorf("profile %s: a login URL is for the %s and %s providers, which log in; drop it", p.Name, Copilot, ChatGPT)
		}
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("profile %s: login URL %q is not an http(s) URL; pass the login server's root, e.g. https://github.example.com", p.Name, p.LoginURL)
		}
	}
	if p.LogsIn() && p.KeyEnv != "" {
		return fmt.Errorf("profile %s: provider %s logs in (hub profile login %s) and takes no key variable; drop key_env", p.Name, p.Provider, p.Name)
	}
	if p.KeyEnv != "" && !envRe.MatchString(p.KeyEnv) {
		return fmt.Errorf("profile %s: key variable %q is not a valid environment variable name", p.Name, p.KeyEnv)
	}
	if p.MaxTokens < 0 || p.MaxTokens > 1_000_000 || p.ContextWindow < 0 || p.ContextWindow > 10_000_000 {
		return fmt.Errorf("profile %s: max_tokens and context_window must be positive token counts", p.Name)
	}
	return nil
}

// IsBuiltIn reports whether name is a profile every hub has.
func IsBuiltIn(name string) bool { _, ok := builtIn()[name]; return ok }

// builtIn are the profiles every hub has.
func builtIn() map[string]Profile {
	return map[string]Profile{Demo: {Name: Demo, Provider: Scripted, Model: "scripted-demo", Script: Demo, BuiltIn: true}}
}

// Store reads and writes the profiles of one config directory. Writers
// take a lock, so two hub processes never lose each other's change.
type Store struct {
	Dir string
	// Environ looks up keys in the environment (default os.LookupEnv).
	Environ func(string) (string, bool)
}

// file is profiles.json.
type file struct {
	Default  string             `json:"default,omitempty"`
	Profiles map[string]Profile `json:"profiles"`
}

func (s Store) path() string    { return filepath.Join(s.Dir, "profiles.json") }
func (s Store) EnvFile() string { return filepath.Join(s.Dir, "env") }

// Logins is where the device-flow logins' tokens are kept.
func (s Store) Logins() oauth.Store { return oauth.Store{Dir: s.Dir} }

func (s Store) read() (*file, error) {
	f := &file{Profiles: map[string]Profile{}}
	b, err := os.ReadFile(s.path())
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	if err := strictjson.Decode(b, f); err != nil {
		var uk *strictjson.UnknownKeyError
		if errors.As(err, &uk) {
			return nil, fmt.Errorf("profiles %s: %w; fix it", s.path(), err)
		}
		return nil, fmt.Errorf("profiles %s is not valid JSON (%v); fix it or remove it", s.path(), err)
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	for name, p := range f.Profiles {
		p.Name = name
		f.Profiles[name] = p
	}
	return f, nil
}

func (s Store) write(f *file) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(), append(b, '\n'), 0o600)
}

// update runs fn on the file under the lock and writes the result.
func (s Store) update(fn func(f *file) error) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	l := flock.New(s.path() + ".lock")
	if err := l.Lock(); err != nil {
		return fmt.Errorf("lock profiles: %w", err)
	}
	defer l.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	return s.write(f)
}

// List returns every profile, built-in ones included, sorted by name, and the default's name.
func (s Store) List() ([]Profile, string, error) {
	f, err := s.read()
	if err != nil {
		return nil, "", err
	}
	var out []Profile
	for n, p := range builtIn() {
		if _, ok := f.Profiles[n]; !ok {
			out = append(out, p)
		}
	}
	for _, p := range f.Profiles {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, f.Default, nil
}

// Errors a caller may tell apart.
var (
	// ErrNoDefault means no profile was named and none is the default.
	ErrNoDefault = errors.New("no profile named and no default profile set")
	ErrNotFound  = errors.New("no such profile")
	ErrBuiltIn   = errors.New("built-in profile")
	ErrInvalid   = errors.New("invalid profile")
)

// Get returns the profile called name, or the default one when name is "".
func (s Store) Get(name string) (Profile, error) {
	f, err := s.read()
	if err != nil {
		return Profile{}, err
	}
	if name == "" {
		name = f.Default
		if name == "" {
			return Profile{}, ErrNoDefault
		}
	}
	if p, ok := f.Profiles[name]; ok {
		return p, nil
	}
	if p, ok := builtIn()[name]; ok {
		return p, nil
	}
	names := []string{}
	ps, _, _ := s.List()
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("%w: no profile %q (profiles: %s); add it with hub profile set", ErrNotFound, name, strings.Join(names, ", "))
}

// Set adds or replaces a profile. The first profile set becomes the default.
func (s Store) Set(p Profile) error {
	p.BuiltIn = false
	if err := p.Validate(); err != nil {
		return err
	}
	if _, ok := builtIn()[p.Name]; ok {
		return fmt.Errorf("%w: profile %q is built in; pick another name", ErrBuiltIn, p.Name)
	}
	return s.update(func(f *file) error {
		f.Profiles[p.Name] = p
		if f.Default == "" {
			f.Default = p.Name
		}
		return nil
	})
}

// Remove deletes a profile (and clears the default if it was that one, and
// forgets its login's tokens).
func (s Store) Remove(name string) error {
	if _, ok := builtIn()[name]; ok {
		return fmt.Errorf("%w: profile %q is built in and cannot be removed", ErrBuiltIn, name)
	}
	return s.update(func(f *file) error {
		if _, ok := f.Profiles[name]; !ok {
			return fmt.Errorf("%w: no profile %q to remove", ErrNotFound, name)
		}
		delete(f.Profiles, name)
		if f.Default == name {
			f.Default = ""
		}
		// A login belongs to its profile: a later profile of the same name starts logged out.
		return s.Logins().Remove(name)
	})
}

// SetDefault makes name the profile used when a job names none.
func (s Store) SetDefault(name string) error {
	return s.update(func(f *file) error {
		_, inFile := f.Profiles[name]
		_, built := builtIn()[name]
		if !inFile && !built {
			return fmt.Errorf("%w: no profile %q; add it with hub profile set first", ErrNotFound, name)
		}
		f.Default = name
		return nil
	})
}
