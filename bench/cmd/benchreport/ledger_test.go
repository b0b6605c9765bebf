package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// TestMain lets the test binary play a ledger worker when the benchmark
// re-executes it, as main does for the real command.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "ledger" {
		os.Exit(ledgerWorker())
	}
	os.Exit(m.Run())
}

func TestLedgerFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process benchmark")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("HUB_HOME", home)
	figs, err := ledgerFigures(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 {
		t.Fatalf("%d figures, want 2", len(figs))
	}
	for _, f := range figs {
		p50, _, _, mn, _ := f.stats()
		if len(f.samples) != 1 || mn <= 0 || f.unit != "/s" {
			t.Errorf("%s: samples %v, unit %q", f.name, f.samples, f.unit)
		}
		t.Logf("%s: %.0f %s; %s", f.name, p50, f.unit, f.note)
	}
	if !strings.Contains(figs[0].note, "invariant held") || !strings.Contains(figs[0].note, "× a single process") {
		t.Errorf("note %q lacks the ratio or the invariant", figs[0].note)
	}
}

// TestLedgerCheckCatchesBreach: the check refuses a ledger with a job left
// running, and one with a wrong charge, so no figure comes from such a run.
func TestLedgerCheckCatchesBreach(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		finish func(s *store.Store, id string, i int) error
	}{
		{"left running", func(s *store.Store, id string, i int) error { return nil }},
		{"wrong charge", func(s *store.Store, id string, i int) error {
			_, err := s.Finish(ctx, id, store.Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: ledgerCost(i) + 1}, time.Now())
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(filepath.Join(t.TempDir(), "hub.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			lim := store.Limits{MaxRunning: ledgerMaxRunning, MonthlyCap: ledgerCap}
			for i := 0; i < 2; i++ {
				id := ledgerJobID("p0", i)
				if err := s.CreateJob(ctx, &store.Job{ID: id, Task: "bench", MaxMicros: ledgerReserve}, time.Now()); err != nil {
					t.Fatal(err)
				}
				if adm, err := s.Admit(ctx, id, lim, time.Now()); err != nil || !adm.Admitted {
					t.Fatal(adm, err)
				}
				if _, err := s.SetState(ctx, id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", time.Now()); err != nil {
					t.Fatal(err)
				}
				finish := tc.finish
				if i == 0 { // the first job is fine
					finish = func(s *store.Store, id string, i int) error {
						_, err := s.Finish(ctx, id, store.Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: ledgerCost(i)}, time.Now())
						return err
					}
				}
				if err := finish(s, id, i); err != nil {
					t.Fatal(err)
				}
			}
			err = ledgerCheck(ctx, s, []string{"p0"}, 2)
			if err == nil {
				t.Fatal("ledgerCheck passed a broken ledger")
			}
			t.Log(err)
		})
	}
}
