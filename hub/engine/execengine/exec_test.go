//go:build unix

package execengine

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
)

// start runs command as an exec worker in dir, its output into log.
func start(t *testing.T, dir, command string, log *hubtest.Buffer) engine.Run {
	t.Helper()
	spec := engine.Spec{JobID: "j", Dir: dir, Params: protocol.StartParams{Exec: command},
		Env: []string{"PATH=" + os.Getenv("PATH")}, Scratch: t.TempDir()}
	if log != nil {
		spec.Output = log
	}
	r, err := New().Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gone waits until pid, not the test's child, is no live process.
func gone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err := proc.StartTime(pid); err != nil {
			return true
		}
		time.Sleep(10 * time.Millisecond) // not our child: nothing to wait on
	}
	return false
}

// TestExitWithBackgroundChild: the worker exits 0 while a child it left
// holds its output: the outcome is its exit, soon, and no failure to run.
func TestExitWithBackgroundChild(t *testing.T) {
	dir := t.TempDir()
	var log hubtest.Buffer
	t0 := time.Now()
	r := start(t, dir, "echo hi; sleep 1000 & echo $! > pid", &log)
	pgid := r.PGID()
	o := r.Wait()
	// Not a timing target: the child sleeps 1000 s, and a Wait that waited
	// for it (or for its hold on the output) would take that long. A busy
	// CI machine once took 4 s here, past the old 2 s margin on outputDelay.
	if d := time.Since(t0); d > outputDelay+60*time.Second {
		t.Errorf("Wait took %s: it waited on the child the worker left", d)
	}
	if o.ExitCode != 0 || o.Err != nil || o.Signal != "" || o.Summary != "hi" {
		t.Errorf("outcome %+v", o)
	}
	if !strings.Contains(log.String(), "hi\n") {
		t.Errorf("log %q", log.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proc.StartTime(child); err != nil {
		t.Fatal("the background child is gone already: the test proves nothing")
	}
	// What the shim does next: end the rest of the group, by the leader's
	// start time read before the worker was reaped.
	ls, ok := r.(interface{ LeaderStart() uint64 })
	if !ok || ls.LeaderStart() == 0 {
		t.Fatal("the run has no leader start time")
	}
	if left := proc.EndLeftovers(proc.LeftoverOptions{PGID: pgid, LeaderStart: ls.LeaderStart(), Grace: time.Second}); left != nil {
		t.Errorf("leftovers %+v; the child dies on the group's SIGTERM", left)
	}
	if !gone(child) {
		t.Errorf("the background child %d is alive", child)
	}
}

func TestEndings(t *testing.T) {
	for _, tc := range []struct {
		name, command, signal string
		code                  int
	}{
		{"exit 3", "echo x; exit 3", "", 3},
		{"killed", "kill -9 $$", "killed", -1},
		{"killed, a child holding the output", "sleep 1000 & kill -9 $$", "killed", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, t.TempDir(), tc.command, nil)
			pgid := r.PGID()
			o := r.Wait()
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if o.ExitCode != tc.code || o.Signal != tc.signal || o.Err != nil {
				t.Errorf("outcome %+v", o)
			}
		})
	}
}

func TestStop(t *testing.T) {
	r := start(t, t.TempDir(), "sleep 1000", nil)
	t0 := time.Now()
	r.Stop(time.Second)
	o := r.Wait()
	if o.Signal != "terminated" || o.ExitCode != -1 || o.Err != nil {
		t.Errorf("outcome %+v", o)
	}
	// Not a timing target either: a Stop that did not end it would wait out
	// the 1000 s sleep.
	if d := time.Since(t0); d > 60*time.Second {
		t.Errorf("Stop took %s: the worker was not ended", d)
	}
}
