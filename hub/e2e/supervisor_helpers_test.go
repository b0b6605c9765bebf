//go:build unix

package e2e

// Helpers of the supervisor tests: a real agent CLI (Claude Code, Codex,
// OpenCode, Gemini CLI, Qwen Code) is the supervisor, connected to `hub mcp`, with its model played
// by a responder on a scripted server in the test process. The responder
// drives the CLI through start → wait → result on an exec job and ends with
// "DONE head=<sha>".

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// supInitialHome is $HOME as the test process started, before any world
// moved it (package variables are set before any test runs).
var supInitialHome = os.Getenv("HOME")

// The job every supervisor starts: it fixes bug.txt and commits; verify
// checks the fix.
const (
	supFix    = "echo fixed > bug.txt && git add -A && git commit -qm fix"
	supVerify = "grep -qx fixed bug.txt"
	supPrompt = "Fix bug.txt through hub: start an exec job, wait for it, read its result, and report the head commit."
)

// supDialect is how one CLI names hub's MCP tools to its model.
type supDialect struct {
	cli string
	// name is the name the model calls for hub tool base; namespace is
	// the Responses namespace the call must carry ("" for none).
	name      func(base string) string
	namespace string
}

var (
	supClaude   = supDialect{cli: "claude", name: func(b string) string { return "mcp__hub__" + b }}
	supCodex    = supDialect{cli: "codex", name: func(b string) string { return b }, namespace: "mcp__hub"}
	supOpenCode = supDialect{cli: "opencode", name: func(b string) string { return "hub_" + b }}
	supGemini   = supDialect{cli: "gemini", name: func(b string) string { return "mcp_hub_" + b }}
	supQwen     = supDialect{cli: "qwen", name: func(b string) string { return "mcp__hub__" + b }}
)

// offers reports whether r offers hub tool base under the dialect's name.
func (d supDialect) offers(r *scripted.Request, base string) bool {
	name := d.name(base)
	if d.namespace != "" {
		return r.Namespaces[name] == d.namespace
	}
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// base maps a call the model made back to hub's tool name, "" when the call
// is not to a hub tool.
func (d supDialect) base(c scripted.ToolCall) string {
	for _, b := range []string{"start", "wait", "result"} {
		if c.Name == d.name(b) && (d.namespace == "" || c.Namespace == d.namespace || c.Namespace == "") {
			return b
		}
	}
	return ""
}

func (d supDialect) call(base, id string, args any) scripted.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return scripted.ToolCall{ID: id, Name: d.name(base), Namespace: d.namespace, Args: b}
}

// supStep is a hub tool call found in a request's history with its result.
type supStep struct {
	tool    string // start, wait or result
	callID  string
	result  string
	isError bool
}

// supSteps lists the hub tool calls of r's history that have a result, in
// order.
func supSteps(d supDialect, r *scripted.Request) []supStep {
	calls := map[string]string{}
	var steps []supStep
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if b := d.base(c); b != "" {
				calls[c.ID] = b
			}
		}
		for _, res := range m.ToolResults {
			if b, ok := calls[res.CallID]; ok {
				steps = append(steps, supStep{tool: b, callID: res.CallID, result: res.Content, isError: res.IsError})
			}
		}
	}
	return steps
}

var (
	supBranchRe = regexp.MustCompile(`hub/([0-9a-z]{8})\b`)
	supIDRe     = regexp.MustCompile(`\bid\\?"\s*:\s*\\?"([0-9a-z]{8})\\?"`)
	supHeadRe   = regexp.MustCompile(`\bhead\\?"\s*:\s*\\?"([0-9a-f]{40})\\?"`)
	supDoneRe   = regexp.MustCompile(`DONE head=([0-9a-f]{40})`)
	// supTimedOut matches a wait that timed out: "timeout · cursor N" in
	// the text, "done":false in the structured result.
	supTimedOut = regexp.MustCompile(`timeout · cursor|\bdone\\?"\s*:\s*false`)
)

// supJobID finds the job id in a start result: the branch hub/<id> in the
// text, else an "id" field of the structured result.
func supJobID(s string) string {
	if m := supBranchRe.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	if m := supIDRe.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// supResponder plays the supervisor's model: start → wait → result → the
// final text. Requests without hub's tools (OpenCode's title request, any
// side request) get a short text. It is a pure function of the request, so
// retries and side requests cannot derail it.
func supResponder(d supDialect, repo string) scripted.Responder {
	return func(r *scripted.Request) (scripted.Turn, bool) {
		if !d.offers(r, "start") {
			if len(r.Tools) == 0 {
				return scripted.Turn{Text: "Fix bug through hub"}, true // a title, or a side question
			}
			return scripted.Turn{Text: fmt.Sprintf("FAILED: hub's tools are not offered; tools %v, namespaces %v", r.Tools, r.Namespaces)}, true
		}
		steps := supSteps(d, r)
		n := len(steps)
		callID := func(tool string) string { // unique within the conversation
			prefix := "call_"
			if r.Wire == scripted.WireMessages {
				prefix = "toolu_"
			}
			return fmt.Sprintf("%s%s_%d", prefix, tool, n+1)
		}
		if n == 0 {
			return scripted.Turn{Text: "Starting the job.", ToolCalls: []scripted.ToolCall{d.call("start", callID("start"), map[string]any{
				"task": "make bug.txt say fixed", "repo": repo, "engine": "exec", "exec": supFix, "verify": supVerify,
			})}}, true
		}
		last := steps[n-1]
		if last.isError {
			return scripted.Turn{Text: fmt.Sprintf("FAILED: %s returned an error: %s", last.tool, last.result)}, true
		}
		var id string
		for _, s := range steps {
			if s.tool == "start" {
				id = supJobID(s.result)
			}
		}
		if id == "" {
			return scripted.Turn{Text: "FAILED: no job id in the start result: " + steps[0].result}, true
		}
		switch last.tool {
		case "start":
			return scripted.Turn{ToolCalls: []scripted.ToolCall{d.call("wait", callID("wait"), map[string]any{"ids": []string{id}, "timeout_s": 30})}}, true
		case "wait":
			if supTimedOut.MatchString(last.result) && n < 6 { // wait again
				return scripted.Turn{ToolCalls: []scripted.ToolCall{d.call("wait", callID("wait"), map[string]any{"ids": []string{id}, "timeout_s": 30})}}, true
			}
			return scripted.Turn{ToolCalls: []scripted.ToolCall{d.call("result", callID("result"), map[string]any{"id": id, "evidence": true})}}, true
		default:
			m := supHeadRe.FindStringSubmatch(last.result)
			if m == nil {
				return scripted.Turn{Text: "FAILED: no head in the result: " + last.result}, true
			}
			return scripted.Turn{Text: fmt.Sprintf("Job %s is done. DONE head=%s", id, m[1])}, true
		}
	}
}

// supModel is a scripted server answering with the supervisor responder.
func supModel(t *testing.T, d supDialect, repo string) *scripted.Server {
	t.Helper()
	srv := scripted.New(&scripted.Options{Logf: t.Logf})
	srv.SetResponder("", supResponder(d, repo))
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// supFixture is one supervisor test: a world, a repo, the model.
type supFixture struct {
	t        *testing.T
	w        *world
	d        supDialect
	repo     string
	userHead string
	srv      *scripted.Server
	scratch  string // the CLI's own HOME and config
}

func newSupFixture(t *testing.T, d supDialect) *supFixture {
	t.Helper()
	w := newWorld(t)
	f := &supFixture{t: t, w: w, d: d, repo: sampleRepo(t, "repo")}
	f.userHead = hubtest.Git(t, f.repo, "rev-parse", "HEAD")
	f.srv = supModel(t, d, f.repo)
	f.scratch = filepath.Join(t.TempDir(), "home-"+d.cli)
	for _, dir := range []string{"", ".config", ".local/share", ".local/state", ".cache"} {
		if err := os.MkdirAll(filepath.Join(f.scratch, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.logRequests()
		}
	})
	return f
}

// logRequests writes what the model was asked, in short, to the test log.
func (f *supFixture) logRequests() {
	for i, r := range f.srv.Requests() {
		var b strings.Builder
		fmt.Fprintf(&b, "model request %d: %s %q, %d tools, %d messages", i+1, r.Wire, r.Model, len(r.Tools), len(r.Messages))
		for _, m := range r.Messages {
			switch {
			case len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					fmt.Fprintf(&b, "\n  %s calls %s %s (ns %q, id %s)", m.Role, c.Name, supTail(string(c.Args), 300), c.Namespace, c.ID)
				}
			case len(m.ToolResults) > 0:
				for _, res := range m.ToolResults {
					fmt.Fprintf(&b, "\n  result of %s (error %v): %s", res.CallID, res.IsError, supTail(res.Content, 300))
				}
			default:
				fmt.Fprintf(&b, "\n  %s: %s", m.Role, supTail(m.Text, 200))
			}
		}
		f.t.Log(b.String())
	}
}

// hubEnv is the environment `hub mcp` gets from the CLI's MCP config: the
// world's HUB_HOME, HOME, XDG dirs, git identity and PATH.
func (f *supFixture) hubEnv() map[string]string {
	keep := map[string]bool{"HUB_HOME": true, "HOME": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "PATH": true,
		"GIT_CONFIG_NOSYSTEM": true, "GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true}
	env := map[string]string{}
	for _, kv := range f.w.env.Vars {
		k, v, _ := strings.Cut(kv, "=")
		if keep[k] && v != "" {
			env[k] = v
		}
	}
	return env
}

// baseEnv is the CLI's minimal environment: PATH (node and git), HOME and the
// XDG dirs in its scratch home, TERM=dumb.
func (f *supFixture) baseEnv() []string {
	var dirs []string
	for _, bin := range []string{"node", "git"} {
		if p, err := exec.LookPath(bin); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	dirs = append(dirs, "/usr/local/bin", "/usr/bin", "/bin")
	return []string{
		"PATH=" + strings.Join(dirs, ":"),
		"HOME=" + f.scratch,
		"TERM=dumb",
		"XDG_CONFIG_HOME=" + filepath.Join(f.scratch, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(f.scratch, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(f.scratch, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(f.scratch, ".cache"),
	}
}

// install runs `hub install --client <client> --yes` as the user would, with
// the CLI's HOME and the world's hub locations (which the entry pins), and
// env on top (a variable that moves the client's folder).
func (f *supFixture) install(client string, env ...string) {
	f.t.Helper()
	cmd := exec.Command(f.w.bin, "install", "--client", client, "--yes")
	cmd.Env = append(append(append([]string{}, f.w.env.Vars...), "HOME="+f.scratch), env...)
	cmd.Dir = f.scratch
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("hub install --client %s: %v\n%s", client, err, out)
	}
	f.t.Logf("hub install --client %s:\n%s", client, out)
}

func (f *supFixture) writeFile(name string, body []byte) string {
	f.t.Helper()
	p := filepath.Join(f.scratch, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// supRun is one finished CLI run.
type supRun struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// run runs the CLI in the repo with stdin from /dev/null, its output in
// files (a daemon that inherits them cannot hold Wait up), in its own
// process group, killed at timeout; whatever it left in that group is
// killed when it returns. Its output is logged if the test fails.
func (f *supFixture) run(timeout time.Duration, env []string, bin string, args ...string) supRun {
	t := f.t
	t.Helper()
	outPath, errPath := filepath.Join(f.scratch, "cli.stdout"), filepath.Join(f.scratch, "cli.stderr")
	stdout, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = f.repo
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", f.d.cli, err)
	}
	pgid := cmd.Process.Pid
	timer := time.AfterFunc(timeout, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	timedOut := !timer.Stop()
	syscall.Kill(-pgid, syscall.SIGKILL) // stragglers of this run only
	stdout.Close()
	stderr.Close()
	r := supRun{elapsed: time.Since(t0)}
	ob, _ := os.ReadFile(outPath)
	eb, _ := os.ReadFile(errPath)
	r.stdout, r.stderr = string(ob), string(eb)
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", f.d.cli, err)
	}
	t.Logf("%s ran %s, exit %d", f.d.cli, r.elapsed.Round(10*time.Millisecond), r.code)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s stdout ---\n%s", f.d.cli, supTail(r.stdout, 48<<10))
			t.Logf("--- %s stderr ---\n%s", f.d.cli, supTail(r.stderr, 16<<10))
		}
	})
	if timedOut {
		t.Fatalf("%s did not finish within %s", f.d.cli, timeout)
	}
	return r
}

func supTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// supJSONLines decodes each line of s that is a JSON object.
func supJSONLines(s string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// supStr walks m along keys and returns the string found, "" when none.
func supStr(m map[string]any, keys ...string) string {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

// check asserts what every supervisor run must leave: the model saw the
// results of start, wait and result (none an error); exactly one job, which
// succeeded with the fix on its branch; the final text names the branch's
// head; the user's checkout untouched. It returns the job id.
func (f *supFixture) check(final string) string {
	t := f.t
	t.Helper()
	var id string
	seen := map[string]bool{}
	reqs := f.srv.Requests()
	for i, r := range reqs {
		if i == len(reqs)-1 {
			for _, s := range supSteps(f.d, &r) {
				t.Logf("%s result the model saw: %s", s.tool, supTail(s.result, 300))
			}
		}
		for _, s := range supSteps(f.d, &r) {
			if s.isError {
				t.Errorf("the model saw %s fail: %s", s.tool, s.result)
			}
			seen[s.tool] = true
			if s.tool == "start" && id == "" {
				id = supJobID(s.result)
			}
		}
	}
	for _, tool := range []string{"start", "wait", "result"} {
		if !seen[tool] {
			t.Errorf("the model never saw the result of %s", tool)
		}
	}
	if id == "" {
		t.Fatalf("no job id in any start result the model saw; final text %q", final)
	}
	ctx := hubtest.Deadline(t, 20*time.Second)
	c := f.w.connect(ctx)
	list := hubtest.Daemon(t, c).JobList(ctx, protocol.ListParams{})
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id {
		t.Errorf("jobs in the hub: %+v, want just %s", list.Jobs, id)
	}
	st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: id})
	if st.State != protocol.StateSucceeded || st.VerifyExit == nil || *st.VerifyExit != 0 || st.Engine != "exec" {
		t.Errorf("job %s: %+v", id, st)
	}
	head := hubtest.Git(t, f.repo, "rev-parse", "hub/"+id)
	if got := hubtest.Git(t, f.repo, "show", "hub/"+id+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on hub/%s is %q", id, got)
	}
	if st.Head != "" && st.Head != head {
		t.Errorf("job head %s, branch at %s", st.Head, head)
	}
	m := supDoneRe.FindStringSubmatch(final)
	if m == nil || m[1] != head {
		t.Errorf("final text %q, want DONE head=%s", final, head)
	}
	if s := hubtest.Git(t, f.repo, "status", "--porcelain"); s != "" {
		t.Errorf("the user's checkout is not clean:\n%s", s)
	}
	if h := hubtest.Git(t, f.repo, "rev-parse", "HEAD"); h != f.userHead {
		t.Errorf("the user's HEAD moved from %s to %s", f.userHead, h)
	}
	f.checkHubHome()
	return id
}

// checkHubHome asserts that `hub mcp` ran in the world's HUB_HOME, which the
// CLI's MCP config passed on, and not in a default one under the CLI's own
// home.
func (f *supFixture) checkHubHome() {
	f.t.Helper()
	if _, err := os.Stat(f.w.paths.DB()); err != nil {
		f.t.Errorf("the world's HUB_HOME has no store: %v", err)
	}
	stray := filepath.Join(f.scratch, ".local", "share", "hub")
	if _, err := os.Stat(stray); err == nil {
		f.t.Errorf("hub made a HUB_HOME in the CLI's home: %s", stray)
	}
}

// realHomes are the real user's homes: from the password database, and
// the HOME the test process started with when that differs.
func realHomes() []string {
	var homes []string
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		homes = append(homes, u.HomeDir)
	}
	if supInitialHome != "" && (len(homes) == 0 || filepath.Clean(supInitialHome) != filepath.Clean(homes[0])) {
		homes = append(homes, supInitialHome)
	}
	return homes
}

// supHomePaths are where the CLIs, and hub itself, keep state in a home.
var supHomePaths = []string{".claude.json", ".claude", ".codex", ".config/opencode", ".local/share/opencode",
	".local/state/opencode", ".cache/opencode", ".cache/claude-cli-nodejs", ".gemini", ".qwen", ".config/hub", ".local/share/hub"}

// supHomeState records, for each path under home that the CLIs write, every
// entry below it with its kind, size and mtime; a missing path is absent.
func supHomeState(home string) map[string]string {
	st := map[string]string{}
	for _, rel := range supHomePaths {
		root := filepath.Join(home, rel)
		filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if p == root && os.IsNotExist(err) {
					return nil
				}
				st[p] = "error: " + err.Error()
				return nil
			}
			fi, err := de.Info()
			if err != nil {
				st[p] = "error: " + err.Error()
				return nil
			}
			st[p] = fmt.Sprintf("%s %d %s", fi.Mode(), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
			if len(st) > 20000 {
				return fs.SkipAll
			}
			return nil
		})
	}
	return st
}

// supHomeDiff lists the entries that appeared, vanished or changed.
func supHomeDiff(before, after map[string]string) []string {
	var d []string
	for p, a := range after {
		switch b, ok := before[p]; {
		case !ok:
			d = append(d, "appeared: "+p+" ("+a+")")
		case a != b:
			d = append(d, "changed: "+p+" ("+b+" → "+a+")")
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			d = append(d, "vanished: "+p)
		}
	}
	return d
}

// supLines is s with every line indented, for logs.
func supLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
