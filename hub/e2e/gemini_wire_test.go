package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// geminiOffline is the settings.json that keeps Gemini CLI (0.61.0) off the
// network but for the model server, with one model and no side calls: the
// API key auth chosen (headless runs refuse to start without one); no folder
// trust check (an untrusted folder turns --yolo back to "default"); no usage
// statistics (Clearcut, play.googleapis.com) nor telemetry; no update
// checks; a fixed model, so no routing call ("auto" asks a flash-lite
// classifier first); no LLM loop detection, next-speaker check or edit
// correction (gemini-3-flash-preview calls when they trigger); no IDE; no
// ripgrep lookup.
const geminiOffline = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "model": {"name": "gemini-scripted", "disableLoopDetection": true, "skipNextSpeakerCheck": true},
  "tools": {"disableLLMCorrection": true, "useRipgrep": false},
  "ide": {"enabled": false}
}`

// The real Gemini CLI, headless, against the scripted server's Gemini wire:
// the model writes a file with write_file, reads it back with
// run_shell_command, then answers. Each result comes back paired with its
// call, every request is a streamed generateContent of the one model, and
// nothing else is asked of the server.
func TestGeminiCLIWire(t *testing.T) {
	gemini := hubtest.AgentCLI(t, "gemini")
	ctx := hubtest.Deadline(t, 2*time.Minute)
	const key = "gemini-scripted-key"

	var mu sync.Mutex
	var lines []string
	srv := scripted.New(&scripted.Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	call := func(name string, args map[string]any) scripted.ToolCall {
		b, _ := json.Marshal(args)
		return scripted.ToolCall{Name: name, Args: b}
	}
	if err := srv.SetScript("gemini-scripted", &scripted.Script{Turns: []scripted.Turn{
		{Text: "Writing hello.txt.", ToolCalls: []scripted.ToolCall{call("write_file", map[string]any{"file_path": "hello.txt", "content": "hi from gemini\n"})}},
		{ToolCalls: []scripted.ToolCall{call("run_shell_command", map[string]any{"command": "cat hello.txt", "description": "Show hello.txt"})}},
		{Text: "hello.txt says hi.", Usage: &scripted.Usage{Input: 900, Output: 6}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})

	home, work := t.TempDir(), hubtest.Repo(t, filepath.Join(t.TempDir(), "work"), map[string]string{"README": "a project\n"})
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiOffline), 0o600); err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, bin := range []string{"node", "git"} {
		if p, err := exec.LookPath(bin); err == nil {
			path = append(path, filepath.Dir(p))
		}
	}
	cmd := exec.CommandContext(ctx, gemini, "-p", "Write hello.txt saying hi, then show it.", "--output-format", "stream-json", "--approval-mode", "yolo")
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + strings.Join(append(path, "/usr/bin", "/bin"), ":"),
		"HOME=" + home, "TERM=dumb",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"GEMINI_API_KEY=" + key, "GOOGLE_GEMINI_BASE_URL=" + srv.URL(),
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gemini: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}

	// What the CLI reports: the tool uses and their results, the answer.
	type event struct {
		Type     string `json:"type"`
		Role     string `json:"role"`
		Content  string `json:"content"`
		ToolName string `json:"tool_name"`
		ToolID   string `json:"tool_id"`
		Status   string `json:"status"`
	}
	var events []event
	var answer strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("stream-json line %q: %v", sc.Text(), err)
		}
		events = append(events, e)
		if e.Type == "message" && e.Role == "assistant" {
			answer.WriteString(e.Content)
		}
	}
	var tools []string
	for _, e := range events {
		switch e.Type {
		case "tool_use":
			tools = append(tools, "use "+e.ToolName)
		case "tool_result":
			tools = append(tools, "result "+e.Status)
		}
	}
	if want := []string{"use write_file", "result success", "use run_shell_command", "result success"}; !slices.Equal(tools, want) {
		t.Errorf("tool events %v, want %v\nstdout:\n%s", tools, want, out)
	}
	if got := answer.String(); !strings.HasSuffix(got, "hello.txt says hi.") {
		t.Errorf("assistant text %q, want it to end with the final answer", got)
	}
	if last := events[len(events)-1]; last.Type != "result" || last.Status != "success" {
		t.Errorf("last event %+v, want a successful result", last)
	}
	if b, err := os.ReadFile(filepath.Join(work, "hello.txt")); err != nil || string(b) != "hi from gemini\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}

	// What the server saw: three streamed requests of the one model, the key
	// in its header, each tool result paired with its call.
	reqs := srv.Requests()
	if len(reqs) != 3 || srv.Remaining("gemini-scripted") != 0 {
		t.Fatalf("%d requests, %d turns left; want 3 and 0 (no side calls)", len(reqs), srv.Remaining("gemini-scripted"))
	}
	for i, r := range reqs {
		if r.Wire != scripted.WireGemini || r.Model != "gemini-scripted" || !r.Stream || r.Query.Get("alt") != "sse" {
			t.Errorf("request %d: %s %q stream %v alt %q, want a streamed gemini-scripted request over SSE", i+1, r.Wire, r.Model, r.Stream, r.Query.Get("alt"))
		}
		if r.Header.Get("X-Goog-Api-Key") != key || r.Query.Has("key") {
			t.Errorf("request %d: the key is not (only) in x-goog-api-key", i+1)
		}
		if !hasTool(&r, "write_file") || !hasTool(&r, "run_shell_command") || !strings.Contains(r.System, "Gemini CLI") {
			t.Errorf("request %d: tools %v, system prompt of %d characters", i+1, r.Tools, len(r.System))
		}
	}
	for i, want := range []struct{ tool, output string }{{"write_file", "hello.txt"}, {"run_shell_command", "hi from gemini"}} {
		msgs := reqs[i+1].Messages
		if len(msgs) < 2 {
			t.Fatalf("request %d: history %+v", i+2, msgs)
		}
		call, res := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if call.Role != "assistant" || len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != want.tool ||
			res.Role != "tool" || len(res.ToolResults) != 1 {
			t.Fatalf("request %d ends with %+v then %+v, want the %s call and its result", i+2, call, res, want.tool)
		}
		c, r := call.ToolCalls[0], res.ToolResults[0]
		if r.CallID != c.ID || r.IsError || !strings.Contains(r.Content, want.output) {
			t.Errorf("request %d: result %+v for call %s, want it paired, holding %q", i+2, r, c.ID, want.output)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, "not found") || strings.Contains(l, key) {
			t.Errorf("server log: %s", l)
		}
	}
}
