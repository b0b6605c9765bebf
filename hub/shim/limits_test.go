//go:build linux

package shim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/store"
)

// TestLimitHitNotedOnceThenQuiet: a job whose commands hit its process cap
// gets one note of it, however many readers (the watch, a command's end,
// finish) see the hit, and once stopLimits returned nothing more reaches
// its journal — the job's ending stays its last event.
func TestLimitHitNotedOnceThenQuiet(t *testing.T) {
	if !limit.Probe().Processes.Cgroup {
		t.Fatal("this machine enforces no process cap for hub's jobs (hub engines says why); the test command's setup runs as root with cgroups")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("HUB_HOME", filepath.Join(home, "hub"))
	ctx := context.Background()
	st, err := store.Open(filepath.Join(home, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j := &store.Job{ID: "limited1", Kind: protocol.KindWrite, Engine: "exec", Task: "t"}
	if err := st.CreateJob(ctx, j, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	s := newShim(Options{Paths: config.Paths{Home: filepath.Join(home, "hub")}, Log: zerolog.Nop()}, st, j,
		NewNotifier(filepath.Join(home, "no-daemon.sock"), j.ID))
	s.red = redact.New()
	s.params = protocol.StartParams{Isolation: protocol.IsolationUntrusted, Limits: &protocol.Limits{Processes: 16}}
	s.startLimits(ctx, j.ID)
	if s.limits == nil {
		evs, _ := st.Events(ctx, []string{j.ID}, 0, 0)
		t.Fatalf("no group: %+v", evs)
	}
	t.Cleanup(s.stopLimits)
	// A shell in the group that starts more than its cap allows.
	cmd := exec.Command("sh", "-c", `read go; i=0; while [ $i -lt 24 ]; do sleep 30 & i=$((i+1)); done; wait`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, f := range s.limits.Plan().Procs {
		if err := os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = in.Write([]byte("go\n"))
	deadline := time.Now().Add(20 * time.Second)
	for s.limitHitText() == "" && time.Now().Before(deadline) {
		s.checkLimits(ctx) // beside the watch, as a command's end does
		time.Sleep(50 * time.Millisecond)
	}
	if s.limitHitText() == "" {
		t.Fatal("the group's process cap was never hit")
	}
	s.checkLimits(ctx)
	s.stopLimits()
	if _, err := st.AppendEvent(ctx, j.ID, protocol.EventState, string(protocol.StateFailed), nil, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * hitEvery) // a watch still running would write now
	evs, err := st.Events(ctx, []string{j.ID}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, ev := range evs {
		if ev.Kind == protocol.EventNote && strings.HasPrefix(ev.Text, "the job hit ") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("the hit was noted %d times, want once", notes)
	}
	if last := evs[len(evs)-1]; last.Kind != protocol.EventState || last.Text != string(protocol.StateFailed) {
		t.Errorf("the journal's last event is %s %q, after the job's ending", last.Kind, last.Text)
	}
}
