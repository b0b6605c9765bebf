package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/agent/oauth/oauthtest"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/demo"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// Device-flow logins end to end: the real daemon runs the flow against a
// scripted login server on loopback (oauthtest, standing in for GitHub and
// auth.openai.com), the real CLI and `hub mcp` show the code, and a
// logged-in profile drives the built-in worker against the scripted model.

// loginWorld is a world with a login server and a copilot profile "cp" on it.
type loginWorld struct {
	*world
	login *oauthtest.Server
}

func newLoginWorld(t *testing.T, srv *oauthtest.Server) *loginWorld {
	t.Helper()
	w := newWorld(t)
	s, err := oauthtest.StartWith(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := profile.Store{Dir: w.hubConfigDir()}
	if err := st.Set(profile.Profile{Name: "cp", Provider: profile.Copilot, Model: "gpt-4.1", LoginURL: s.URL()}); err != nil {
		t.Fatal(err)
	}
	return &loginWorld{world: w, login: s}
}

// hubRun runs the hub binary in the world's environment.
func (w *world) hubRun(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Env = w.env.Vars
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("hub %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// cliLogin is `hub profile login NAME` running in the background.
type cliLogin struct {
	cmd      *exec.Cmd
	out      bytes.Buffer // everything after the code
	stderr   bytes.Buffer
	code     string
	shown    string // stdout up to and including the code
	exitCode int
}

var userCodeRe = regexp.MustCompile(`\b[A-Z]{4}-[A-Z]{4}\b`)

// startCLILogin runs hub profile login and reads its output until the code shows.
func (w *world) startCLILogin(ctx context.Context, name string) *cliLogin {
	w.t.Helper()
	l := &cliLogin{cmd: exec.CommandContext(ctx, w.bin, "profile", "login", name)}
	l.cmd.Env = w.env.Vars
	l.cmd.Stderr = &l.stderr
	pipe, err := l.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	rd := bufio.NewReader(pipe)
	var shown strings.Builder
	for l.code == "" {
		line, err := rd.ReadString('\n')
		shown.WriteString(line)
		if err != nil {
			l.cmd.Wait()
			w.t.Fatalf("hub profile login ended before showing a code: %q, stderr %q", shown.String(), l.stderr.String())
		}
		l.code = userCodeRe.FindString(line)
	}
	l.shown = shown.String()
	go io.Copy(&l.out, rd)
	return l
}

// wait waits for the login command to end and returns its exit code.
func (l *cliLogin) wait(t *testing.T) int {
	t.Helper()
	err := l.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		l.exitCode = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return l.exitCode
}

// secrets are every device code and token the login server issued.
func (lw *loginWorld) secrets() []string {
	out := append(lw.login.DeviceCodes(), lw.login.GitHubTokens()...)
	out = append(out, lw.login.CopilotTokens()...)
	return append(out, lw.login.AccessTokens()...)
}

func (lw *loginWorld) noSecrets(what, text string) {
	lw.t.Helper()
	for _, s := range lw.secrets() {
		if strings.Contains(text, s) {
			lw.t.Fatalf("%s holds a device code or token the login server issued: %q", what, text)
		}
	}
}

// TestBuiltinCopilotLoginRunsDemo is the whole path: `hub profile login`
// shows the address and code, the user approves after two polls, the
// daemon stores the tokens (0600); `hub provider status` and `hub profile
// list` show the login and no token; the demo delegation then runs on the
// logged-in profile against the scripted model playing the demo script. The
// Copilot tokens are always due for refresh, so the worker fetches a fresh
// one before its model calls (stored, 0600), and every model request
// carries a Copilot token, never the GitHub token.
func TestBuiltinCopilotLoginRunsDemo(t *testing.T) {
	ctx := hubtest.Deadline(t, 120*time.Second)
	model := demoModel(t)
	// Each Copilot token lives 30 s: always within the minute before its
	// expiry, when the worker fetches a new one.
	lw := newLoginWorld(t, &oauthtest.Server{APIBase: model.URL() + "/v1", CopilotTTL: 30 * time.Second})
	lw.login.Auto = func(poll int) string {
		if poll >= 3 {
			return oauthtest.Approve
		}
		return oauthtest.Pending
	}
	c := lw.connect(ctx)

	l := lw.startCLILogin(ctx, "cp")
	if !strings.Contains(l.shown, lw.login.URL()+"/login/device") {
		t.Fatalf("the login did not show the verification address: %q", l.shown)
	}
	if code := l.wait(t); code != 0 {
		t.Fatalf("hub profile login exited %d: %s %s", code, l.out.String(), l.stderr.String())
	}
	if !strings.Contains(l.out.String(), "profile cp is logged in to GitHub Copilot") {
		t.Fatalf("after the login: %q", l.out.String())
	}
	lw.noSecrets("hub profile login's output", l.shown+l.out.String()+l.stderr.String())
	tokPath := filepath.Join(lw.hubConfigDir(), "logins", "cp.json")
	fi, err := os.Stat(tokPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	loginToken := lw.login.CopilotTokens()[0]
	ghToken := lw.login.GitHubTokens()[0]

	out, errOut, code := lw.hubRun("provider", "status", "cp")
	if code != 0 || !strings.Contains(out, "logged in to GitHub Copilot") {
		t.Fatalf("provider status exited %d: %q %q", code, out, errOut)
	}
	lw.noSecrets("provider status", out+errOut)
	out, _, _ = lw.hubRun("--json", "profile", "list")
	lw.noSecrets("profile list", out)
	if !strings.Contains(out, `"key": "login"`) {
		t.Fatalf("profile list does not show the login: %s", out)
	}

	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "demo"), demo.Files)
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: demo.Task, Repo: repo,
		Engine: "builtin", Profile: "cp", Verify: demo.Verify, DefinitionOfDone: demo.DefinitionOfDone})
	b := &builtinWorld{world: lw.world, c: c}
	st := b.waitEnd(ctx, r.ID)
	if st.State != protocol.StateSucceeded {
		t.Fatalf("the demo job on the logged-in profile ended %s: %+v", st.State, st)
	}
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	issued := lw.login.CopilotTokens()
	for i, rq := range reqs {
		bearer := strings.TrimPrefix(rq.Header.Get("Authorization"), "Bearer ")
		switch {
		case bearer == ghToken || strings.Contains(rq.Header.Get("Authorization"), ghToken):
			t.Fatalf("model request %d carried the GitHub token", i)
		case bearer == loginToken:
			t.Fatalf("model request %d carried the token due for refresh, not a fresh one", i)
		case !contains(issued, bearer):
			t.Fatalf("model request %d carried %q, not a Copilot token the server issued", i, bearer)
		case rq.Header.Get("Copilot-Integration-Id") == "" || rq.Header.Get("Editor-Version") == "":
			t.Fatalf("model request %d lacks Copilot's editor headers: %v", i, rq.Header)
		}
	}
	var stored oauth.Tokens
	b2, _ := os.ReadFile(tokPath)
	if err := json.Unmarshal(b2, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.AccessToken == loginToken || !contains(issued, stored.AccessToken) {
		t.Fatal("the refreshed Copilot token was not stored")
	}
	if fi, _ := os.Stat(tokPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v after the refresh", fi.Mode().Perm())
	}
	// Nothing the job left for the supervisor names a token.
	rr := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true, Full: true})
	rb, _ := json.Marshal(rr)
	lw.noSecrets("the job's result", string(rb))
	eb, _ := json.Marshal(b.events(ctx, r.ID))
	lw.noSecrets("the job's journal", string(eb))
	// Nor does any file hub wrote, but the token file: logs, the store,
	// the job's records, the worktree.
	lw.env.Shutdown(t)
	for _, root := range []string{lw.env.Home, lw.hubConfigDir(), repo} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Dir(p) == filepath.Dir(tokPath) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				lw.noSecrets(p, string(b))
			}
			return nil
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestBuiltinLoginOutcomes: each way a CLI login can end gives a clean
// final state, a message saying what to do next, and the exit code: denied
// and expired exit 1; a second login of the same profile replaces the first
// (which exits 1 saying so) and succeeds; a key profile is refused; a
// profile never logged in is "needs login" in provider status.
func TestBuiltinLoginOutcomes(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	lw := newLoginWorld(t, &oauthtest.Server{ExpiresIn: time.Minute})
	lw.connect(ctx)

	out, _, code := lw.hubRun("provider", "status", "cp")
	if code != 1 || !strings.Contains(out, "not logged in: run `hub profile login cp`") {
		t.Fatalf("before any login, provider status exited %d: %q", code, out)
	}

	l := lw.startCLILogin(ctx, "cp")
	lw.login.Decide(l.code, oauthtest.Deny)
	if code := l.wait(t); code != 1 || !strings.Contains(l.stderr.String(), "denied") || !strings.Contains(l.stderr.String(), "hub profile login cp") {
		t.Fatalf("denied login exited %d: %q", code, l.stderr.String())
	}

	l = lw.startCLILogin(ctx, "cp")
	lw.login.Decide(l.code, oauthtest.Expire) // its life ends before anyone enters it
	if code := l.wait(t); code != 1 || !strings.Contains(l.stderr.String(), "expired") {
		t.Fatalf("expired login exited %d: %q", code, l.stderr.String())
	}

	first := lw.startCLILogin(ctx, "cp")
	second := lw.startCLILogin(ctx, "cp")
	if code := first.wait(t); code != 1 || !strings.Contains(first.stderr.String(), "replaced") {
		t.Fatalf("the replaced login exited %d: %q", code, first.stderr.String())
	}
	lw.login.Decide(first.code, oauthtest.Approve) // too late: that flow is over
	lw.login.Decide(second.code, oauthtest.Approve)
	if code := second.wait(t); code != 0 {
		t.Fatalf("the second login exited %d: %q", code, second.stderr.String())
	}
	if n := len(lw.login.GitHubTokens()); n != 1 {
		t.Fatalf("%d GitHub tokens were issued; only the second login's should have been fetched", n)
	}
	out, _, code = lw.hubRun("provider", "status", "cp")
	if code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("after the second login, provider status exited %d: %q", code, out)
	}
	lw.noSecrets("provider status", out)

	// The daemon stops while a login waits: the login ends at once, saying
	// so, and nothing is stored; the next daemon knows of no login under way.
	before, _ := os.ReadFile(filepath.Join(lw.hubConfigDir(), "logins", "cp.json"))
	l = lw.startCLILogin(ctx, "cp")
	start := time.Now()
	if out, errOut, code := lw.hubRun("shutdown"); code != 0 {
		t.Fatalf("shutdown exited %d: %s %s", code, out, errOut)
	}
	// Its wait reached the stopping daemon, or (sent after the stop) the next one.
	code = l.wait(t)
	said := l.stderr.String()
	if code != 1 || !strings.Contains(said, "hub profile login cp") ||
		!(strings.Contains(said, "the daemon stopped during the login") || strings.Contains(said, "the daemon may have restarted")) {
		t.Fatalf("a login cut by the daemon's stop exited %d: %q", code, l.stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stop took %v with a login waiting", d)
	}
	lw.login.Decide(l.code, oauthtest.Approve)
	after, _ := os.ReadFile(filepath.Join(lw.hubConfigDir(), "logins", "cp.json"))
	if !bytes.Equal(before, after) {
		t.Fatal("the cut login changed the stored tokens")
	}
	out, _, code = lw.hubRun("--json", "provider", "status", "cp")
	if code != 0 || strings.Contains(out, `"login": "pending"`) {
		t.Fatalf("after the restart, provider status exited %d: %s", code, out)
	}

	st := profile.Store{Dir: lw.hubConfigDir()}
	if err := st.Set(profile.Profile{Name: "keyed", Provider: profile.OpenAI, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := lw.hubRun("profile", "login", "keyed")
	if code == 0 || !strings.Contains(errOut, "does not log in") {
		t.Fatalf("login of a key profile exited %d: %q", code, errOut)
	}
}

// TestBuiltinMCPLogin: the MCP profiles tool's login shows the address and
// the code to the user by elicitation only; the tool's result (the model's
// context) holds neither, nor any token; status then says logged in. A
// client that cannot elicit is told to have the user run hub profile login,
// and no login starts.
func TestBuiltinMCPLogin(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	lw := newLoginWorld(t, &oauthtest.Server{})
	var asked []string
	cmd := exec.Command(lw.bin, "mcp")
	cmd.Env = lw.env.Vars
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-login", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			// The user enters the code in the browser, then accepts.
			lw.login.Decide(userCodeRe.FindString(req.Params.Message), oauthtest.Approve)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// Setting a login profile asks for no key; it says to log in.
	res := callTool(t, ctx, cs, "profiles", map[string]any{"action": "set", "name": "cp2", "provider": "copilot", "model": "gpt-4.1"})
	if len(asked) != 0 || !strings.Contains(contentText(res), "action=login name=cp2") {
		t.Fatalf("set of a copilot profile: asked %q, answered %q", asked, contentText(res))
	}
	res = callTool(t, ctx, cs, "profiles", map[string]any{"action": "login", "name": "cp"})
	if res.IsError || !strings.Contains(contentText(res), "logged in") {
		t.Fatalf("login: %q", contentText(res))
	}
	if len(asked) != 1 || !strings.Contains(asked[0], lw.login.URL()+"/login/device") || userCodeRe.FindString(asked[0]) == "" {
		t.Fatalf("the user was shown %q", asked)
	}
	code := userCodeRe.FindString(asked[0])
	rb, _ := json.Marshal(res)
	if strings.Contains(string(rb), code) || strings.Contains(string(rb), "/login/device") {
		t.Fatalf("the tool's result shows the code or the address: %s", rb)
	}
	lw.noSecrets("the tool's result", string(rb)+strings.Join(asked, " "))
	res = callTool(t, ctx, cs, "profiles", map[string]any{"action": "status", "name": "cp"})
	if !strings.Contains(contentText(res), "cp usable: logged in to GitHub Copilot") {
		t.Fatalf("status after the login: %q", contentText(res))
	}

	// A client without elicitation.
	cmd2 := exec.Command(lw.bin, "mcp")
	cmd2.Env = lw.env.Vars
	plain := mcp.NewClient(&mcp.Implementation{Name: "e2e-plain", Version: "v0"}, nil)
	cs2, err := plain.Connect(ctx, &mcp.CommandTransport{Command: cmd2}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs2.Close() })
	before := len(lw.login.DeviceCodes())
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "profiles", Arguments: map[string]any{"action": "login", "name": "cp"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(contentText(res), "hub profile login cp") {
		t.Fatalf("login without elicitation: %q", contentText(res))
	}
	if len(lw.login.DeviceCodes()) != before {
		t.Fatal("a login started that nobody could see the code of")
	}
}

// TestBuiltinChatGPTLoginRunsDemo: a chatgpt profile logged in by the
// device flow (user code, authorization code and PKCE verifier, token
// exchange) runs the demo through the Responses API client, each request
// carrying the ChatGPT access token and the account id from the id token.
func TestBuiltinChatGPTLoginRunsDemo(t *testing.T) {
	ctx := hubtest.Deadline(t, 120*time.Second)
	model := demoModel(t)
	lw := newLoginWorld(t, &oauthtest.Server{AccountID: "acct-e2e"})
	st := profile.Store{Dir: lw.hubConfigDir()}
	if err := st.Set(profile.Profile{Name: "cg", Provider: profile.ChatGPT, Model: "gpt-5-codex", LoginURL: lw.login.URL(), BaseURL: model.URL() + "/v1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetDefault("cg"); err != nil { // the engine is available when the default profile is
		t.Fatal(err)
	}
	lw.login.Auto = func(poll int) string { return oauthtest.Approve }
	c := lw.connect(ctx)
	l := lw.startCLILogin(ctx, "cg")
	if !strings.Contains(l.shown, lw.login.URL()+"/codex/device") {
		t.Fatalf("the login did not show the verification address: %q", l.shown)
	}
	if code := l.wait(t); code != 0 {
		t.Fatalf("hub profile login exited %d: %s %s", code, l.out.String(), l.stderr.String())
	}
	lw.noSecrets("hub profile login's output", l.shown+l.out.String()+l.stderr.String())
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "demo"), demo.Files)
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: demo.Task, Repo: repo,
		Engine: "builtin", Profile: "cg", Verify: demo.Verify, DefinitionOfDone: demo.DefinitionOfDone})
	b := &builtinWorld{world: lw.world, c: c}
	if st := b.waitEnd(ctx, r.ID); st.State != protocol.StateSucceeded {
		t.Fatalf("the demo job on the chatgpt profile ended %s: %+v", st.State, st)
	}
	access := lw.login.AccessTokens()
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	for i, rq := range reqs {
		if rq.Wire != scripted.WireResponses || rq.Header.Get("Authorization") != "Bearer "+access[len(access)-1] || rq.Header.Get("ChatGPT-Account-Id") != "acct-e2e" {
			t.Fatalf("model request %d: wire %s, account %q, carries the access token: %v", i, rq.Wire, rq.Header.Get("ChatGPT-Account-Id"),
				rq.Header.Get("Authorization") == "Bearer "+access[len(access)-1])
		}
	}
}

// demoModel is a scripted model server on loopback playing the demo's script.
func demoModel(t *testing.T) *scripted.Server {
	t.Helper()
	sc, err := demo.Script()
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(nil)
	if err := model.SetScript("", sc); err != nil {
		t.Fatal(err)
	}
	if err := model.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	return model
}
