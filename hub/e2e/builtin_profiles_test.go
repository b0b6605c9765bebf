package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// profilesResult is the structured result of the MCP profiles tool.
type profilesResult struct {
	Profiles []struct {
		Name     string `json:"name"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
		KeyEnv   string `json:"key_env"`
		Key      string `json:"key"`
	} `json:"profiles"`
	Default string `json:"default"`
}

func (p profilesResult) key(name string) (string, bool) {
	for _, pr := range p.Profiles {
		if pr.Name == name {
			return pr.Key, true
		}
	}
	return "", false
}

// TestBuiltinMCPProfiles: the MCP profiles tool through `hub mcp`. Setting
// an openai profile that has no key asks the user through elicitation; the
// key the user gives lands in the config dir's env file (mode 0600) and never
// in the tool's result; list then shows the key coming from the env file. A
// client that cannot elicit is told to have the user run `hub profile set
// NAME --key-stdin`, and no key is stored.
func TestBuiltinMCPProfiles(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	const (
		userKey  = "sk-from-user"
		keyVar   = "HUB_E2E_ELICITED_KEY"
		otherVar = "HUB_E2E_OTHER_KEY"
	)
	for _, v := range []string{keyVar, otherVar} {
		if _, set := os.LookupEnv(v); set {
			t.Fatalf("%s is set in the test's environment; the test needs it unset", v)
		}
	}

	var (
		mu    sync.Mutex
		asked []string
	)
	cmd := exec.Command(w.bin, "mcp")
	cmd.Env = w.env.Vars
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-elicit", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"key": userKey}}, nil
		},
	})
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	res := callTool(t, ctx, cs, "profiles", map[string]any{"action": "set", "name": "cloud", "provider": "openai",
		"model": "gpt-4.1-mini", "key_env": keyVar})
	text := contentText(res)
	mu.Lock()
	gotAsked := append([]string(nil), asked...)
	mu.Unlock()
	if len(gotAsked) != 1 || !strings.Contains(gotAsked[0], "cloud") {
		t.Fatalf("the user was asked %d times (%q); want once, for profile cloud", len(gotAsked), gotAsked)
	}
	if strings.Contains(text, userKey) {
		t.Errorf("the tool result shows the key:\n%s", text)
	}
	var set profilesResult
	decodeStructured(t, res, &set)
	if k, ok := set.key("cloud"); !ok || k != "env file" {
		t.Errorf("after set, profile cloud has key %q (found %v):\n%s", k, ok, text)
	}

	envFile := filepath.Join(w.hubConfigDir(), "env")
	fi, err := os.Stat(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v, want 0600", fi.Mode().Perm())
	}
	if body := readFile(t, envFile); !strings.Contains(body, keyVar+"="+userKey) {
		t.Errorf("env file does not hold the key under %s:\n%s", keyVar, body)
	}

	list := callTool(t, ctx, cs, "profiles", map[string]any{"action": "list"})
	ltext := contentText(list)
	if !strings.Contains(ltext, "cloud") || !strings.Contains(ltext, "key env file") || strings.Contains(ltext, userKey) {
		t.Errorf("list:\n%s", ltext)
	}
	var listed profilesResult
	decodeStructured(t, list, &listed)
	if k, _ := listed.key("cloud"); k != "env file" {
		t.Errorf("listed key source for cloud: %q", k)
	}

	// A client without elicitation: the profile is saved without a key and
	// the user is told how to add one.
	plain, _ := w.mcpSession(ctx, "2025-06-18")
	res = callTool(t, ctx, plain, "profiles", map[string]any{"action": "set", "name": "other", "provider": "openai",
		"model": "gpt-4.1-mini", "key_env": otherVar})
	if text := contentText(res); !strings.Contains(text, "hub profile set other --key-stdin") {
		t.Errorf("a client that cannot elicit is not told how to add the key:\n%s", text)
	}
	if body := readFile(t, envFile); strings.Contains(body, otherVar) {
		t.Errorf("a key was stored for the profile nobody gave one for:\n%s", body)
	}
	list = callTool(t, ctx, plain, "profiles", map[string]any{})
	decodeStructured(t, list, &listed)
	if k, ok := listed.key("other"); !ok || k != "missing" {
		t.Errorf("profile other has key %q (found %v)", k, ok)
	}
	mu.Lock()
	if len(asked) != 1 {
		t.Errorf("the elicitation handler was asked %d times, want 1", len(asked))
	}
	mu.Unlock()
}

// TestBuiltinDemo: `hub demo`, the real binary in a private HUB_HOME and
// HOME, runs the embedded scripted delegation end to end and says it
// succeeded with the rubric satisfied.
func TestBuiltinDemo(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	dir := filepath.Join(t.TempDir(), "demo")
	cmd := exec.CommandContext(ctx, w.bin, "demo", "--dir", dir)
	cmd.Env = w.env.Vars
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hub demo: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "succeeded") || !strings.Contains(s, "rubric: satisfied") {
		t.Fatalf("hub demo output lacks succeeded / rubric: satisfied:\n%s", s)
	}
	// The demo's work is on a branch of the sample repo, verified.
	if got := hubtest.Git(t, dir, "branch", "--list", "hub/*"); got == "" {
		t.Errorf("the demo left no hub/ branch in %s", dir)
	}
	if st := hubtest.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("the demo's sample checkout is dirty:\n%s", st)
	}
}
