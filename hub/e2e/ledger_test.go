package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
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
			ctx := deadline(t, 3*time.Minute)
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
			c := w.connect(ctx)
			wr := call[protocol.WaitResult](t, ctx, c, protocol.MethodJobWait, protocol.WaitParams{IDs: ids, TimeoutS: 120})
			if !wr.Done || len(wr.Jobs) != 16 {
				t.Fatalf("wait: done %v, %d jobs", wr.Done, len(wr.Jobs))
			}
			for _, st := range wr.Jobs {
				if st.State != protocol.StateSucceeded {
					t.Errorf("job %s ended %s: %s", st.ID, st.State, st.Error)
				}
			}
			st, err := store.Open(w.paths.DB())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
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
