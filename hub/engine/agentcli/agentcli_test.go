//go:build unix

package agentcli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The base is tested with a stand-in CLI: a shell script that prints a JSON
// event stream, parsed by a small parser of the same shape as the real ones.

// parse reads {"t":"session|say|cmd|usage|cost|final|fail","v":…,"code":…}.
func parse(line []byte, ev agentcli.Events) bool {
	var e struct {
		T    string
		V    string
		Code *int
		In   int
		Out  int
		USD  float64
	}
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	switch e.T {
	case "session":
		ev.Session(e.V)
	case "say":
		ev.Said(e.V)
	case "cmd":
		ev.Command(e.V, e.Code, time.Time{})
	case "usage":
		ev.Usage(model.Usage{Input: e.In, Output: e.Out})
	case "cost":
		ev.Cost(e.USD)
	case "final":
		ev.Final(e.V)
	case "fail":
		ev.Failed(e.V)
	default:
		return false
	}
	return true
}

// run starts script as the CLI and waits for its outcome.
func run(t *testing.T, script string, mb *hubtest.Mailbox, mod func(*agentcli.Invocation)) (engine.Outcome, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "fake-cli")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	var log hubtest.Buffer
	spec := engine.Spec{JobID: "j", Dir: dir, Output: &log, Mailbox: mb, Scratch: t.TempDir()}
	inv := agentcli.Invocation{Path: path, Env: []string{"PATH=" + os.Getenv("PATH")}, Parse: parse, Model: "priced",
		Price: func(string) (model.Price, bool) {
			return model.Price{InputPerM: 1_000_000, OutputPerM: 2_000_000}, true
		}, Describe: "fake-cli"}
	if mod != nil {
		mod(&inv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := agentcli.Start(ctx, spec, inv)
	if err != nil {
		t.Fatal(err)
	}
	return r.Wait(), log.String()
}

func TestStreamRead(t *testing.T) {
	mb := &hubtest.Mailbox{}
	o, log := run(t, `
echo '{"t":"session","v":"s1"}'
echo '{"t":"say","v":"looking around"}'
echo 'not json at all'
echo '{"t":"mystery","v":"a new kind of event"}'
echo '{"t":"cmd","v":"go test ./...","code":0}'
echo '{"t":"usage","in":1000,"out":100}'
echo '{"t":"usage","in":2000,"out":200}'
echo 'a line on stderr' >&2
echo '{"t":"final","v":"all done"}'
`, mb, nil)
	if o.ExitCode != 0 || o.Summary != "all done" || o.Failure != "" {
		t.Fatalf("outcome %+v", o)
	}
	if !o.CostKnown || o.CostMicros != 3000+600 || o.Tokens != 3300 || o.Calls != 2 {
		t.Errorf("cost %d known %v tokens %d calls %d", o.CostMicros, o.CostKnown, o.Tokens, o.Calls)
	}
	if len(o.Observed) != 1 || o.Observed[0].Command != "go test ./..." || *o.Observed[0].ExitCode != 0 {
		t.Errorf("observed %+v", o.Observed)
	}
	for _, want := range []string{"[event] not json at all", `[event] {"t":"mystery"`, "a line on stderr", "[command] exit 0: go test ./..."} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if notes, spent := mb.Notes(), mb.Costs(); len(notes) != 1 || notes[0] != "looking around" || len(spent) != 2 || spent[1].USD != 0.0036 {
		t.Errorf("mailbox: notes %q, spent %+v", notes, spent)
	}
}

func TestCLIsOwnCostWins(t *testing.T) {
	o, _ := run(t, `
echo '{"t":"usage","in":1000,"out":100}'
echo '{"t":"cost","usd":0.0421}'
echo '{"t":"final","v":"done"}'
`, &hubtest.Mailbox{}, nil)
	if !o.CostKnown || o.CostMicros != 42100 {
		t.Errorf("cost %d known %v, want the CLI's $0.0421", o.CostMicros, o.CostKnown)
	}
}

func TestUnpricedTokensAreUnknown(t *testing.T) {
	o, _ := run(t, `
echo '{"t":"usage","in":1000,"out":100}'
echo '{"t":"final","v":"done"}'
`, &hubtest.Mailbox{}, func(inv *agentcli.Invocation) {
		inv.Price = func(string) (model.Price, bool) { return model.Price{}, false }
	})
	if o.CostKnown {
		t.Errorf("an unpriced model's tokens gave a known cost: %+v", o)
	}
}

func TestEndings(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		code         int
		failure      string
	}{
		{"no final answer", `echo '{"t":"say","v":"working"}'`, 1, "without a final answer"},
		{"reported failure, exit 0", `echo '{"t":"fail","v":"max turns"}'`, 1, "max turns"},
		{"exit 3", `echo '{"t":"final","v":"x"}'; exit 3`, 3, ""},
		{"killed", `kill -9 $$`, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := run(t, tc.script, &hubtest.Mailbox{}, nil)
			if o.ExitCode != tc.code || !strings.Contains(o.Failure, tc.failure) {
				t.Errorf("outcome %+v", o)
			}
		})
	}
}

// TestResumeWithSteering: steering the CLI never took is delivered by
// resuming its session, with the steering as the prompt.
func TestResumeWithSteering(t *testing.T) {
	mb := &hubtest.Mailbox{}
	mb.Steer("use tabs")
	var resumed []string
	o, log := run(t, `
if [ "$1" = resume ]; then
  echo '{"t":"final","v":"'"resumed $2 with: $(echo "$3" | head -2 | tail -1)"'"}'
else
  echo '{"t":"session","v":"s9"}'
  echo '{"t":"final","v":"first pass"}'
fi
`, mb, func(inv *agentcli.Invocation) {
		inv.Resume = func(session, prompt string) []string {
			resumed = append(resumed, session)
			return []string{"resume", session, prompt}
		}
	})
	if len(resumed) != 1 || o.Summary != "resumed s9 with: use tabs" || o.ExitCode != 0 {
		t.Fatalf("outcome %+v, resumed %v\n%s", o, resumed, log)
	}
	if !strings.Contains(log, "resuming session s9") {
		t.Errorf("log:\n%s", log)
	}
}

func TestStopKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := filepath.Join(dir, "fake-cli")
	script := "#!/bin/sh\necho '{\"t\":\"session\",\"v\":\"s\"}'\nsleep 60 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	mb := &hubtest.Mailbox{}
	mb.Steer("never delivered")
	inv := agentcli.Invocation{Path: path, Env: []string{"PATH=" + os.Getenv("PATH")}, Parse: parse,
		Resume: func(string, string) []string { t.Error("a stopped run was resumed"); return nil }}
	r, err := agentcli.Start(context.Background(), engine.Spec{Dir: dir, Mailbox: mb, Scratch: dir}, inv)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var pid int
	for time.Now().Before(deadline) { // the child's pid file is the only sign it started
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			if _, err := fmtSscan(string(b), &pid); err == nil {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the fake CLI's child never started")
	}
	t0 := time.Now()
	r.Stop(time.Second)
	o := r.Wait()
	if time.Since(t0) > 5*time.Second || o.Signal == "" {
		t.Errorf("stop took %s, outcome %+v", time.Since(t0), o)
	}
	if alive(pid) {
		t.Errorf("the CLI's child %d outlived Stop", pid)
	}
}

func fmtSscan(s string, pid *int) (int, error) { return fmt.Sscan(strings.TrimSpace(s), pid) }

// alive reports whether pid is a live process (a zombie waiting for its
// reaper is not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestExitWithBackgroundChild: a CLI that exits while a child it left
// holds its stdout, stderr and stdin (with a prompt it never read, bigger
// than a pipe holds) ends the run at once: the outcome is the CLI's exit,
// its whole stream is read, and the child is gone.
func TestExitWithBackgroundChild(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := filepath.Join(dir, "fake-cli")
	script := "#!/bin/sh\nexec 3<&0\nsleep 1000 0<&3 &\necho $! > " + pidFile + "\necho '{\"t\":\"final\",\"v\":\"done\"}'\necho 'a line on stderr' >&2\nexit 0\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var log hubtest.Buffer
	inv := agentcli.Invocation{Path: path, Env: []string{"PATH=" + os.Getenv("PATH")}, Parse: parse,
		Stdin: strings.Repeat("a prompt nobody reads\n", 10000), Describe: "fake-cli"}
	t0 := time.Now()
	r, err := agentcli.Start(context.Background(), engine.Spec{Dir: dir, Output: &log, Scratch: t.TempDir()}, inv)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	t.Cleanup(func() {
		if child > 0 && alive(child) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	})
	done := make(chan engine.Outcome, 1)
	go func() { done <- r.Wait() }()
	var o engine.Outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		if b, err := os.ReadFile(pidFile); err == nil {
			_, _ = fmtSscan(string(b), &child)
		}
		t.Fatal("the run waited on the CLI's background child")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the run took %s", d)
	}
	if o.ExitCode != 0 || o.Signal != "" || o.Err != nil || o.Summary != "done" {
		t.Errorf("outcome %+v", o)
	}
	if ls, ok := r.(interface{ LeaderStart() uint64 }); !ok || ls.LeaderStart() == 0 {
		t.Error("the run has no leader start time")
	}
	if !strings.Contains(log.String(), "a line on stderr") {
		t.Errorf("log lacks the CLI's stderr:\n%s", log.String())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmtSscan(string(b), &child); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(child) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // not our child: nothing to wait on
	}
	if alive(child) {
		t.Errorf("the CLI's background child %d outlived the run", child)
	}
}

// TestVersionProbeStaysOut: `--version` runs in a throwaway home, also as
// its working directory, so a program that starts instead of answering
// writes nothing where the caller stands, and nothing into the real HOME.
func TestVersionProbeStaysOut(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("HUB_HOME", filepath.Join(home, "hub"))
	here := t.TempDir()
	t.Chdir(here)
	bin := filepath.Join(t.TempDir(), "agent")
	script := "#!/bin/sh\necho started > started.txt\necho state > \"$HOME/state.txt\"\necho \"agent 1.2.3\"\necho second line\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := agentcli.Version(context.Background(), bin)
	if err != nil || v != "agent 1.2.3" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	for _, p := range []string{filepath.Join(here, "started.txt"), filepath.Join(home, "state.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the probe wrote %s", p)
		}
	}
}

// The recorder makes each tool call and command it is told of a trace
// entry: a tool call as reported (no end), a command with its exit code,
// failed when non-zero, and its duration when the CLI said when it started.
func TestRecorderTraces(t *testing.T) {
	mb := &hubtest.Mailbox{}
	rc := agentcli.NewRecorder(t.Context(), engine.Spec{Mailbox: mb}, agentcli.Pricing{})
	before := time.Now()
	rc.Tool("Read", `{"file_path":"a.go"}`)
	one, zero := 1, 0
	rc.Command("go test ./...", &one, before.Add(-1500*time.Millisecond))
	rc.Command("ls", &zero, time.Time{})
	rc.Command("kill -9 $$", nil, time.Time{})
	got := mb.Traced()
	if len(got) != 4 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	ids := map[string]bool{}
	for _, e := range got {
		ids[e.ID] = true
		if e.Start.IsZero() || e.Parent != "" {
			t.Errorf("entry %+v", e)
		}
	}
	if len(ids) != 4 {
		t.Errorf("ids are not unique: %v", ids)
	}
	if e := got[0]; e.Kind != protocol.TraceTool || e.Name != "Read" || e.Args != `{"file_path":"a.go"}` || e.DurationUS != 0 {
		t.Errorf("tool entry %+v", e)
	}
	if e := got[1]; e.Kind != protocol.TraceCommand || e.Name != "go test ./..." || *e.ExitCode != 1 || !e.Failed ||
		e.DurationUS < 1_500_000 || e.DurationUS > 60_000_000 || !e.Start.Equal(before.Add(-1500*time.Millisecond)) {
		t.Errorf("timed command entry %+v", e)
	}
	if e := got[2]; e.Failed || e.DurationUS != 0 || *e.ExitCode != 0 {
		t.Errorf("untimed command entry %+v", e)
	}
	if e := got[3]; e.Failed || e.ExitCode != nil {
		t.Errorf("a command without an exit code is not known to have failed: %+v", e)
	}
	o := rc.Outcome(nil, nil, false)
	if len(o.Observed) != 3 || o.Observed[0].DurationMS < 1500 {
		t.Errorf("observed %+v", o.Observed)
	}
}
