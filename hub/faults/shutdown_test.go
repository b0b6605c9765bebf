//go:build linux

package faults

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// TestShutdown: SIGTERM of the daemon with two jobs running. Their shims
// carry on: one finishes while no daemon runs, the other after a new daemon
// re-attached to it; both end whole, and the new daemon reports both.
func TestShutdown(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		shutdownCase(t)
	}
}

func shutdownCase(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	w.makeRepo(filepath.Join(w.dir, "repo"))
	w.startDaemon(ctx)
	jobs := map[string]string{} // gate → id
	for _, g := range []string{"a", "b"} {
		jobs[g] = w.start(ctx, protocol.StartParams{Task: "sigterm " + g,
			Exec:   `echo "before ` + g + `" > before.txt; hub progress parked; ` + w.gateCmd(g) + `; echo "after ` + g + `" > after.txt`,
			Verify: "test -f after.txt"})
	}
	for _, id := range jobs {
		w.until(ctx, id, func(st protocol.JobStatus) bool { return st.Progress == "parked" })
	}
	w.killDaemon(ctx, syscall.SIGTERM)
	for _, id := range jobs {
		if rec := w.storeJob(ctx, id); !proc.Same(rec.ShimPID, rec.ShimStart) {
			t.Fatalf("the shim of %s did not outlive the daemon's shutdown", id)
		}
	}

	// a ends while no daemon runs: its shim writes the store itself.
	w.openGate("a")
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	for {
		j, err := st.Job(ctx, jobs["a"])
		if err != nil {
			t.Fatal(err)
		}
		if j.State.Terminal() {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job a did not end without a daemon: %s", j.State)
		case <-time.After(20 * time.Millisecond): // no daemon to tell us
		}
	}
	st.Close()

	// b ends under a new daemon, which re-attached to its shim.
	w.startDaemon(ctx)
	if s := w.status(ctx, jobs["b"]); s.State != protocol.StateRunning {
		t.Fatalf("the new daemon sees job b %s, want running", s.State)
	}
	w.openGate("b")
	ends := w.waitEnd(ctx, jobs["a"], jobs["b"])
	var done []work
	var endings []string
	for g, id := range jobs {
		done = append(done, work{id: id, files: map[string]string{"before.txt": "before " + g + "\n", "after.txt": "after " + g + "\n"}})
	}
	for _, e := range ends {
		if e.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", e.ID, e.State, e.Error)
		}
		endings = append(endings, w.ending(e))
	}
	f := w.checkAll(ctx, done...)
	report(t, outcome{Test: "TestShutdown", Fault: "SIGTERM of the daemon with two jobs running; one ends with no daemon up, one after a new daemon re-attached",
		Ends: endings, Figures: f, Took: time.Since(began)})
}
