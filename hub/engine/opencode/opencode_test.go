package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// fakeOpenCode installs a stand-in for opencode that records its
// arguments, environment and stdin into $FAKE_OUT and prints a recorded
// stream, and returns hub's config dir with profiles o (openai), l (ollama)
// and a (anthropic).
func fakeOpenCode(t *testing.T) (configDir string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "opencode")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_OUT/args\"\nenv > \"$FAKE_OUT/env\"\ncat > \"$FAKE_OUT/stdin\"\ncat \"$FAKE_STREAM\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PathEnv, bin)
	configDir = filepath.Join(dir, "hub")
	st := profile.Store{Dir: configDir}
	t.Setenv("TEST_OPENCODE_KEY", "sk-test-secret")
	for _, p := range []profile.Profile{
		{Name: "o", Provider: profile.OpenAI, BaseURL: "http://127.0.0.1:9/v1/", Model: "gpt-x", KeyEnv: "TEST_OPENCODE_KEY"},
		{Name: "l", Provider: profile.Ollama, Model: "qwen3:8b"},
		{Name: "a", Provider: profile.Anthropic, Model: "claude-x", KeyEnv: "TEST_OPENCODE_KEY"},
	} {
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	return configDir
}

func TestCheck(t *testing.T) {
	e := New(Options{ConfigDir: fakeOpenCode(t)})
	if err := e.Check(protocol.StartParams{Profile: "o", Exec: "make"}); err == nil || !strings.Contains(err.Error(), "exec engine") {
		t.Errorf("exec: %v", err)
	}
	for _, p := range []string{"o", "l"} {
		if err := e.Check(protocol.StartParams{Profile: p, Task: "x"}); err != nil {
			t.Errorf("profile %s: %v", p, err)
		}
	}
	err := e.Check(protocol.StartParams{Profile: "a", Task: "x"})
	if err == nil || !strings.Contains(err.Error(), "Chat Completions") || !strings.Contains(err.Error(), "claude engine") {
		t.Errorf("an anthropic profile: %v", err)
	}
	t.Setenv(PathEnv, filepath.Join(t.TempDir(), "none"))
	if err := e.Check(protocol.StartParams{Profile: "o", Task: "x"}); err == nil || !strings.Contains(err.Error(), "npm install -g opencode-ai") {
		t.Errorf("no binary: %v", err)
	}
}

// repo makes a folder that looks like a git worktree.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files[".git"] = "gitdir: elsewhere\n"
	hubtest.WriteFiles(t, dir, files)
	return dir
}

func TestStart(t *testing.T) {
	e := New(Options{ConfigDir: fakeOpenCode(t)})
	out, scratch := t.TempDir(), t.TempDir()
	dir := repo(t, map[string]string{"AGENTS.md": "be brief\n"})
	spec := engine.Spec{JobID: "j1", Dir: dir, Scratch: scratch, HubBinary: "/opt/hub",
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/user", "HUB_JOB=j1", "HUB_SOCKET=/s.sock",
			"OPENCODE_CONFIG=/home/user/oc.json", "OPENCODE_PERMISSION={}", "FAKE_OUT=" + out,
			"FAKE_STREAM=" + filepath.Join(mustAbs(t, "testdata"), "bash_exit3.jsonl")},
		Params: protocol.StartParams{Profile: "o", Task: `fix "it"  now`, Verify: "grep -q x f", AskTimeoutS: 100, MaxTurns: 7}}
	r, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 || o.Summary != "Done: (no output)" || o.Failure != "" || len(o.Observed) != 1 {
		t.Errorf("outcome %+v", o)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if args := read("args"); args != "run\n--format\njson\n--model\nhub/gpt-x\n" {
		t.Errorf("args:\n%s", args)
	}
	// The prompt comes whole on stdin, quotes and double spaces kept.
	if stdin := read("stdin"); !strings.Contains(stdin, `fix "it"  now`) || !strings.Contains(stdin, "hub_ask_supervisor") {
		t.Errorf("stdin:\n%s", stdin)
	}
	env := read("env")
	for _, want := range []string{"HUB_OPENCODE_API_KEY=sk-test-secret", "OPENCODE_DISABLE_PROJECT_CONFIG=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
		"HOME=" + filepath.Join(scratch, "home") + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	for _, leak := range []string{"OPENCODE_CONFIG=", "OPENCODE_PERMISSION="} {
		if strings.Contains(env, leak) {
			t.Errorf("the user's %s reached OpenCode", leak)
		}
	}
	cfgDir := filepath.Join(scratch, "home", ".config", "opencode")
	raw, err := os.ReadFile(filepath.Join(cfgDir, "opencode.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "sk-test-secret") {
		t.Error("the key is written in opencode.json")
	}
	var cfg struct {
		Model    string `json:"model"`
		Provider map[string]struct {
			NPM     string                    `json:"npm"`
			Options map[string]string         `json:"options"`
			Models  map[string]map[string]any `json:"models"`
		} `json:"provider"`
		MCP map[string]struct {
			Type        string            `json:"type"`
			Command     []string          `json:"command"`
			Environment map[string]string `json:"environment"`
			Timeout     int64             `json:"timeout"`
		} `json:"mcp"`
		Permission   map[string]string         `json:"permission"`
		Agent        map[string]map[string]any `json:"agent"`
		Instructions []string                  `json:"instructions"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	hp := cfg.Provider["hub"]
	if cfg.Model != "hub/gpt-x" || hp.NPM != "@ai-sdk/openai-compatible" || hp.Options["baseURL"] != "http://127.0.0.1:9/v1" ||
		hp.Options["apiKey"] != "{env:HUB_OPENCODE_API_KEY}" || hp.Models["gpt-x"]["tool_call"] != true {
		t.Errorf("provider: %s", raw)
	}
	m := cfg.MCP["hub"]
	if m.Type != "local" || strings.Join(m.Command, " ") != "/opt/hub worker-mcp" || m.Environment["HUB_JOB"] != "j1" ||
		m.Environment["HUB_SOCKET"] != "/s.sock" || m.Timeout != 160_000 {
		t.Errorf("mcp: %+v", m)
	}
	if cfg.Permission["edit"] != "allow" || cfg.Permission["bash"] != "allow" {
		t.Errorf("a write job's permissions: %v", cfg.Permission)
	}
	if cfg.Agent["title"]["disable"] != true || cfg.Agent["build"]["steps"] != float64(7) {
		t.Errorf("agents: %v", cfg.Agent)
	}
	if len(cfg.Instructions) != 1 || cfg.Instructions[0] != filepath.Join(dir, "AGENTS.md") {
		t.Errorf("instructions: %v", cfg.Instructions)
	}
	// The config folder is seeded so OpenCode's background npm install of
	// @opencode-ai/plugin finds nothing to do.
	if fi, err := os.Stat(filepath.Join(cfgDir, "node_modules")); err != nil || !fi.IsDir() {
		t.Errorf("no node_modules in the config folder: %v", err)
	}
	lock, _ := os.ReadFile(filepath.Join(cfgDir, "package-lock.json"))
	if !strings.Contains(string(lock), `"@opencode-ai/plugin"`) {
		t.Errorf("package-lock.json: %s", lock)
	}
}

func TestReadJobAndOllama(t *testing.T) {
	e := New(Options{ConfigDir: fakeOpenCode(t)})
	out, scratch := t.TempDir(), t.TempDir()
	spec := engine.Spec{JobID: "j2", Dir: repo(t, map[string]string{}), Scratch: scratch, HubBinary: "/opt/hub",
		Env:    []string{"PATH=" + os.Getenv("PATH"), "FAKE_OUT=" + out, "FAKE_STREAM=" + filepath.Join(mustAbs(t, "testdata"), "cached.jsonl")},
		Params: protocol.StartParams{Profile: "l", Kind: protocol.KindRead, Task: "what is this?"}}
	r, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// A local model costs nothing: the cost is known.
	if o := r.Wait(); o.ExitCode != 0 || !o.CostKnown || o.CostMicros != 0 || o.Tokens != 1050 {
		t.Errorf("outcome %+v", o)
	}
	raw, err := os.ReadFile(filepath.Join(scratch, "home", ".config", "opencode", "opencode.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{`"bash": "deny"`, `"edit": "deny"`, `"baseURL": "http://127.0.0.1:11434/v1"`, `"model": "hub/qwen3:8b"`} {
		if !strings.Contains(s, want) {
			t.Errorf("config lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "apiKey") || strings.Contains(s, "instructions") {
		t.Errorf("config:\n%s", s)
	}
	if env, _ := os.ReadFile(filepath.Join(out, "env")); strings.Contains(string(env), "HUB_OPENCODE_API_KEY") {
		t.Error("a key variable for a profile without a key")
	}
}

// OpenCode substitutes {env:…} into the config's text, then parses it: a
// key with a quote or a backslash goes in escaped.
func TestKeyIsEscapedForTheConfigText(t *testing.T) {
	e := New(Options{ConfigDir: fakeOpenCode(t)})
	t.Setenv("TEST_OPENCODE_KEY", `k"e\y`)
	out := t.TempDir()
	spec := engine.Spec{JobID: "j3", Dir: repo(t, map[string]string{}), Scratch: t.TempDir(), HubBinary: "/opt/hub",
		Env:    []string{"PATH=" + os.Getenv("PATH"), "FAKE_OUT=" + out, "FAKE_STREAM=" + filepath.Join(mustAbs(t, "testdata"), "cached.jsonl")},
		Params: protocol.StartParams{Profile: "o", Task: "x"}}
	r, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	env, _ := os.ReadFile(filepath.Join(out, "env"))
	if want := `HUB_OPENCODE_API_KEY=k\"e\\y` + "\n"; !strings.Contains(string(env), want) {
		t.Errorf("env lacks %s:\n%s", want, env)
	}
}

func TestInstructions(t *testing.T) {
	dir := repo(t, map[string]string{"CLAUDE.md": "x", "sub/CLAUDE.md": "y", "sub/CONTEXT.md": "z"})
	got := instructions(filepath.Join(dir, "sub"))
	if want := []string{filepath.Join(dir, "sub", "CLAUDE.md"), filepath.Join(dir, "CLAUDE.md")}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("instructions %v, want %v", got, want)
	}
	dir = repo(t, map[string]string{"AGENTS.md": "x", "CLAUDE.md": "y"})
	if got := instructions(dir); len(got) != 1 || filepath.Base(got[0]) != "AGENTS.md" {
		t.Errorf("instructions %v", got)
	}
	if got := instructions(repo(t, map[string]string{})); got != nil {
		t.Errorf("instructions %v", got)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestWithoutRipgrepGrepAndGlobAreOff(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "rg"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !onPath("rg", []string{"PATH=/nonexistent:" + bin}) || onPath("rg", []string{"PATH=/nonexistent"}) || onPath("rg", nil) {
		t.Error("onPath")
	}
	spec := engine.Spec{Dir: t.TempDir(), HubBinary: "/opt/hub"}
	for _, rg := range []bool{true, false} {
		perm := config(spec, profile.OpenAI, "http://x/v1", "m", true, rg)["permission"].(map[string]any)
		if off := perm["grep"] == "deny" && perm["glob"] == "deny"; off == rg {
			t.Errorf("rg on PATH %v: permissions %v", rg, perm)
		}
		if perm["webfetch"] != "deny" || perm["websearch"] != "deny" {
			t.Errorf("web tools: %v", perm)
		}
	}
}
