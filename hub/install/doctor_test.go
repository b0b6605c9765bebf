package install

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/mcpserver"
)

// fakeServerVar makes the test binary an MCP server on stdio (see
// TestMain), of the kind the variable names.
const fakeServerVar = "HUB_INSTALL_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeServerVar) {
	case "":
		os.Exit(m.Run())
	case "hub": // hub's own MCP server, with no daemon behind it
		srv := mcpserver.New(noDaemon{}, mcpserver.Options{Version: "9.9.9"})
		_ = srv.MCP().Run(context.Background(), &mcp.StdioTransport{})
	case "few": // an MCP server with one tool
		s := mcp.NewServer(&mcp.Implementation{Name: "other", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "start"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
	case "chatty": // logs to stdout, as a careless server does
		fmt.Println("starting up...")
		time.Sleep(time.Minute)
	case "dies":
		fmt.Fprintln(os.Stderr, "fatal: no config")
		os.Exit(3)
	case "mute":
		time.Sleep(time.Minute)
	case "env":
		fmt.Fprintln(os.Stderr, strings.Join(os.Environ(), "\n"))
		os.Exit(1)
	}
	os.Exit(0)
}

func fakeServer(t *testing.T, kind string) Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Command: exe, Args: []string{"mcp"}, Env: append(os.Environ(), fakeServerVar+"="+kind)}
}

func TestShake(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	h, err := Shake(ctx, fakeServer(t, "hub"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if h.ServerName != "hub" || h.ServerVersion != "9.9.9" || h.ProtocolVersion != ProtocolVersion {
		t.Errorf("handshake %+v", h)
	}
	slices.Sort(h.Tools)
	if diff := cmp.Diff(slices.Sorted(slices.Values(SupervisorTools())), h.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestShakeFailures(t *testing.T) {
	tests := []struct {
		kind string
		want string
	}{
		{"chatty", `it wrote something that is not JSON-RPC to stdout: "starting up..."`},
		{"dies", "initialize: it exited without an answer; its stderr ends: fatal: no config"},
		{"mute", "initialize: no answer in time"},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := Shake(ctx, fakeServer(t, tc.kind), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s to give up", d)
			}
		})
	}
	if _, err := Shake(t.Context(), Server{Command: "/nonexistent/hub"}, "test"); err == nil || !strings.Contains(err.Error(), "cannot start it") {
		t.Errorf("missing command: %v", err)
	}
}

// Codex gives a server a few variables of its environment; the others
// start it with theirs. The entry's env goes on top either way.
func TestClientEnv(t *testing.T) {
	environ := []string{"HOME=/h", "PATH=/bin", "HUB_HOME=/mine", "XDG_CONFIG_HOME=/x", "LANG=C"}
	extra := map[string]string{"HUB_HOME": "/pinned"}
	codex := clientEnv(Codex, environ, extra)
	slices.Sort(codex)
	if diff := cmp.Diff([]string{"HOME=/h", "HUB_HOME=/pinned", "LANG=C", "PATH=/bin"}, codex); diff != "" {
		t.Errorf("codex (-want +got):\n%s", diff)
	}
	claude := clientEnv(Claude, environ, extra)
	slices.Sort(claude)
	if diff := cmp.Diff([]string{"HOME=/h", "HUB_HOME=/pinned", "LANG=C", "PATH=/bin", "XDG_CONFIG_HOME=/x"}, claude); diff != "" {
		t.Errorf("claude (-want +got):\n%s", diff)
	}
}

func statuses(r Report) map[string]Status {
	m := map[string]Status{}
	for _, c := range r.Checks {
		m[c.Name] = c.Status
	}
	return m
}

func TestDiagnose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no client programs
	w := newWorld(t)
	o := DoctorOptions{Env: w.env, Environ: os.Environ(), Version: "9.9.9", Timeout: 20 * time.Second,
		Want: Entry{Command: exe, Args: []string{"mcp"}, Env: map[string]string{fakeServerVar: "hub"}}}

	r := Diagnose(t.Context(), Claude, o)
	want := map[string]Status{"program": Fail, "entry": Fail, "skill": Fail}
	if diff := cmp.Diff(want, statuses(r)); diff != "" || r.OK || r.SetUp {
		t.Errorf("before install (-want +got):\n%s\n%+v", diff, r)
	}
	if r.Checks[0].Fix != "npm install -g @anthropic-ai/claude-code" || r.Checks[1].Fix != "hub install --client claude" {
		t.Errorf("fixes: %q, %q", r.Checks[0].Fix, r.Checks[1].Fix)
	}

	for _, c := range Clients() {
		w.install(c, o.Want)
		r := Diagnose(t.Context(), c, o)
		want := map[string]Status{"program": Fail, "entry": OK, "handshake": OK, "skill": OK}
		if diff := cmp.Diff(want, statuses(r)); diff != "" || r.OK || !r.SetUp {
			t.Errorf("%s after install (-want +got):\n%s\n%+v", c.Name, diff, r)
		}
	}

	// An entry that runs some other server lacks hub's tools.
	w.install(Codex, Entry{Command: exe, Args: []string{"mcp"}, Env: map[string]string{fakeServerVar: "few"}})
	r = Diagnose(t.Context(), Codex, o)
	if st := statuses(r); st["entry"] != Warn || st["handshake"] != Fail {
		t.Errorf("other server: %+v", r)
	}
	// An entry whose command is gone.
	w.install(OpenCode, Entry{Command: "/gone/hub", Args: []string{"mcp"}})
	r = Diagnose(t.Context(), OpenCode, o)
	if st := statuses(r); st["handshake"] != Fail || !strings.Contains(r.Checks[2].Detail, "/gone/hub, which does not exist") {
		t.Errorf("missing command: %+v", r)
	}
	// A stale skill is a warning.
	w.write(".claude/skills/hub-delegate/SKILL.md", "old\n", 0o644)
	if st := statuses(Diagnose(t.Context(), Claude, o)); st["skill"] != Warn {
		t.Errorf("stale skill: %v", st)
	}
}

// A config.toml go-toml refuses fails the entry check with where and how
// to fix it.
func TestDiagnoseBrokenTOML(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	w := newWorld(t)
	w.write(".codex/config.toml", "[tui]\ntheme = \"dark\"\n\n[tui]\n", 0o600)
	r := Diagnose(t.Context(), Codex, DoctorOptions{Env: w.env, Timeout: 5 * time.Second})
	var entry Check
	for _, c := range r.Checks {
		if c.Name == "entry" {
			entry = c
		}
	}
	file := w.path(".codex/config.toml")
	want := Check{Name: "entry", Status: Fail,
		Detail: file + " is not valid TOML: line 4, column 2: table tui already exists",
		Fix:    "edit " + file + " at line 4, column 2 by hand, then run hub install --client codex"}
	if diff := cmp.Diff(want, entry); diff != "" || r.SetUp {
		t.Errorf("entry check (-want +got):\n%s", diff)
	}
}

// Gemini CLI and Qwen Code: a settings.json that does not read fails the
// entry check, and so does an entry that is not one a client can run; a
// stale skill file is a warning, a missing one a failure.
func TestDiagnoseGeminiQwen(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	w := newWorld(t)
	o := DoctorOptions{Env: w.env, Timeout: 5 * time.Second, Want: testEntry}
	check := func(c Client, name string) Check {
		t.Helper()
		for _, ch := range Diagnose(t.Context(), c, o).Checks {
			if ch.Name == name {
				return ch
			}
		}
		t.Fatalf("%s: no %s check", c.Name, name)
		return Check{}
	}
	w.write(".gemini/settings.json", "{\n  \"mcpServers\": {},\n}\n", 0o644)
	if ch := check(Gemini, "entry"); ch.Status != Fail || !strings.Contains(ch.Detail, w.path(".gemini/settings.json")+": line 3, column 1: expected a quoted key") {
		t.Errorf("trailing comma: %+v", ch)
	}
	w.write(".qwen/settings.json", `{"mcpServers": {"hub": {"command": "/opt/hub/bin/hub", "args": "mcp"}}}`, 0o644)
	if ch := check(Qwen, "entry"); ch.Status != Fail || !strings.Contains(ch.Detail, "mcpServers.hub: args is not a list of strings") {
		t.Errorf("args not a list: %+v", ch)
	}
	if ch := check(Qwen, "skill"); ch.Status != Fail || ch.Fix != "hub install --client qwen" || !strings.Contains(ch.Detail, w.path(".qwen/skills/hub-delegate/SKILL.md")) {
		t.Errorf("no skill: %+v", ch)
	}
	w.write(".qwen/skills/hub-delegate/SKILL.md", "---\nname: hub-delegate\n---\nold\n", 0o644)
	if ch := check(Qwen, "skill"); ch.Status != Warn {
		t.Errorf("stale skill: %+v", ch)
	}
	if ch := check(Gemini, "program"); ch.Status != Fail || ch.Fix != "npm install -g @google/gemini-cli" {
		t.Errorf("no gemini on PATH: %+v", ch)
	}
}
