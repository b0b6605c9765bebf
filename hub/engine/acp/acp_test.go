package acp

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("HUB_ACP_FAKE"); mode != "" {
		runFake(mode)
	}
	os.Exit(m.Run())
}

func ignoreTerm() { signal.Ignore(syscall.SIGTERM) }

// fakeRun is one run of the scripted agent in mode, in a fresh worktree.
type fakeRun struct {
	dir, out string
	log      *hubtest.Buffer
	mb       *hubtest.Mailbox
	run      engine.Run
}

func startFake(t *testing.T, mode string, kind protocol.Kind, timeout time.Duration) *fakeRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_ACP_TEST_AGENT", self)
	f := &fakeRun{dir: t.TempDir(), out: t.TempDir(), log: &hubtest.Buffer{}, mb: &hubtest.Mailbox{}}
	if err := os.WriteFile(filepath.Join(f.dir, "bug.txt"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := New("fake", Agent{Program: agentcli.Program{Binary: "fake-acp", PathEnv: "HUB_ACP_TEST_AGENT", Product: "the fake agent", Install: "nothing"}},
		Options{ConfigDir: t.TempDir(), StartTimeout: timeout})
	spec := engine.Spec{JobID: "j1", Dir: f.dir, Params: protocol.StartParams{Task: "fix bug.txt", Kind: kind}, Scratch: t.TempDir(),
		HubBinary: "/usr/bin/true", Env: []string{"PATH=" + os.Getenv("PATH"), "HUB_ACP_FAKE=" + mode, "FAKE_OUT=" + f.out, "HUB_JOB=j1", "HUB_SOCKET=/nowhere"},
		Output: f.log, Mailbox: f.mb}
	f.run, err = e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.run.Stop(time.Second) })
	return f
}

// wait waits for the run's outcome, and checks nothing of it is left.
func (f *fakeRun) wait(t *testing.T, bound time.Duration) engine.Outcome {
	t.Helper()
	done := make(chan engine.Outcome, 1)
	go func() { done <- f.run.Wait() }()
	select {
	case o := <-done:
		if proc.GroupAlive(f.run.PGID()) {
			t.Errorf("the agent's process group %d outlived the run", f.run.PGID())
		}
		return o
	case <-time.After(bound):
		t.Fatalf("the run did not end within %s; log:\n%s", bound, f.log.String())
	}
	return engine.Outcome{}
}

func (f *fakeRun) read(t *testing.T, name string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.out, name))
	return string(b)
}

// The agent edits in its worktree with hub's leave, runs a command, and
// ends its turn: the run is clean, with what the agent said as its summary,
// the command as observed, its tokens, its plan as progress, and an update
// hub does not know logged, not fatal. Its session was opened in the
// worktree with hub's worker MCP server.
func TestEditRun(t *testing.T) {
	f := startFake(t, "edit", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 30*time.Second)
	log := f.log.String()
	if o.ExitCode != 0 || o.Failure != "" || o.Err != nil {
		t.Fatalf("outcome %+v\n%s", o, log)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "bug.txt")); string(b) != "fixed\n" {
		t.Errorf("bug.txt: %q (permission answer %s)", b, f.read(t, "permissions"))
	}
	if o.Summary != "Fixed bug.txt; checked with grep." {
		t.Errorf("summary %q", o.Summary)
	}
	if o.Tokens != 1050 || o.Calls != 1 {
		t.Errorf("tokens %d calls %d", o.Tokens, o.Calls)
	}
	if len(o.Observed) != 1 || o.Observed[0].Command != "grep -qx fixed bug.txt" || o.Observed[0].ExitCode == nil || *o.Observed[0].ExitCode != 0 {
		t.Errorf("observed %+v", o.Observed)
	}
	for _, want := range []string{"[tool] edit (Edit bug.txt)", "[command] exit 0: grep -qx fixed bug.txt", "an update hub does not know: some_future_update", "[plan] plan (0/1 done): fix bug.txt"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if notes := strings.Join(f.mb.Notes(), "\n"); !strings.Contains(notes, "Looking at bug.txt") || !strings.Contains(notes, "Fixed bug.txt; checked with grep.") {
		t.Errorf("progress notes: %q", notes)
	}
	sn := f.read(t, "session-new")
	if !strings.Contains(sn, `"cwd":"`+f.dir+`"`) || !strings.Contains(sn, `"args":["worker-mcp"],"command":"/usr/bin/true"`) || !strings.Contains(sn, `"name":"HUB_JOB","value":"j1"`) {
		t.Errorf("session/new params: %s", sn)
	}
	if p := f.read(t, "prompts"); !strings.Contains(p, "fix bug.txt") || !strings.Contains(p, "ask_supervisor") {
		t.Errorf("prompt: %s", p)
	}
}

// An agent that never answers initialize is ended after the start timeout,
// with that reason.
func TestNeverInitializes(t *testing.T) {
	f := startFake(t, "silent", protocol.KindWrite, time.Second)
	o := f.wait(t, 20*time.Second)
	if o.ExitCode == 0 || !strings.Contains(o.Failure, "did not answer initialize within 1s") {
		t.Errorf("outcome %+v", o)
	}
}

// An agent that crashes mid-turn: the run failed with its exit, and what it
// wrote is there to salvage.
func TestCrashMidTurn(t *testing.T) {
	f := startFake(t, "crash", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 20*time.Second)
	if o.ExitCode != 3 || !strings.Contains(o.Failure, "exited during its turn (exit code 3)") {
		t.Errorf("outcome %+v\n%s", o, f.log.String())
	}
	if _, err := os.Stat(filepath.Join(f.dir, "half.txt")); err != nil {
		t.Errorf("the agent's work is gone: %v", err)
	}
}

// An agent that floods updates is stopped with that reason, in bounded
// time, its group gone.
func TestFlood(t *testing.T) {
	f := startFake(t, "flood", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 60*time.Second)
	if o.ExitCode == 0 || !strings.Contains(o.Failure, "flood: the agent sent") {
		t.Errorf("outcome %+v\n%s", o, f.log.String())
	}
}

// One message over the bound is a flood too.
func TestLongLine(t *testing.T) {
	f := startFake(t, "longline", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 30*time.Second)
	if o.ExitCode == 0 || !strings.Contains(o.Failure, "a message over 8 MiB") {
		t.Errorf("outcome %+v\n%s", o, f.log.String())
	}
}

// Writes outside the worktree are refused, by absolute path, by "..", and
// through a symbolic link that points out; a read outside is allowed and
// said; a fetch is refused. Each refusal is a note with the reason.
func TestPermissionPolicy(t *testing.T) {
	f := startFake(t, "outside", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 30*time.Second)
	if o.ExitCode != 0 {
		t.Fatalf("outcome %+v\n%s", o, f.log.String())
	}
	got := strings.Split(strings.TrimSpace(f.read(t, "permissions")), "\n")
	want := []string{"reject", "reject", "reject", "allow", "reject"}
	if len(got) != len(want) {
		t.Fatalf("answers %q", got)
	}
	for i := range want {
		if !strings.Contains(got[i], `"optionId":"`+want[i]+`"`) {
			t.Errorf("answer %d: %s, want %s", i, got[i], want[i])
		}
	}
	notes := strings.Join(f.mb.Notes(), "\n")
	for _, w := range []string{"refused the agent's Write ../escape.txt: it names ../escape.txt, outside the job's worktree",
		"refused the agent's Write link/escape.txt", "allowed the agent's Read /etc/hostname: a read outside the job's worktree",
		"refused the agent's Fetch: workers do not fetch from the web"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

// A read job's agent may not edit, even in its worktree.
func TestReadJobEdits(t *testing.T) {
	f := startFake(t, "edit", protocol.KindRead, 10*time.Second)
	f.wait(t, 30*time.Second)
	if p := f.read(t, "permissions"); !strings.Contains(p, `"optionId":"reject"`) {
		t.Errorf("answer %s", p)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "bug.txt")); string(b) != "broken\n" {
		t.Errorf("bug.txt changed: %q", b)
	}
	if n := strings.Join(f.mb.Notes(), "\n"); !strings.Contains(n, "a read job changes no file") {
		t.Errorf("notes %s", n)
	}
}

// Steering queued while the agent works cancels its turn and is delivered
// in the next one.
func TestSteerCancelsAndContinues(t *testing.T) {
	f := startFake(t, "steer", protocol.KindWrite, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	f.mb.Steer("use the other approach")
	o := f.wait(t, 30*time.Second)
	if o.ExitCode != 0 || o.Summary != "Took the steering." {
		t.Fatalf("outcome %+v\n%s", o, f.log.String())
	}
	if f.read(t, "cancel") == "" {
		t.Error("no session/cancel was sent")
	}
	prompts := strings.Split(strings.TrimSpace(f.read(t, "prompts")), "\n")
	if len(prompts) != 2 || !strings.Contains(prompts[1], "STEERING from your supervisor") || !strings.Contains(prompts[1], "use the other approach") {
		t.Errorf("prompts %q", prompts)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "steered.txt")); err != nil {
		t.Error(err)
	}
}

// Stop ends an agent that ignores session/cancel and SIGTERM: its whole
// group is gone when Stop returns, its work left where it was.
func TestStopStubborn(t *testing.T) {
	f := startFake(t, "stubborn", protocol.KindWrite, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(f.dir, "half.txt")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never started its turn:\n%s", f.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	f.run.Stop(2 * time.Second)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %s", d)
	}
	if proc.GroupAlive(f.run.PGID()) {
		t.Error("the group survived Stop")
	}
	o := f.run.Wait()
	if o.ExitCode == 0 && o.Signal == "" {
		t.Errorf("a stopped run ended clean: %+v", o)
	}
	if f.read(t, "cancel") == "" {
		t.Error("Stop sent no session/cancel")
	}
}

// A refusal ends the run as failed, in words.
func TestRefusal(t *testing.T) {
	f := startFake(t, "refuse", protocol.KindWrite, 10*time.Second)
	o := f.wait(t, 20*time.Second)
	if o.ExitCode == 0 || o.Failure != "the agent refused to go on with the task" {
		t.Errorf("outcome %+v", o)
	}
	// It said nothing of its tokens: its cost is not known.
	if o.CostKnown {
		t.Errorf("an unmetered run's cost is known: %+v", o)
	}
}

// An agent of config.json: its variables take the profile's key, endpoint
// and model; a missing command is refused with the install line; it is not
// asked its version, and gets worktree only.
func TestFromConfig(t *testing.T) {
	a := FromConfig("kimi", config.Agent{Command: "/nonexistent/kimi", Args: []string{"acp"}, Provider: "openai",
		Env: map[string]string{"K": "{key}", "U": "{base_url}/x", "M": "{model}", "PLAIN": "1"}, Install: "uv tool install kimi-cli"})
	got := a.Env(Profile{Key: "sk-1", BaseURL: "http://h", Model: "m1"})
	if want := []string{"K=sk-1", "M=m1", "PLAIN=1", "U=http://h/x"}; !slices.Equal(got, want) {
		t.Errorf("env %q, want %q", got, want)
	}
	e := New("kimi", a, Options{ConfigDir: t.TempDir()})
	err := e.Check(protocol.StartParams{Task: "x"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kimi is not on PATH") || !strings.Contains(err.Error(), "uv tool install kimi-cli") {
		t.Errorf("missing command: %v", err)
	}
	if av := e.Probe(context.Background()); av.Available || !strings.Contains(av.Reason, "uv tool install kimi-cli") {
		t.Errorf("probe: %+v", av)
	}
	if c := e.Capabilities(); !slices.Equal(c.Isolation, []protocol.Isolation{protocol.IsolationWorktree}) || c.IsolationWhyNot[protocol.IsolationIsolated] == "" {
		t.Errorf("capabilities %+v", c)
	}
	// An agent without a provider takes no profile.
	own := New("copilot", FromConfig("copilot", config.Agent{Command: "/usr/bin/true", Pays: "subscription"}), Options{ConfigDir: t.TempDir()})
	if p := own.Capabilities().Pays; p != protocol.PaysSubscription {
		t.Errorf("pays %s", p)
	}
	if p := e.Capabilities().Pays; p != protocol.PaysAPI {
		t.Errorf("pays by default: %s", p)
	}
	if err := own.Check(protocol.StartParams{Task: "x", Profile: "p"}); err == nil || !strings.Contains(err.Error(), "takes no profile") {
		t.Errorf("a profile for an agent with its own login: %v", err)
	}
	if err := own.Check(protocol.StartParams{Task: "x"}); err != nil {
		t.Errorf("no profile: %v", err)
	}
	if av := own.Probe(context.Background()); !av.Available {
		t.Errorf("probe of /usr/bin/true: %+v", av)
	}
}

// An agent that exits at once fails saying so, in whatever order its exit
// and its closed output reach hub.
func TestExitsAtOnce(t *testing.T) {
	for i := 0; i < 5; i++ {
		e := New("false", FromConfig("false", config.Agent{Command: "/bin/false"}), Options{ConfigDir: t.TempDir(), StartTimeout: 10 * time.Second})
		log := &hubtest.Buffer{}
		r, err := e.Start(context.Background(), engine.Spec{JobID: "j", Dir: t.TempDir(), Params: protocol.StartParams{Task: "x"}, Scratch: t.TempDir(),
			Env: []string{"PATH=" + os.Getenv("PATH")}, Output: log})
		if err != nil {
			t.Fatal(err)
		}
		o := r.Wait()
		if o.ExitCode != 1 || o.Failure != "the agent exited during initialize (exit code 1)" {
			t.Fatalf("outcome %+v\n%s", o, log.String())
		}
	}
}
