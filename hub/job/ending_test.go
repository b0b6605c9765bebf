package job

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// TestClose: every way a job ends leaves the same record — the state and
// its category, the evidence with base..head's files, the ending's error and
// cost, the reservation closed once — whether the caller brought evidence
// of its own or not.
func TestClose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
		"GIT_COMMITTER_EMAIL": "t@localhost", "GIT_CONFIG_NOSYSTEM": "1", "HOME": dir} {
		t.Setenv(k, v)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	base := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "-b", "hub/j1")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-q", "-am", "salvage")
	head := git(t, repo, "rev-parse", "HEAD")

	st, err := store.Open(filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"j1", "j2"} {
		j := &store.Job{ID: id, Kind: protocol.KindWrite, Engine: "claude", Repo: repo, BaseSHA: base, Branch: "hub/" + id,
			Task: "t", MaxMicros: micros.FromUSD(2), Notes: []string{NoteDirty}}
		if err := st.CreateJob(ctx, j, now); err != nil {
			t.Fatal(err)
		}
	}
	if adm, err := st.Admit(ctx, "j1", store.Limits{MaxRunning: 4, MonthlyCap: micros.FromUSD(100)}, now); err != nil || !adm.Admitted {
		t.Fatalf("admit: %+v %v", adm, err)
	}

	// A settled job: evidence from the record and git, cost unknown.
	j1, _ := st.Job(ctx, "j1")
	closed, err := Close(ctx, st, j1, End{State: protocol.StateFailed, Reason: "the shim died", Head: head, Salvaged: true}, now.Add(time.Minute))
	if err != nil || !closed {
		t.Fatalf("Close = %v, %v", closed, err)
	}
	j1, _ = st.Job(ctx, "j1")
	var ev protocol.Evidence
	if err := json.Unmarshal(j1.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if j1.State != protocol.StateFailed || j1.Category != protocol.CategoryWorker || j1.Error != "the shim died" || j1.HeadSHA != head {
		t.Errorf("record: %s %q %q head %s", j1.State, j1.Category, j1.Error, j1.HeadSHA)
	}
	if ev.State != protocol.StateFailed || ev.Category != protocol.CategoryWorker || ev.Error != "the shim died" || !ev.Salvaged ||
		ev.Head != head || len(ev.Files) != 1 || ev.Files[0].Path != "a.txt" || len(ev.Commits) != 1 || !ev.Observed.UserCheckoutDirty {
		t.Errorf("evidence: %+v", ev)
	}
	if ev.Cost.Known || ev.Cost.USD != 2 || ev.Cost.ReservedUSD != 2 || j1.CostMicros != micros.FromUSD(2) {
		t.Errorf("an unknown cost charges the reservation: evidence %+v, record %d", ev.Cost, j1.CostMicros)
	}
	if ev.Timings.TotalMS != 60_000 || ev.Timings.QueuedMS != 0 || ev.Timings.PreparingMS != 60_000 {
		t.Errorf("timings %+v", ev.Timings)
	}
	if row, err := st.Ledger(ctx, "j1"); err != nil || !row.Closed || row.ChargedMicros != micros.FromUSD(2) {
		t.Errorf("ledger %+v, %v", row, err)
	}
	// Closing again changes nothing.
	if _, err := Close(ctx, st, j1, End{State: protocol.StateCancelled}, now.Add(2*time.Minute)); !errors.Is(err, store.ErrWrongState) {
		t.Errorf("a second Close: %v", err)
	}

	// A queued job stopped: no reservation, evidence with nothing changed,
	// the caller's evidence kept and completed.
	j2, _ := st.Job(ctx, "j2")
	mine := Evidence(ctx, j2, base)
	mine.Claimed.Report = "never ran"
	if _, err := Close(ctx, st, j2, End{State: protocol.StateCancelled, Reason: "stopped before it started", Head: base, CostKnown: true, Evidence: mine}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	j2, _ = st.Job(ctx, "j2")
	ev = protocol.Evidence{}
	if err := json.Unmarshal(j2.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.State != protocol.StateCancelled || ev.Category != protocol.CategoryStopped || ev.Claimed.Report != "never ran" ||
		len(ev.Files) != 0 || !ev.Cost.Known || ev.Cost.USD != 0 || j2.Summary != "never ran" {
		t.Errorf("stopped job's evidence %+v, summary %q", ev, j2.Summary)
	}
	if _, err := st.Ledger(ctx, "j2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a job never admitted has a reservation: %v", err)
	}
}
