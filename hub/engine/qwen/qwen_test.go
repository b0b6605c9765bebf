package qwen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/acp"
	"github.com/hub-agents/hub/hub/protocol"
)

// Check takes openai and ollama profiles and refuses the others with what
// to pick; a missing qwen is refused with its install line.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "qwen")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PathEnv, bin)
	t.Setenv("TEST_QWEN_KEY", "sk-test")
	st := profile.Store{Dir: dir}
	for _, p := range []profile.Profile{
		{Name: "o", Provider: profile.OpenAI, Model: "qwen3-coder", KeyEnv: "TEST_QWEN_KEY"},
		{Name: "l", Provider: profile.Ollama, Model: "qwen3:8b"},
		{Name: "a", Provider: profile.Anthropic, Model: "claude-x", KeyEnv: "TEST_QWEN_KEY"},
	} {
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	e := New(dir)
	for _, p := range []string{"o", "l"} {
		if err := e.Check(protocol.StartParams{Profile: p, Task: "x"}); err != nil {
			t.Errorf("profile %s: %v", p, err)
		}
	}
	if err := e.Check(protocol.StartParams{Profile: "a", Task: "x"}); err == nil || !strings.Contains(err.Error(), "openai or ollama") {
		t.Errorf("an anthropic profile: %v", err)
	}
	if err := e.Check(protocol.StartParams{Profile: "o", Exec: "make"}); err == nil || !strings.Contains(err.Error(), "exec engine") {
		t.Errorf("exec: %v", err)
	}
	t.Setenv(PathEnv, filepath.Join(dir, "none"))
	if err := e.Check(protocol.StartParams{Profile: "o", Task: "x"}); err == nil || !strings.Contains(err.Error(), "npm install -g @qwen-code/qwen-code") {
		t.Errorf("no binary: %v", err)
	}
	if c := e.Capabilities(); !slices.Contains(c.Isolation, protocol.IsolationWorktree) || slices.Contains(c.Isolation, protocol.IsolationUntrusted) {
		t.Errorf("capabilities %+v", c)
	}
}

// The settings keep every side model call off and hub's tools declared;
// the key is only in the environment, never on disk.
func TestSettings(t *testing.T) {
	home := t.TempDir()
	c := acp.Profile{Profile: profile.Profile{Name: "o", Provider: profile.OpenAI}, Key: "sk-secret-key", BaseURL: "http://127.0.0.1:9/v1", Model: "m"}
	for _, kind := range []protocol.Kind{protocol.KindWrite, protocol.KindRead} {
		if err := prepare(home, engine.Spec{Params: protocol.StartParams{Kind: kind}}, c); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(home, ".qwen", "settings.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), c.Key) {
			t.Error("the key is written into the settings")
		}
		var s struct {
			Tools struct {
				ApprovalMode string   `json:"approvalMode"`
				Visible      []string `json:"visible"`
			} `json:"tools"`
			Memory map[string]bool `json:"memory"`
			UI     map[string]bool `json:"ui"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		want := map[protocol.Kind]string{protocol.KindWrite: "default", protocol.KindRead: "plan"}[kind]
		if s.Tools.ApprovalMode != want || !slices.Contains(s.Tools.Visible, "mcp__hub__ask_supervisor") ||
			s.Memory["enableManagedAutoMemory"] || s.UI["enableFollowupSuggestions"] {
			t.Errorf("%s settings: %s", kind, b)
		}
	}
	env := strings.Join(env(c), "\n")
	for _, want := range []string{"OPENAI_API_KEY=sk-secret-key", "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "OPENAI_MODEL=m", "QWEN_CODE_LEGACY_MCP_BLOCKING=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
}
