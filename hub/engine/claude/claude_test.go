package claude

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// events records what the parser reported.
type events struct {
	log []string
}

func (e *events) Session(id string)       { e.log = append(e.log, "session "+id) }
func (e *events) Said(text string)        { e.log = append(e.log, "said "+text) }
func (e *events) Tool(name, input string) { e.log = append(e.log, "tool "+name+" "+input) }
func (e *events) Usage(u model.Usage)     { e.log = append(e.log, "usage "+jsonOf(u)) }
func (e *events) Tokens(u model.Usage)    { e.log = append(e.log, "tokens "+jsonOf(u)) }
func (e *events) Cost(usd float64)        { e.log = append(e.log, "cost "+jsonOf(usd)) }
func (e *events) Final(text string)       { e.log = append(e.log, "final "+text) }
func (e *events) Failed(msg string)       { e.log = append(e.log, "failed "+msg) }
func (e *events) Command(cmd string, code *int, _ time.Time) {
	c := "?"
	if code != nil {
		c = jsonOf(*code)
	}
	e.log = append(e.log, "command "+c+" "+cmd)
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestParse covers the shapes of Claude Code 2.1.328's stream-json: an
// answer's blocks as separate events sharing one usage, a Bash call and its
// result, a failed result, permission denials, and lines it does not know.
func TestParse(t *testing.T) {
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s-1","model":"m","tools":["Bash"],"mcp_servers":[{"name":"hub","status":"connected"}]}`,
		`{"type":"assistant","session_id":"s-1","message":{"id":"msg_1","content":[{"type":"text","text":"Looking."}],"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":40}}}`,
		`{"type":"assistant","session_id":"s-1","message":{"id":"msg_1","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"go test ./...","description":"test"}}],"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":40}}}`,
		`{"type":"user","session_id":"s-1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"ok","is_error":false}]}}`,
		`{"type":"assistant","session_id":"s-1","message":{"id":"msg_2","content":[{"type":"tool_use","id":"tu_2","name":"Bash","input":{"command":"false"}}],"usage":{"input_tokens":200,"output_tokens":7}}}`,
		`{"type":"user","session_id":"s-1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_2","content":"Exit code 1","is_error":true}]}}`,
		`{"type":"system","subtype":"api_retry","attempt":1}`,
		`{"type":"stream_event","event":{"type":"something new"}}`,
		`not json`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Done: tests pass.","session_id":"s-1","total_cost_usd":0.0123,"usage":{"input_tokens":300,"output_tokens":12},"permission_denials":[{"tool_name":"WebFetch"}]}`,
	}
	var ev events
	var unknown []string
	parse := newParser(newQuotaLog(time.Now))
	for _, l := range lines {
		if !parse([]byte(l), &ev) {
			unknown = append(unknown, l)
		}
	}
	want := []string{
		"session s-1",
		"session s-1", `said Looking.`, `usage {"Input":140,"Output":5,"CachedInput":40}`,
		"session s-1", `tool Bash {"command":"go test ./...","description":"test"}`,
		"session s-1", "command 0 go test ./...",
		"session s-1", `tool Bash {"command":"false"}`, `usage {"Input":200,"Output":7,"CachedInput":0}`,
		"session s-1", "command ? false",
		"session s-1", "cost 0.0123", "said Claude Code refused the tool WebFetch (permission denied)", "final Done: tests pass.",
	}
	if diff := cmp.Diff(want, ev.log); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(unknown) != 2 || !strings.Contains(unknown[0], "stream_event") || unknown[1] != "not json" {
		t.Errorf("unknown lines %q", unknown)
	}
}

func TestParseFailures(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s"}`, "failed Claude Code: error_max_turns"},
		{`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 401 bad key"}`, "failed Claude Code: success: API Error: 401 bad key"},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"]}`, "failed Claude Code: error_during_execution: boom"},
	} {
		var ev events
		newParser(newQuotaLog(time.Now))([]byte(tc.line), &ev)
		if got := ev.log[len(ev.log)-1]; got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.line, got, tc.want)
		}
	}
	// A result without per-message usage still counts its tokens once.
	var ev events
	newParser(newQuotaLog(time.Now))([]byte(`{"type":"result","subtype":"success","result":"x","usage":{"input_tokens":10,"output_tokens":2}}`), &ev)
	if !strings.Contains(strings.Join(ev.log, "\n"), `usage {"Input":10,"Output":2,"CachedInput":0}`) {
		t.Errorf("events %q", ev.log)
	}
	// The result's totals correct the snapshots of each answer's start.
	ev = events{}
	p := newParser(newQuotaLog(time.Now))
	p([]byte(`{"type":"assistant","message":{"id":"a","content":[],"usage":{"input_tokens":100,"output_tokens":1}}}`), &ev)
	p([]byte(`{"type":"result","subtype":"success","result":"x","usage":{"input_tokens":100,"output_tokens":30}}`), &ev)
	if !strings.Contains(strings.Join(ev.log, "\n"), `tokens {"Input":0,"Output":29,"CachedInput":0}`) {
		t.Errorf("events %q", ev.log)
	}
}

// TestRealClaudeCode runs the engine on the real Claude Code against a
// scripted model: it runs a command, answers, and reports the cost Claude
// Code computed, which the outcome carries as is.
func TestRealClaudeCode(t *testing.T) {
	t.Setenv(PathEnv, hubtest.AgentCLI(t, "claude"))
	srv := scripted.New(nil)
	srv.SetResponder("", func(r *scripted.Request) (scripted.Turn, bool) {
		if len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool" {
			return scripted.Turn{Text: "Wrote done.txt.", Usage: &scripted.Usage{Input: 1000, Output: 20}}, true
		}
		args, _ := json.Marshal(map[string]string{"command": "echo done > done.txt", "description": "write"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}, Usage: &scripted.Usage{Input: 900, Output: 30}}, true
	})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := t.TempDir()
	st := profile.Store{Dir: cfg, Environ: func(string) (string, bool) { return "", false }}
	if err := st.Set(profile.Profile{Name: "a", Provider: profile.Anthropic, BaseURL: srv.URL() + "/v1", Model: "claude-sonnet-4-5", KeyEnv: "TEST_KEY"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetKey("TEST_KEY", "sk-test-engine-key"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	mb := &hubtest.Mailbox{}
	log := &hubtest.Buffer{}
	spec := engine.Spec{JobID: "j", Dir: dir, Scratch: t.TempDir(), HubBinary: "/bin/true", Mailbox: mb, Output: log,
		Params: protocol.StartParams{Task: "write done.txt", Profile: "a", AskTimeoutS: 60},
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HUB_JOB=j", "HUB_SOCKET=/nonexistent"}}
	e := New(Options{ConfigDir: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 || o.Summary != "Wrote done.txt." {
		t.Fatalf("outcome %+v\n%s", o, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "done.txt")); string(b) != "done\n" {
		t.Errorf("done.txt = %q", b)
	}
	if spent := mb.Costs(); len(spent) == 0 || !o.CostKnown || o.CostMicros != micros.FromUSD(spent[len(spent)-1].USD) {
		t.Errorf("the outcome's cost %d (known %v) is not the last the CLI reported: %+v", o.CostMicros, o.CostKnown, spent)
	}
	if o.Tokens != 1950 || o.Calls != 2 {
		t.Errorf("tokens %d calls %d, want 1950 over 2 calls", o.Tokens, o.Calls)
	}
	if len(o.Observed) != 1 || o.Observed[0].Command != "echo done > done.txt" {
		t.Errorf("observed %+v", o.Observed)
	}
	for _, req := range srv.Requests() {
		if got := req.Header.Get("X-Api-Key"); got != "sk-test-engine-key" {
			t.Errorf("request key %q", got)
		}
	}
	if _, err := os.Stat(filepath.Join(spec.Scratch, "home", ".claude")); err != nil {
		t.Errorf("Claude Code's state is not in the job's own home: %v", err)
	}
}

func TestCheckRefuses(t *testing.T) {
	cfg := t.TempDir()
	st := profile.Store{Dir: cfg}
	if err := st.Set(profile.Profile{Name: "o", Provider: profile.OpenAI, Model: "gpt-4o", KeyEnv: "X_KEY"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PathEnv, "/bin/true")
	e := New(Options{ConfigDir: cfg})
	for _, tc := range []struct {
		p    protocol.StartParams
		want string
	}{
		{protocol.StartParams{Task: "t", Exec: "true"}, "exec is for the exec engine"},
		{protocol.StartParams{Task: "t", Profile: "o"}, "this engine speaks to anthropic endpoints"},
		{protocol.StartParams{Task: "t", Profile: "nope"}, `no profile "nope"`},
	} {
		if err := e.Check(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	t.Setenv(PathEnv, filepath.Join(t.TempDir(), "no-claude"))
	if err := e.Check(protocol.StartParams{Task: "t", Profile: "o"}); err == nil || !strings.Contains(err.Error(), "install Claude Code") {
		t.Errorf("a missing claude: %v", err)
	}
}
