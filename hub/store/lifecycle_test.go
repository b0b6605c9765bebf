//go:build unix

package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/job/lifecycle"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestStateMachineEnforced: every path that writes a job's state refuses a
// move the lifecycle table does not list, with an error that is
// ErrWrongState, a *lifecycle.Error and names both states; nothing moves.
func TestStateMachineEnforced(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	refused := func(t *testing.T, err error, from, to protocol.State) {
		t.Helper()
		var le *lifecycle.Error
		if !errors.Is(err, ErrWrongState) || !errors.As(err, &le) || le.From != from || le.To != to ||
			!strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
			t.Fatalf("err = %v, want a refusal naming %s and %s", err, from, to)
		}
	}

	newJob(t, s, c, "q", 0)
	// queued → running skips preparing: no slot, no reservation.
	_, err := s.SetState(ctx, "q", nil, protocol.StateRunning, "", c.now())
	refused(t, err, protocol.StateQueued, protocol.StateRunning)
	if j := mustJob(t, s, "q"); j.State != protocol.StateQueued || !j.RunningAt.IsZero() {
		t.Errorf("refusal moved the job: %s, running at %v", j.State, j.RunningAt)
	}

	running(t, s, c, "r")
	if _, err := s.SetState(ctx, "r", nil, protocol.StateVerifying, "", c.now()); err != nil {
		t.Fatal(err)
	}
	// verifying → needs_input: only a running worker asks.
	_, err = s.SetState(ctx, "r", nil, protocol.StateNeedsInput, "", c.now())
	refused(t, err, protocol.StateVerifying, protocol.StateNeedsInput)

	admitted(t, s, c, "p", 0)
	// preparing → verifying: nothing was run, so nothing to check.
	_, err = s.SetState(ctx, "p", nil, protocol.StateVerifying, "", c.now())
	refused(t, err, protocol.StatePreparing, protocol.StateVerifying)

	// Moves the table lists go through with no precondition of the caller's.
	if _, err := s.SetState(ctx, "p", nil, protocol.StateRunning, "", c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetState(ctx, "r", nil, protocol.StateRunning, "next attempt", c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "r", Ending{State: protocol.StateSucceeded, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}
	// An ended job never moves again, by any path.
	_, err = s.SetState(ctx, "r", nil, protocol.StateRunning, "", c.now())
	refused(t, err, protocol.StateSucceeded, protocol.StateRunning)
	if _, err := s.Finish(ctx, "r", Ending{State: protocol.StateFailed}, c.now()); !errors.Is(err, ErrWrongState) {
		t.Errorf("Finish of an ended job = %v", err)
	}
	if j := mustJob(t, s, "r"); j.State != protocol.StateSucceeded {
		t.Errorf("ended job moved to %s", j.State)
	}
	healthy(t, s)
}
