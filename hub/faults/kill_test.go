//go:build linux

package faults

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestKill is the kill matrix: kill -9 of the daemon, the job's shim, or the
// process hub started for the step, with the job held still at each step of
// its life.
func TestKill(t *testing.T) {
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			for _, step := range steps {
				t.Run(step, func(t *testing.T) {
					for i := 0; i < repeat(t); i++ {
						killCase(t, target, step)
					}
				})
			}
		})
	}
}

// killWorker is the worker every kill case runs: it writes before.txt, may
// park (running) or ask (needs_input), then writes late.park (whose staging
// parks when committing) and after.txt. Verify parks when verifying.
func killWorker(w *world, step, tag string) (exec, verify string) {
	exec = fmt.Sprintf(`echo "before %s" > before.txt; `, tag)
	switch step {
	case "running":
		exec += w.parkCmd("running") + "; "
	case "needs_input":
		exec += `ans=$(hub ask "which greeting?") || exit 9; echo "$ans" > answer.txt; `
	}
	exec += fmt.Sprintf(`echo "late %s" > late.park; echo "after %s" > after.txt`, tag, tag)
	verify = "test -f after.txt"
	if step == "verifying" {
		verify = w.parkCmd("verifying") + " && " + verify
	}
	return exec, verify
}

func killCase(t *testing.T, target, step string) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	w.makeRepo(filepath.Join(w.dir, "repo"))
	w.startDaemon(ctx)
	tag := target + "-" + step
	switch step {
	case "preparing":
		w.park("preparing", "seed.park")
	case "committing":
		w.park("committing", "late.park")
	case "running", "verifying", "setting_up":
		w.park(step, "")
	}
	exec, verify := killWorker(w, step, tag)
	p := protocol.StartParams{Task: "fault " + tag, Exec: exec, Verify: verify}
	if step == "setting_up" {
		p.Setup = w.parkCmd("setting_up") // the job's setup command, before the worker
	}
	id := w.start(ctx, p)

	// Hold the job at the step and find what to kill.
	var parkedPID int
	if step == "needs_input" {
		w.until(ctx, id, func(st protocol.JobStatus) bool { return st.State == protocol.StateNeedsInput })
	} else {
		parkedPID = w.parked(ctx, step)
	}
	rec := w.storeJob(ctx, id)
	wantState := map[string]protocol.State{"preparing": protocol.StatePreparing, "setting_up": protocol.StatePreparing, "running": protocol.StateRunning,
		"needs_input": protocol.StateNeedsInput, "committing": protocol.StateRunning, "verifying": protocol.StateVerifying}[step]
	if rec.State != wantState {
		t.Fatalf("held at %s, the job is %s", step, rec.State)
	}

	// What the worker wrote before the fault.
	written := map[string]string{}
	switch step {
	case "running", "needs_input":
		written["before.txt"] = "before " + tag + "\n"
	case "committing", "verifying":
		written["before.txt"] = "before " + tag + "\n"
		written["late.park"] = "late " + tag + "\n"
		written["after.txt"] = "after " + tag + "\n"
	}

	switch target {
	case "daemon":
		w.killDaemon(ctx, syscall.SIGKILL)
		w.open()
		w.startDaemon(ctx)
		if step == "needs_input" {
			st := w.status(ctx, id)
			if st.Question == nil {
				t.Fatalf("after the daemon's restart the question is gone: %+v", st)
			}
			hubtest.Daemon(t, w.c).JobReply(ctx, protocol.ReplyParams{ID: id, Text: "hello"})
		}
	case "shim":
		if rec.ShimPID == 0 {
			t.Fatalf("no shim recorded: %+v", rec)
		}
		if err := syscall.Kill(rec.ShimPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// What was parked stays parked: whatever the dead shim left running
		// must be stopped by hub, or it is counted as an orphan.
	case "child":
		pid := rec.EnginePGID // needs_input: the worker, waiting on hub ask
		if step != "needs_input" {
			pid = pgidOf(t, parkedPID) // the leader of the parked process's group: what hub started
		}
		if pid <= 1 {
			t.Fatalf("no process to kill at %s", step)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.open()
	}
	end := w.waitEnd(ctx, id)[0]
	if target == "daemon" {
		// Nothing happened to the job itself: it must finish whole.
		if end.State != protocol.StateSucceeded {
			t.Errorf("after kill -9 of the daemon at %s the job ended %s: %s", step, end.State, end.Error)
		}
		written["before.txt"] = "before " + tag + "\n"
		written["late.park"] = "late " + tag + "\n"
		written["after.txt"] = "after " + tag + "\n"
		if step == "needs_input" {
			written["answer.txt"] = "hello\n"
		}
	}
	f := w.checkAll(ctx, work{id: id, files: written})
	report(t, outcome{Test: "TestKill", Fault: target, Step: step, Ends: []string{w.ending(end)}, Figures: f, Took: time.Since(began)})
}

// ending is how a job ended, with the case's folder and the job's id taken
// out so runs compare.
func (w *world) ending(st protocol.JobStatus) string {
	max := 160
	if strings.Contains(st.Error, "space") {
		max = 400 // the full-disk case: down to what git said
	}
	s := ending(st, max)
	s = strings.ReplaceAll(s, w.dir, "…")
	return strings.ReplaceAll(s, st.ID, "<id>")
}
