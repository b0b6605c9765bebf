package store

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

func TestLedgerNotFound(t *testing.T) {
	s := openTest(t)
	c := newClock()
	newJob(t, s, c, "j", 100)
	for _, id := range []string{"j", "nope"} {
		if _, err := s.Ledger(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Ledger(%s) = %v, want ErrNotFound", id, err)
		}
	}
}

// TestCheckInvariants breaks each rule behind the store's back and expects
// the sentence that names it.
func TestCheckInvariants(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *Store, c *clock)
		want  []string
	}{
		{"healthy", func(t *testing.T, s *Store, c *clock) {
			newJob(t, s, c, "q", 0)
			running(t, s, c, "r")
			running(t, s, c, "done")
			if _, err := s.Finish(ctx, "done", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 5}, c.now()); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"open reservation of an ended job", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			sqlExec(t, s, `UPDATE jobs SET state = 'failed' WHERE id = 'j'`)
			sqlExec(t, s, `DELETE FROM slots`)
		}, []string{"job j is failed but its reservation of $0.10 is still open"}},
		{"slot of a job that is not active", func(t *testing.T, s *Store, c *clock) {
			newJob(t, s, c, "j", 0)
			sqlExec(t, s, `INSERT INTO slots (job_id, taken_at) VALUES ('j', 1)`)
		}, []string{"job j holds a slot but is queued"}},
		{"active job without a slot", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			sqlExec(t, s, `DELETE FROM slots`)
		}, []string{"job j is running but holds no slot"}},
		{"active job without a reservation", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			sqlExec(t, s, `UPDATE ledger SET closed_at = 1`)
		}, []string{"job j is running without an open reservation"}},
		{"queued job with a reservation", func(t *testing.T, s *Store, c *clock) {
			admitted(t, s, c, "j", 2_000_000)
			sqlExec(t, s, `UPDATE jobs SET state = 'queued'`)
			sqlExec(t, s, `DELETE FROM slots`)
		}, []string{"job j is queued but has a reservation of $2.00"}},
		{"negative charge", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateSucceeded, CostKnown: true}, c.now()); err != nil {
				t.Fatal(err)
			}
			sqlExec(t, s, `UPDATE ledger SET charged_micros = -10000`)
		}, []string{"job j was charged -$0.01, a negative amount"}},
		{"open reservation already charged", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			sqlExec(t, s, `UPDATE ledger SET charged_micros = 10000`)
		}, []string{"job j has an open reservation already charged $0.01"}},
		{"pending question of an ended job", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			ask(t, s, c, "j", "q1")
			if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateCancelled, CostKnown: true}, c.now()); err != nil {
				t.Fatal(err)
			}
			sqlExec(t, s, `UPDATE questions SET status = 'pending'`)
		}, []string{"question q1 of job j is still pending but the job is cancelled"}},
		{"job cursor behind its events", func(t *testing.T, s *Store, c *clock) {
			newJob(t, s, c, "j", 0)
			sqlExec(t, s, `UPDATE jobs SET cursor = 0`)
		}, []string{"job j points at event 0 but its latest event is 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			tc.setup(t, s, newClock())
			got, err := s.CheckInvariants(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func sqlExec(t *testing.T, s *Store, q string) {
	t.Helper()
	if _, err := s.db.Exec(q); err != nil {
		t.Fatal(err)
	}
}
