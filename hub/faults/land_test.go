//go:build linux

package faults

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestKillLanding: kill -9 of the daemon while a landing checks the commit
// the target would get (a rebase, its scratch worktree made and gone by
// then): the target has not moved, the job is not marked landed, nothing of
// the landing stays registered in the repository, and a new daemon lands
// the job whole, checked again.
func TestKillLanding(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		killLanding(t)
	}
}

func killLanding(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	repo := w.makeRepo(filepath.Join(w.dir, "repo"))
	w.startDaemon(ctx)
	id := w.start(ctx, protocol.StartParams{Task: "fault landing", Exec: `echo "landed" > landed.txt`, Verify: "test -f landed.txt"})
	end := w.waitEnd(ctx, id)[0]
	if end.State != protocol.StateSucceeded {
		t.Fatalf("the job to land ended %s: %s", end.State, end.Error)
	}
	from := w.git(repo, "rev-parse", "main")

	w.park("landing", "")
	c := w.c
	done := make(chan error, 1)
	go func() {
		_, err := c.Daemon().JobLand(ctx, protocol.LandParams{IDs: []string{id}, Mode: protocol.LandRebase,
			Verify: w.parkCmd("landing")})
		done <- err
	}()
	w.parked(ctx, "landing")
	w.killDaemon(ctx, syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatal("a landing whose daemon was killed answered as if it was done")
	}
	w.open()

	if tip := w.git(repo, "rev-parse", "main"); tip != from {
		t.Errorf("main moved to %s under a landing killed before its check ended", tip)
	}
	if wt := w.git(repo, "worktree", "list", "--porcelain"); strings.Contains(wt, ".land") || strings.Contains(wt, ".verify") {
		t.Errorf("the landing left a worktree registered:\n%s", wt)
	}
	w.startDaemon(ctx)
	if st := w.status(ctx, id); st.Landed != nil {
		t.Errorf("the job is marked landed: %+v", st.Landed)
	}
	res := hubtest.Daemon(t, w.c).JobLand(ctx, protocol.LandParams{IDs: []string{id}, Mode: protocol.LandRebase})
	if len(res.Jobs) != 1 || res.Jobs[0].Outcome != protocol.LandLanded || res.Jobs[0].Verify == nil || res.Jobs[0].Verify.ExitCode != 0 {
		t.Fatalf("landing again: %+v", res)
	}
	if got := w.git(repo, "show", "main:landed.txt"); got != "landed" {
		t.Errorf("main:landed.txt is %q", got)
	}
	f := w.checkAll(ctx, work{id: id, files: map[string]string{"landed.txt": "landed\n"}})
	report(t, outcome{Test: "TestKillLanding", Fault: "daemon", Step: "landing", Ends: []string{w.ending(end)}, Figures: f, Took: time.Since(began)})
}
