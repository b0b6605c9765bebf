//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// gated is an exec worker that reports progress, then waits for a gate file,
// then commits its work.
func gated(gate, file string) string {
	return `hub progress "waiting for the gate"; while [ ! -f '` + gate + `' ]; do sleep 0.05; done; ` +
		`echo done > ` + file + ` && git add -A && git commit -q -m "work ` + file + `" && echo "wrote ` + file + `"`
}

// TestDaemonKill9: kill -9 of the daemon while two jobs run; a new daemon
// picks them up and both finish with whole results.
func TestDaemonKill9(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	repo := sampleRepo(t, "repo")
	gate := filepath.Join(t.TempDir(), "gate")
	c := w.connect(ctx)
	var ids []string
	for _, f := range []string{"one.txt", "two.txt"} {
		r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
			Task: "write " + f, Repo: repo, Engine: "exec", Exec: gated(gate, f), Verify: "test -f " + f})
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		w.until(ctx, id, func(st protocol.JobStatus) bool { return st.Progress == "waiting for the gate" })
	}
	if err := syscall.Kill(c.Info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.DisconnectNotify()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c2 := w.connect(ctx) // starts a new daemon
	if c2.Info.PID == c.Info.PID {
		t.Fatal("the old daemon still answers")
	}
	wr := hubtest.Daemon(t, c2).JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 60})
	if !wr.Done {
		t.Fatalf("jobs did not end: %+v", wr)
	}
	for i, st := range wr.Jobs {
		if st.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", st.ID, st.State, st.Error)
		}
		rr := hubtest.Daemon(t, c2).JobResult(ctx, protocol.ResultParams{ID: st.ID, Evidence: true})
		if rr.Evidence == nil || len(rr.Evidence.Files) != 1 || rr.Evidence.Verify == nil || rr.Evidence.Verify.ExitCode != 0 {
			t.Errorf("job %s: evidence not whole: %+v", st.ID, rr.Evidence)
		}
		if got := hubtest.Git(t, repo, "show", "hub/"+st.ID+":"+[]string{"one.txt", "two.txt"}[i]); got != "done" {
			t.Errorf("branch of %s lacks the work: %q", st.ID, got)
		}
	}
	checkLedger(t, w)
}

// TestShimKill9: kill -9 of a job's shim ends the job failed, with its
// partial work committed as salvage and the worker's processes gone.
func TestShimKill9(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	repo := sampleRepo(t, "repo")
	c := w.connect(ctx)
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
		Task: "half a job", Repo: repo, Engine: "exec",
		Exec: `echo partial > work.txt; hub progress "wrote work.txt"; sleep 300`})
	w.until(ctx, r.ID, func(st protocol.JobStatus) bool { return st.Progress == "wrote work.txt" })

	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Job(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ShimPID == 0 || rec.EnginePGID == 0 {
		t.Fatalf("no shim or engine pid recorded: %+v", rec)
	}
	if err := syscall.Kill(rec.ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	if end.State != protocol.StateFailed || !end.Salvaged || !strings.Contains(end.Error, "shim") {
		t.Fatalf("after kill -9 of the shim: %+v", end)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":work.txt"); got != "partial" {
		t.Errorf("salvage commit lacks the partial work: %q", got)
	}
	subject := hubtest.Git(t, repo, "log", "-1", "--format=%s%n%b", "hub/"+r.ID)
	if !strings.Contains(subject, "Hub-Salvage: true") {
		t.Errorf("salvage commit not marked:\n%s", subject)
	}
	// The worker's sleep must be gone with its group.
	if proc.GroupAlive(rec.EnginePGID) {
		t.Errorf("the worker's process group %d is still alive", rec.EnginePGID)
	}
	checkLedger(t, w)
}

// checkLedger asserts every reservation is closed once and no invariant broke.
func checkLedger(t *testing.T, w *world) {
	t.Helper()
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad, err := st.CheckInvariants(hubtest.Deadline(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("ledger invariant: %s", b)
	}
}

// TestDaemonDiedBeforeSpawn: a daemon killed after it admitted a job but
// before it made the job's folder or spawned its shim. The next daemon
// starts the job on its reservation and slot, instead of leaving it
// preparing for ever (CI caught this: the recovery took the missing folder
// for a lock error and passed the job by).
func TestDaemonDiedBeforeSpawn(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	repo := sampleRepo(t, "repo")
	base := hubtest.Git(t, repo, "rev-parse", "HEAD")
	zero := 0.0
	spec, _ := store.EncodeSpec(protocol.StartParams{Task: "t", Repo: repo, Base: "HEAD", Kind: protocol.KindWrite, Engine: "exec",
		Exec: "echo admitted > admitted.txt", Verify: "test -f admitted.txt", Isolation: protocol.IsolationWorktree, MaxUSD: &zero,
		TimeoutS: 60, VerifyTimeoutS: 60, AskTimeoutS: 60, StallTimeoutS: 60})
	if err := w.paths.Ensure(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	const id = "adm1tted"
	now := time.Now().UTC()
	if err := st.CreateJob(ctx, &store.Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Isolation: protocol.IsolationWorktree,
		Repo: repo, BaseRef: "HEAD", BaseSHA: base, Branch: "hub/" + id, Task: "t", Spec: spec}, now); err != nil {
		t.Fatal(err)
	}
	if adm, err := st.Admit(ctx, id, store.Limits{MaxRunning: 4, MonthlyCap: 100_000_000}, now); err != nil || !adm.Admitted {
		t.Fatalf("admit: %+v %v", adm, err)
	}
	st.Close()
	if _, err := os.Stat(w.paths.JobDir(id)); !os.IsNotExist(err) {
		t.Fatalf("the job's folder exists before any daemon ran: %v", err)
	}

	c := w.connect(ctx) // a daemon starts and recovers
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{id}, TimeoutS: 30})
	if !wr.Done || wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("the admitted job did not run: %+v", wr)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+id+":admitted.txt"); got != "admitted" {
		t.Errorf("admitted.txt on the branch: %q", got)
	}
	checkLedger(t, w)
}
