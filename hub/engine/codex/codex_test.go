package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/internal/tomltext"
)

const testKey = "sk-codex-unit-0123456789"

// setup makes a hub config dir with profiles "o" (openai, keyed, priced a
// dollar a million tokens), "l" (ollama) and "a" (anthropic), and points
// HUB_CODEX at codex.
func setup(t *testing.T, codex string) string {
	t.Helper()
	dir := t.TempDir()
	st := profile.Store{Dir: dir}
	for _, p := range []profile.Profile{
		{Name: "o", Provider: profile.OpenAI, BaseURL: "http://127.0.0.1:9/v1", Model: "m", KeyEnv: "HUB_UNIT_CODEX_KEY"},
		{Name: "l", Provider: profile.Ollama, Model: "qwen"},
		{Name: "a", Provider: profile.Anthropic, Model: "claude", KeyEnv: "HUB_UNIT_CODEX_KEY"},
	} {
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	prices, _ := json.Marshal(map[string]any{"models": map[string]any{"m": map[string]float64{"input": 1, "output": 1}}})
	if err := os.WriteFile(filepath.Join(dir, "prices.json"), prices, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_UNIT_CODEX_KEY", testKey)
	t.Setenv(PathEnv, codex)
	return dir
}

func TestCheck(t *testing.T) {
	dir := setup(t, os.Args[0])
	e := New(Options{ConfigDir: dir})
	for _, tc := range []struct {
		name string
		p    protocol.StartParams
		want string // in the error; "" for none
	}{
		{"openai", protocol.StartParams{Profile: "o"}, ""},
		{"ollama", protocol.StartParams{Profile: "l"}, ""},
		{"effort", protocol.StartParams{Profile: "o", Effort: "high"}, ""},
		{"anthropic", protocol.StartParams{Profile: "a"}, "Responses API"},
		{"no such profile", protocol.StartParams{Profile: "zz"}, "zz"},
		{"exec", protocol.StartParams{Profile: "o", Exec: "true"}, "exec engine"},
		{"max turns", protocol.StartParams{Profile: "o", MaxTurns: 3}, "max_turns"},
		{"bad effort", protocol.StartParams{Profile: "o", Effort: "max"}, "low, medium, high"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Check(tc.p)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	t.Setenv(PathEnv, filepath.Join(t.TempDir(), "none"))
	if err := e.Check(protocol.StartParams{Profile: "o"}); err == nil || !strings.Contains(err.Error(), "npm install -g @openai/codex") {
		t.Errorf("without codex: %v", err)
	}
}

func TestCapabilities(t *testing.T) {
	c := New(Options{}).Capabilities()
	// Its own sandbox, and hub's at isolated where hub's works here; never
	// untrusted: it calls its model from inside.
	want := protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree, protocol.IsolationSandbox}, ReadOnly: true, Pays: protocol.PaysAPI,
		IsolationWhyNot: map[protocol.Isolation]string{}}
	if a := sandbox.Probe(); a.OK {
		want.Isolation = append(want.Isolation, protocol.IsolationIsolated)
	} else {
		want.IsolationWhyNot[protocol.IsolationIsolated] = a.Reason
	}
	want.IsolationWhyNot[protocol.IsolationUntrusted] = c.IsolationWhyNot[protocol.IsolationUntrusted]
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if !strings.Contains(c.IsolationWhyNot[protocol.IsolationUntrusted], "calls its model from inside") {
		t.Errorf("untrusted should be refused with the reason: %q", c.IsolationWhyNot[protocol.IsolationUntrusted])
	}
}

// TestConfigFenced: inside hub's sandbox Codex's own is off (it cannot nest).
func TestConfigFenced(t *testing.T) {
	got := config{Profile: "o", Model: "m", BaseURL: "http://h/v1", Home: "/s/home", Fenced: true}.toml()
	if !strings.Contains(got, `sandbox_mode = "danger-full-access"`) {
		t.Errorf("fenced config:\n%s", got)
	}
}

func TestConfigTOML(t *testing.T) {
	c := config{Profile: "o", Model: "m\"x", BaseURL: "http://h/v1", KeyEnv: keyEnv, Home: "/s/home",
		Worker:       agentcli.WorkerMCP{Command: "/bin/hub", Args: []string{"worker-mcp"}, Env: map[string]string{"HUB_SOCKET": "/s/x.sock", "HUB_JOB": "j1"}},
		ToolTimeoutS: 660}
	got := c.toml()
	for _, line := range []string{
		`model = "m\"x"`,
		`sandbox_mode = "workspace-write"`,
		`approval_policy = "never"`,
		`allow_login_shell = false`,
		`base_url = "http://h/v1"`,
		`wire_api = "responses"`,
		`env_key = "HUB_CODEX_API_KEY"`,
		`writable_roots = ["/s/home"]`,
		`exclude_slash_tmp = true`,
		`exclude = ["HUB_CODEX_API_KEY"]`,
		`command = "/bin/hub"`,
		`args = ["worker-mcp"]`,
		`env = { HUB_JOB = "j1", HUB_SOCKET = "/s/x.sock" }`,
		`required = true`,
		`default_tools_approval_mode = "approve"`,
		`tool_timeout_sec = 660`,
		"[analytics]\nenabled = false",
		"[features]\nplugins = false\nunbounded_connection_retries = false",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("config lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "model_reasoning_effort") {
		t.Errorf("an effort nobody asked for:\n%s", got)
	}
	// It reads back, through go-toml, as what hub meant.
	var read struct {
		Model      string `toml:"model"`
		MCPServers map[string]struct {
			Command string            `toml:"command"`
			Args    []string          `toml:"args"`
			Env     map[string]string `toml:"env"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(got), &read); err != nil {
		t.Fatalf("go-toml refuses the config: %v\n%s", err, got)
	}
	if read.Model != c.Model || read.MCPServers["hub"].Command != c.Worker.Command ||
		!cmp.Equal(read.MCPServers["hub"].Args, c.Worker.Args) || !cmp.Equal(read.MCPServers["hub"].Env, c.Worker.Env) {
		t.Errorf("config reads back as %+v", read)
	}
	c.ReadOnly, c.KeyEnv, c.Effort = true, "", "low"
	got = c.toml()
	for _, line := range []string{`sandbox_mode = "read-only"`, `model_reasoning_effort = "low"`} {
		if !strings.Contains(got, line) {
			t.Errorf("config lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "env_key") {
		t.Errorf("env_key without a key:\n%s", got)
	}
}

func TestArgs(t *testing.T) {
	if diff := cmp.Diff([]string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "-C", "/w", "--", "-p"}, args("/w", "-p")); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	want := []string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "-C", "/w", "resume", "--", "id1", "go on"}
	if diff := cmp.Diff(want, resumeArgs("/w", "id1", "go on")); diff != "" {
		t.Errorf("resume args (-want +got):\n%s", diff)
	}
}

// fakeCodex writes a stand-in for codex that logs its arguments, its
// environment and its config, then plays a recorded stream: resume.jsonl
// when resuming, else first.
func fakeCodex(t *testing.T, first string) (bin, logDir string) {
	t.Helper()
	logDir = t.TempDir()
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(t.TempDir(), "codex")
	script := `#!/bin/sh
n=$(ls "` + logDir + `" | grep -c '^args')
printf '%s\n' "$@" > "` + logDir + `/args$n"
env > "` + logDir + `/env$n"
cp "$CODEX_HOME/config.toml" "` + logDir + `/config$n"
for a in "$@"; do [ "$a" = resume ] && exec cat "` + td + `/resume.jsonl"; done
exec cat "` + td + `/` + first + `"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, logDir
}

// mailbox hands out steering once.
type mailbox struct {
	mu     sync.Mutex
	steers []string
	notes  []string
	spent  micros.Micros
}

func (m *mailbox) Ask(context.Context, protocol.AskParams) (*protocol.AskResult, error) {
	return &protocol.AskResult{}, nil
}

func (m *mailbox) Progress(context.Context, string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.steers
	m.steers = nil
	return s, nil
}

func (m *mailbox) Note(_ context.Context, note string) {
	m.mu.Lock()
	m.notes = append(m.notes, note)
	m.mu.Unlock()
}

func (m *mailbox) Spent(_ context.Context, spent micros.Micros, _ protocol.CostEvent) {
	m.mu.Lock()
	m.spent = spent
	m.mu.Unlock()
}

func (m *mailbox) Trace(context.Context, protocol.TraceEntry) {}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func spec(t *testing.T, p protocol.StartParams, mb engine.Mailbox) engine.Spec {
	wt := t.TempDir()
	return engine.Spec{JobID: "j1", Dir: wt, Params: p, Scratch: t.TempDir(), HubBinary: "/opt/hub/hub", Mailbox: mb,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "HUB_JOB=j1", "HUB_SOCKET=/s/shim.sock", "HUB_TASK=fix"}}
}

// Start runs codex in the worktree with a private CODEX_HOME whose config
// holds no key, the key in the environment, and resumes the session when
// steering is left unread.
func TestStartAndResume(t *testing.T) {
	bin, logs := fakeCodex(t, "edit.jsonl")
	e := New(Options{ConfigDir: setup(t, bin)})
	mb := &mailbox{steers: []string{"say teal"}}
	sp := spec(t, protocol.StartParams{Task: "fix bug.txt", Profile: "o", AskTimeoutS: 600}, mb)
	r, err := e.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 || o.Failure != "" || o.Summary != "resumed ok" {
		t.Fatalf("outcome %+v", o)
	}
	// Both runs' tokens, a micro-dollar each.
	if tokens := int64(10394 + 15 + 15938 + 18); !o.CostKnown || o.Tokens != tokens || o.CostMicros != micros.Micros(tokens) || mb.spent != micros.Micros(tokens) {
		t.Errorf("cost %d known %v tokens %d (mailbox saw %d)", o.CostMicros, o.CostKnown, o.Tokens, mb.spent)
	}
	if len(o.Observed) != 1 || o.Observed[0].Command != "echo fixed > bug.txt" || o.Observed[0].ExitCode == nil || *o.Observed[0].ExitCode != 0 {
		t.Errorf("observed %+v", o.Observed)
	}

	first := strings.Split(strings.TrimSpace(readLog(t, filepath.Join(logs, "args0"))), "\n")
	if len(first) < 8 || strings.Join(first[:7], " ") != "exec --json --strict-config --skip-git-repo-check -C "+sp.Dir+" --" ||
		!strings.HasPrefix(first[7], "You are working one bounded task") {
		t.Errorf("first run's args: %q", first)
	}
	resumed := strings.Split(strings.TrimSpace(readLog(t, filepath.Join(logs, "args1"))), "\n")
	if len(resumed) < 10 || strings.Join(resumed[6:9], " ") != "resume -- 01a2386f-f8ea-76e1-9ddd-92ca27cd9958" ||
		!strings.Contains(strings.Join(resumed[9:], "\n"), "say teal") {
		t.Errorf("resume's args: %q", resumed)
	}

	env := readLog(t, filepath.Join(logs, "env0"))
	codexHome := filepath.Join(sp.Scratch, "codex")
	for _, kv := range []string{"CODEX_HOME=" + codexHome, keyEnv + "=" + testKey, "HOME=" + filepath.Join(sp.Scratch, "home")} {
		if !strings.Contains(env, kv+"\n") {
			t.Errorf("the environment lacks %s:\n%s", kv, env)
		}
	}
	cfg := readLog(t, filepath.Join(logs, "config0"))
	if strings.Contains(cfg, testKey) {
		t.Errorf("the key is written in config.toml:\n%s", cfg)
	}
	for _, line := range []string{`base_url = "http://127.0.0.1:9/v1"`, `model = "m"`, `command = "/opt/hub/hub"`,
		`env = { HUB_JOB = "j1", HUB_SOCKET = "/s/shim.sock" }`, `tool_timeout_sec = 660`,
		`writable_roots = [` + tomltext.Value(filepath.Join(sp.Scratch, "home")) + `]`} {
		if !strings.Contains(cfg, line) {
			t.Errorf("config.toml lacks %s:\n%s", line, cfg)
		}
	}
	if fi, err := os.Stat(filepath.Join(codexHome, "config.toml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml: %v %v", fi, err)
	}
}

// A run whose turn failed fails with Codex's words, and the cost of what
// was spent is still known.
func TestStartFailedTurn(t *testing.T) {
	bin, _ := fakeCodex(t, "not_found.jsonl")
	e := New(Options{ConfigDir: setup(t, bin)})
	r, err := e.Start(context.Background(), spec(t, protocol.StartParams{Task: "x", Profile: "o", Kind: protocol.KindRead}, nil))
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode == 0 || !strings.Contains(o.Failure, "does not serve the OpenAI Responses API") || !o.CostKnown || o.CostMicros != 0 {
		t.Errorf("outcome %+v", o)
	}
}

// Stop ends the whole process group at once.
func TestStop(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 60 & wait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := New(Options{ConfigDir: setup(t, bin)})
	r, err := e.Start(context.Background(), spec(t, protocol.StartParams{Task: "x", Profile: "l"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r.Stop(2 * time.Second)
	o := r.Wait()
	if time.Since(t0) > 5*time.Second || o.Signal == "" {
		t.Errorf("stopped after %s: %+v", time.Since(t0), o)
	}
}
