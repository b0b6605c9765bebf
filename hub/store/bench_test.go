package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// The store's two benchmarks are read as a ratio (make bench does): one
// reservation booked and closed against the smallest durable write hub
// makes, one journal event, on the same kind of database in the same
// process.

func openBench(b *testing.B) *Store {
	b.Helper()
	b.Setenv("HOME", b.TempDir())
	home := b.TempDir()
	b.Setenv("HUB_HOME", home)
	s, err := Open(filepath.Join(home, "hub.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkReservation: create a job with a budget, admit it (slot and
// money in one immediate transaction), run it, finish it with a known cost:
// a reservation opened and closed.
func BenchmarkReservation(b *testing.B) {
	s := openBench(b)
	ctx := context.Background()
	lim := Limits{MaxRunning: 1 << 30, MonthlyCap: 1 << 60}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("b%07d", i)
		i++
		if err := s.CreateJob(ctx, &Job{ID: id, Task: "bench", MaxMicros: 100_000}, now); err != nil {
			b.Fatal(err)
		}
		adm, err := s.Admit(ctx, id, lim, now)
		if err != nil || !adm.Admitted {
			b.Fatalf("admit %s: %+v, %v", id, adm, err)
		}
		if _, err := s.SetState(ctx, id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", now); err != nil {
			b.Fatal(err)
		}
		if closed, err := s.Finish(ctx, id, Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 1_000}, now); err != nil || !closed {
			b.Fatalf("finish %s: %v, %v", id, closed, err)
		}
	}
}

// BenchmarkAppendEvent: one progress event appended to a job's journal.
func BenchmarkAppendEvent(b *testing.B) {
	s := openBench(b)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateJob(ctx, &Job{ID: "events", Task: "bench"}, now); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.AppendEvent(ctx, "events", protocol.EventProgress, "a step", nil, now); err != nil {
			b.Fatal(err)
		}
	}
}
