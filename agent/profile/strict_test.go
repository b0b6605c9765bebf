package profile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/internal/strictjson"
)

// A key profiles.json does not have, at the top or in a profile, is refused
// with the file, where the key is and the closest one; nothing is written
// over the user's file.
func TestUnknownKeysInFile(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{`{"default": "cheap", "profiles": {"cheap": {"provider": "openai", "modle": "gpt-4.1-mini"}}}`,
			[]string{`unknown key "modle" in profiles.cheap (did you mean "model"? the keys are: name, provider, base_url, model, fallbacks,`}},
		{`{"defualt": "cheap", "profiles": {}}`,
			[]string{`unknown key "defualt" (did you mean "default"? the keys are: default, profiles)`}},
		{`{"profiles": {"a b": {"provider": "openai", "model": "m", "key": "sk-x"}}}`,
			[]string{`unknown key "key" in profiles["a b"] (the keys are: `}},
	} {
		s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
		path := filepath.Join(s.Dir, "profiles.json")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s on %s = nil, want an error", what, tc.file)
				return
			}
			for _, w := range append(tc.want, "profiles "+path+": ", "; fix it") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s error %q does not mention %q", what, err, w)
				}
			}
			var uk *strictjson.UnknownKeyError
			if !errors.As(err, &uk) {
				t.Errorf("%s error %v does not unwrap to the unknown key", what, err)
			}
		}
		_, _, err := s.List()
		check("List", err)
		_, err = s.Get("")
		check("Get", err)
		check("Set", s.Set(profile.Profile{Name: "other", Provider: profile.OpenAI, Model: "m"}))
		check("SetDefault", s.SetDefault(profile.Demo))
		if b, err := os.ReadFile(path); err != nil || string(b) != tc.file {
			t.Errorf("profiles.json changed: %q, %v", b, err)
		}
	}
}

// What hub writes, it reads back: every key of a written profile is known.
func TestWrittenFileIsStrictlyReadable(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	p := profile.Profile{Name: "full", Provider: profile.OpenAI, BaseURL: "https://api.example.com/v1", Model: "m",
		Fallbacks: []string{"m2"}, KeyEnv: "MY_KEY", MaxTokens: 100, ContextWindow: 1000}
	if err := s.Set(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(profile.Profile{Name: "script", Provider: profile.Scripted, Script: "demo"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("full")
	if err != nil || got.BaseURL != p.BaseURL || got.MaxTokens != 100 {
		t.Errorf("Get(full) = %+v, %v", got, err)
	}
}
