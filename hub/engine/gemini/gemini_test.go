package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/acp"
	"github.com/hub-agents/hub/hub/protocol"
)

// Check takes gemini profiles only, and says which to pick.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gemini")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PathEnv, bin)
	t.Setenv("TEST_GEMINI_KEY", "g-test")
	st := profile.Store{Dir: dir}
	for _, p := range []profile.Profile{
		{Name: "g", Provider: profile.Gemini, Model: "gemini-2.5-pro", KeyEnv: "TEST_GEMINI_KEY"},
		{Name: "o", Provider: profile.OpenAI, Model: "gpt-x", KeyEnv: "TEST_GEMINI_KEY"},
	} {
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	e := New(dir)
	if err := e.Check(protocol.StartParams{Profile: "g", Task: "x"}); err != nil {
		t.Errorf("a gemini profile: %v", err)
	}
	if err := e.Check(protocol.StartParams{Profile: "o", Task: "x"}); err == nil || !strings.Contains(err.Error(), "uses provider openai") || !strings.Contains(err.Error(), "gemini") {
		t.Errorf("an openai profile: %v", err)
	}
}

// The settings log in by API key with the model fixed and every side model
// call off; the key and endpoint are only in the environment.
func TestSettings(t *testing.T) {
	home := t.TempDir()
	c := acp.Profile{Profile: profile.Profile{Name: "g", Provider: profile.Gemini}, Key: "g-secret-key", BaseURL: "https://generativelanguage.googleapis.com", Model: "gemini-x"}
	if err := prepare(home, engine.Spec{}, c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, c.Key) {
		t.Error("the key is written into the settings")
	}
	for _, want := range []string{`"selectedType": "gemini-api-key"`, `"name": "gemini-x"`, `"disableLoopDetection": true`, `"usageStatisticsEnabled": false`, `"enableInteractiveShell": false`} {
		if !strings.Contains(s, want) {
			t.Errorf("settings lack %s:\n%s", want, s)
		}
	}
	env := strings.Join(env(c), "\n")
	for _, want := range []string{"GEMINI_API_KEY=g-secret-key", "GOOGLE_GEMINI_BASE_URL=https://generativelanguage.googleapis.com", "GEMINI_CLI_TRUST_WORKSPACE=true"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
}
