package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestHubMovesAreNotAlerts: while one job runs, hub makes another job's
// branch, commits it and lands it on main. The running job's status,
// result and evidence name none of that: hub's own moves are not the
// worker's, and blaming every running job for them would bury the alerts
// that matter. A ref someone else moves meanwhile is still named.
func TestHubMovesAreNotAlerts(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	hubtest.Git(t, repo, "branch", "feature")
	gate := filepath.Join(t.TempDir(), "go")
	slow := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "slow", Repo: repo,
		Engine: "exec", Exec: "while [ ! -e " + gate + " ]; do sleep 0.1; done; echo slow > slow.txt"})
	w.until(ctx, slow.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateRunning })
	quick := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "quick", Repo: repo,
		Engine: "exec", Exec: "echo quick > quick.txt", Verify: "test -s quick.txt"})
	if st := w.until(ctx, quick.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() }); st.State != protocol.StateSucceeded {
		t.Fatalf("quick: %s %s", st.State, st.Error)
	}
	land := hubtest.Daemon(t, c).JobLand(ctx, protocol.LandParams{IDs: []string{quick.ID}})
	if len(land.Jobs) != 1 || land.Jobs[0].Outcome != protocol.LandLanded {
		t.Fatalf("land: %+v", land)
	}
	// Someone else moves a branch of the user's while the slow job runs.
	hubtest.Git(t, repo, "branch", "-f", "feature", "main")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	end := w.until(ctx, slow.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	if end.State != protocol.StateSucceeded {
		t.Fatalf("slow: %s %s", end.State, end.Error)
	}
	res := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: slow.ID, Evidence: true})
	var refs []string
	for _, rc := range res.Evidence.Observed.RefChanges {
		refs = append(refs, rc.Ref)
	}
	if len(refs) != 1 || refs[0] != "refs/heads/feature" {
		t.Errorf("refs that moved while the slow job ran: %v; want only feature (hub made hub/%s and moved main)", refs, quick.ID)
	}
	if len(end.Alerts) != 1 || !strings.Contains(end.Alerts[0], "branch feature moved while it ran") {
		t.Errorf("alerts: %q", end.Alerts)
	}
}
