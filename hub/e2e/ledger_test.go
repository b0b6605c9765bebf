//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// TestEightProcessesUnderCap: eight `hub start` processes at once (racing to
// start the daemon too) under a small cap and slot limit. Replaying the
// journal in cursor order must never show more jobs active than the slots,
// or more money reserved than the cap, and every reservation is closed once.
// Removing the slot or cap check from the admission transaction fails it.
func TestEightProcessesUnderCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slots    int
		cap, max float64
		bound    int // most jobs that may be active at once
	}{
		{"slots bind", 2, 100, 0.3, 2},
		{"money binds", 4, 1.0, 0.3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			t.Setenv("HUB_MAX_RUNNING", fmt.Sprint(tc.slots))
			t.Setenv("HUB_MONTHLY_CAP_USD", fmt.Sprint(tc.cap))
			ctx := hubtest.Deadline(t, 3*time.Minute)
			repo := sampleRepo(t, "repo")
			var wg sync.WaitGroup
			var mu sync.Mutex
			var ids []string
			errs := make(chan error, 16)
			for p := 0; p < 8; p++ {
				wg.Add(1)
				go func(p int) {
					defer wg.Done()
					for k := 0; k < 2; k++ {
						cmd := exec.CommandContext(ctx, w.bin, "start", "--repo", repo, "--engine", "exec",
							"--exec", "sleep 0.3; echo "+fmt.Sprint(p, k)+" > f.txt", "--max-usd", fmt.Sprint(tc.max),
							"--task", fmt.Sprintf("job %d.%d", p, k))
						out, err := cmd.Output()
						if err != nil {
							errs <- fmt.Errorf("start %d.%d: %v", p, k, err)
							return
						}
						mu.Lock()
						ids = append(ids, strings.TrimSpace(string(out)))
						mu.Unlock()
					}
				}(p)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if len(ids) != 16 {
				t.Fatalf("%d jobs started; want 16", len(ids))
			}
			waitSucceeded(t, ctx, w.connect(ctx), ids, 120)
			st := openStore(t, w)
			evs, err := st.Events(ctx, nil, 0, 100000)
			if err != nil {
				t.Fatal(err)
			}
			active, peak := map[string]bool{}, 0
			admitted, ended := 0, 0
			for _, ev := range evs {
				if ev.Kind != protocol.EventState {
					continue
				}
				switch s := protocol.State(ev.Text); {
				case s == protocol.StatePreparing:
					active[ev.JobID] = true
					admitted++
				case s.Terminal():
					delete(active, ev.JobID)
					ended++
				}
				if len(active) > peak {
					peak = len(active)
				}
			}
			t.Logf("peak active %d (bound %d), %d admitted, %d ended", peak, tc.bound, admitted, ended)
			if peak > tc.bound {
				t.Errorf("%d jobs were active at once; the bound is %d", peak, tc.bound)
			}
			if admitted != 16 || ended != 16 {
				t.Errorf("admitted %d, ended %d; want 16 each", admitted, ended)
			}
			for _, id := range ids {
				row, err := st.Ledger(ctx, id)
				if err != nil {
					t.Errorf("job %s: no reservation: %v", id, err)
					continue
				}
				if !row.Closed || row.ReservedMicros != 300_000 {
					t.Errorf("job %s: reservation %+v", id, row)
				}
			}
			checkLedger(t, w)
		})
	}
}

// TestFreeEngineBooksNoMoney: an exec job, which cannot spend, books no
// money unless its caller set a budget, so free jobs are never queued
// behind the monthly cap. Under a $3 cap, two default-budget ($2) jobs of a
// paying engine could not run at once; three exec jobs do. An explicit
// max_usd is still booked as asked.
func TestFreeEngineBooksNoMoney(t *testing.T) {
	w := newWorld(t)
	t.Setenv("HUB_MAX_RUNNING", "4")
	t.Setenv("HUB_MONTHLY_CAP_USD", "3")
	ctx := hubtest.Deadline(t, 2*time.Minute)
	repo := sampleRepo(t, "repo")
	gate := t.TempDir() + "/gate"
	c := w.connect(ctx)
	var ids []string
	for i := 0; i < 3; i++ {
		r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: fmt.Sprintf("free %d", i),
			Repo: repo, Engine: "exec", Exec: "while [ ! -e " + gate + " ]; do sleep 0.05; done; echo done > done.txt"})
		ids = append(ids, r.ID)
	}
	half := 0.5
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "budgeted",
		Repo: repo, Engine: "exec", Exec: "echo done > done.txt", MaxUSD: &half})
	budgeted := r.ID
	for {
		running := 0
		for _, id := range ids {
			st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: id})
			if st.State.Terminal() {
				t.Fatalf("job %s ended %s before the gate opened: %s", id, st.State, st.Error)
			}
			if st.State == protocol.StateRunning {
				running++
			}
		}
		if running == len(ids) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d free jobs running under a $3 cap", running, len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	all := append(ids, budgeted)
	waitSucceeded(t, ctx, c, all, 60)
	st := openStore(t, w)
	for _, id := range all {
		row, err := st.Ledger(ctx, id)
		if err != nil {
			t.Fatalf("job %s: no ledger row: %v", id, err)
		}
		want := micros.Micros(0)
		if id == budgeted {
			want = 500_000
		}
		if !row.Closed || row.ReservedMicros != want || row.ChargedMicros != 0 {
			t.Errorf("job %s: ledger %+v; want closed, %d reserved, nothing charged", id, row, want)
		}
	}
	checkLedger(t, w)
}

// waitSucceeded waits for the jobs and fails the test unless all ended
// succeeded.
func waitSucceeded(t *testing.T, ctx context.Context, c *client.Client, ids []string, timeoutS float64) {
	t.Helper()
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: timeoutS})
	if !wr.Done || len(wr.Jobs) != len(ids) {
		t.Fatalf("wait: done %v, %d jobs of %d", wr.Done, len(wr.Jobs), len(ids))
	}
	for _, st := range wr.Jobs {
		if st.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", st.ID, st.State, st.Error)
		}
	}
}

// openStore opens the world's hub.db for the test.
func openStore(t *testing.T, w *world) *store.Store {
	t.Helper()
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
