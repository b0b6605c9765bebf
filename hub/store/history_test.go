//go:build unix

package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// history builds a store with jobs that ended before, at and after t0, one
// that never started and one still running, each at a chosen instant.
type history struct {
	t  *testing.T
	s  *Store
	t0 time.Time
}

func (h history) at(d time.Duration) time.Time { return h.t0.Add(d) }

// create makes a queued job; verify is the command the caller gave.
func (h history) create(id, engine string, kind protocol.Kind, verify string, reserve micros.Micros, at time.Duration) {
	h.t.Helper()
	spec, err := EncodeSpec(protocol.StartParams{Task: "task " + id, Kind: kind, Engine: engine, Verify: verify})
	if err != nil {
		h.t.Fatal(err)
	}
	j := &Job{ID: id, Kind: kind, Engine: engine, Model: "m-" + engine, Spec: spec, MaxMicros: reserve}
	if err := h.s.CreateJob(context.Background(), j, h.at(at)); err != nil {
		h.t.Fatal(err)
	}
}

func (h history) admit(id string, at time.Duration) {
	h.t.Helper()
	if adm, err := h.s.Admit(context.Background(), id, bigLimits, h.at(at)); err != nil || !adm.Admitted {
		h.t.Fatalf("Admit(%s) = %+v, %v", id, adm, err)
	}
}

// verified records verify's outcome as the shim does, before Finish.
func (h history) verified(id string, v protocol.Verify) {
	h.t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.s.Update(context.Background(), id, func(j *Job) error { j.Verify = raw; return nil }); err != nil {
		h.t.Fatal(err)
	}
}

func (h history) finish(id string, e Ending, at time.Duration) {
	h.t.Helper()
	if _, err := h.s.Finish(context.Background(), id, e, h.at(at)); err != nil {
		h.t.Fatal(err)
	}
}

func TestRuns(t *testing.T) {
	ctx := context.Background()
	h := history{t: t, s: openTest(t), t0: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}

	// Ended an hour before t0: left out.
	h.create("old", "claude", protocol.KindWrite, "", 100_000, -2*time.Hour)
	h.admit("old", -2*time.Hour)
	h.finish("old", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 1}, -time.Hour)

	// Ends exactly at t0, verified: kept.
	h.create("pass", "claude", protocol.KindWrite, "make test", 100_000, -10*time.Minute)
	h.admit("pass", -9*time.Minute)
	h.verified("pass", protocol.Verify{Command: "make test", ExitCode: 0, Commit: "c"})
	h.finish("pass", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 42_000}, 0)

	// Verify failed, the cost unknown: the reservation is charged.
	h.create("fail", "codex", protocol.KindWrite, "make test", 200_000, time.Minute)
	h.admit("fail", 2*time.Minute)
	h.verified("fail", protocol.Verify{Command: "make test", ExitCode: 2, Commit: "c"})
	h.finish("fail", Ending{State: protocol.StateFailed}, 2*time.Minute+1500*time.Millisecond)

	// Verify timed out: it did not pass, whatever the exit code says.
	h.create("slow", "codex", protocol.KindWrite, "make test", 0, time.Minute)
	h.admit("slow", time.Minute)
	h.verified("slow", protocol.Verify{Command: "make test", ExitCode: 0, TimedOut: true})
	h.finish("slow", Ending{State: protocol.StateFailed, CostKnown: true}, 5*time.Minute)

	// Cost more than it reserved: ReservedMicros stays what it asked for.
	h.create("over", "claude", protocol.KindWrite, "", 100_000, 5*time.Minute)
	h.admit("over", 5*time.Minute)
	h.finish("over", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 150_000}, 6*time.Minute)

	// A read job created first but ending after the others; verify given but never run.
	h.create("read", "exec", protocol.KindRead, "true", 2_000_000, -30*time.Minute)
	h.admit("read", -30*time.Minute)
	h.finish("read", Ending{State: protocol.StateSucceeded, CostKnown: true}, 10*time.Minute)

	// Cancelled while queued: never admitted, no reservation, no duration.
	h.create("never", "exec", protocol.KindWrite, "", 2_000_000, 3*time.Minute)
	h.finish("never", Ending{State: protocol.StateCancelled, Text: "cancelled"}, 4*time.Minute)

	// Still running: left out.
	h.create("live", "claude", protocol.KindWrite, "", 100_000, time.Minute)
	h.admit("live", time.Minute)

	got, err := h.s.Runs(ctx, h.t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Run{
		{ID: "pass", Engine: "claude", Kind: "write", Model: "m-claude", State: protocol.StateSucceeded,
			Verified: true, HadVerify: true, Duration: 9 * time.Minute,
			CostMicros: 42_000, ReservedMicros: 100_000, CostKnown: true, EndedAt: h.at(0)},
		{ID: "fail", Engine: "codex", Kind: "write", Model: "m-codex", State: protocol.StateFailed,
			HadVerify: true, Duration: 1500 * time.Millisecond,
			CostMicros: 200_000, ReservedMicros: 200_000, EndedAt: h.at(2*time.Minute + 1500*time.Millisecond)},
		{ID: "never", Engine: "exec", Kind: "write", Model: "m-exec", State: protocol.StateCancelled,
			EndedAt: h.at(4 * time.Minute)},
		{ID: "slow", Engine: "codex", Kind: "write", Model: "m-codex", State: protocol.StateFailed,
			HadVerify: true, Duration: 4 * time.Minute, CostKnown: true, EndedAt: h.at(5 * time.Minute)},
		{ID: "over", Engine: "claude", Kind: "write", Model: "m-claude", State: protocol.StateSucceeded,
			Duration: time.Minute, CostMicros: 150_000, ReservedMicros: 100_000, CostKnown: true, EndedAt: h.at(6 * time.Minute)},
		{ID: "read", Engine: "exec", Kind: "read", Model: "m-exec", State: protocol.StateSucceeded,
			HadVerify: true, Duration: 40 * time.Minute,
			ReservedMicros: 2_000_000, CostKnown: true, EndedAt: h.at(10 * time.Minute)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Runs (-want +got):\n%s", diff)
	}

	// Later than every ending: nothing, not an error.
	if got, err := h.s.Runs(ctx, h.at(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("Runs(later) = %v, %v; want none", got, err)
	}
}
