//go:build unix

package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
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
			running(t, s, c, "overran")
			if _, err := s.Finish(ctx, "overran", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 250_000}, c.now()); err != nil {
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
		// A closed row can no longer be edited (ledger_close_once), so the
		// bad closed rows below are inserted as closed, for a job that ended
		// without being admitted.
		{"negative charge", func(t *testing.T, s *Store, c *clock) {
			endedWithRow(t, s, c, "j", 100_000, 100_000, -10_000, 0)
		}, []string{"job j was charged -$0.01, a negative amount"}},
		{"charged more than reserved", func(t *testing.T, s *Store, c *clock) {
			endedWithRow(t, s, c, "j", 100_000, 100_000, 150_000, 0)
		}, []string{"job j was charged $0.15, more than its reservation of $0.10"}},
		{"reservation grown without an overrun", func(t *testing.T, s *Store, c *clock) {
			endedWithRow(t, s, c, "j", 100_000, 150_000, 150_000, 0)
		}, []string{"job j has a reservation of $0.15 with $0.00 of overrun, but it asked for $0.10"}},
		{"overrun the reservation does not show", func(t *testing.T, s *Store, c *clock) {
			endedWithRow(t, s, c, "j", 100_000, 100_000, 100_000, 50_000)
		}, []string{"job j has a reservation of $0.10 with $0.05 of overrun, but it asked for $0.10"}},
		{"open reservation shrunk", func(t *testing.T, s *Store, c *clock) {
			running(t, s, c, "j")
			sqlExec(t, s, `UPDATE ledger SET reserved_micros = 40000`)
		}, []string{"job j has a reservation of $0.04 with $0.00 of overrun, but it asked for $0.10"}},
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

// endedWithRow makes job id ended (failed) without Finish, and inserts its
// ledger row as already closed with the given amounts: the one way left to
// put a bad closed row in the ledger.
func endedWithRow(t *testing.T, s *Store, c *clock, id string, ask, reserved, charged, overrun micros.Micros) {
	t.Helper()
	newJob(t, s, c, id, ask)
	if _, err := s.db.Exec(`UPDATE jobs SET state = 'failed' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`INSERT INTO ledger (job_id, month, reserved_micros, charged_micros, overrun_micros,
		opened_at, closed_at, cost_known) VALUES (?, '2026-03', ?, ?, ?, 1, 2, 1)`, id, reserved, charged, overrun); err != nil {
		t.Fatal(err)
	}
}

// TestFinishOverrun: a known cost above the reservation grows the
// reservation to it, records the growth as the overrun, says so in a note
// before the terminal state event, and the month counts the real cost.
func TestFinishOverrun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		ending   Ending
		wantRow  LedgerRow // JobID, Month, Closed and ClosedAt are filled in
		wantNote string    // "" when the cost fit
	}{
		{"above", Ending{State: protocol.StateTimedOut, CostKnown: true, CostMicros: 150_000},
			LedgerRow{ReservedMicros: 150_000, ChargedMicros: 150_000, OverrunMicros: 50_000, CostKnown: true},
			"the cost $0.15 exceeded the reservation of $0.10 by $0.05; the reservation grew to match"},
		{"exactly the reservation", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 100_000},
			LedgerRow{ReservedMicros: 100_000, ChargedMicros: 100_000, CostKnown: true}, ""},
		{"unknown", Ending{State: protocol.StateFailed, CostMicros: 900_000},
			LedgerRow{ReservedMicros: 100_000, ChargedMicros: 100_000}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			c := newClock()
			before := running(t, s, c, "j")
			now := c.now()
			closed, err := s.Finish(ctx, "j", tc.ending, now)
			if err != nil || !closed {
				t.Fatalf("Finish = %v, %v", closed, err)
			}
			want := tc.wantRow
			want.JobID, want.Month, want.Closed, want.ClosedAt = "j", "2026-03", true, now
			row, err := s.Ledger(ctx, "j")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, row); diff != "" {
				t.Errorf("ledger (-want +got):\n%s", diff)
			}
			tot, err := s.MonthTotals(ctx, "2026-03")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(MonthTotals{Month: "2026-03", ChargedMicros: want.ChargedMicros}, tot); diff != "" {
				t.Errorf("month totals (-want +got):\n%s", diff)
			}
			j := mustJob(t, s, "j")
			if j.CostMicros != want.ChargedMicros || j.CostKnown != want.CostKnown {
				t.Errorf("job cost %d (known %v), want %d (%v)", j.CostMicros, j.CostKnown, want.ChargedMicros, want.CostKnown)
			}
			evs, err := s.Events(ctx, []string{"j"}, before.Cursor, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, string(e.Kind)+": "+e.Text)
			}
			wantEvs := []string{"state: " + string(tc.ending.State)}
			if tc.wantNote != "" {
				wantEvs = append([]string{"note: " + tc.wantNote}, wantEvs...)
			}
			if diff := cmp.Diff(wantEvs, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if last := evs[len(evs)-1]; j.Cursor != last.Cursor {
				t.Errorf("job cursor %d, want its state event's %d", j.Cursor, last.Cursor)
			}
			healthy(t, s)
		})
	}
}

// TestLedgerTriggers: the schema itself refuses to close a reservation a
// second time, to edit a closed one, or to delete any.
func TestLedgerTriggers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "open")
	running(t, s, c, "done")
	if _, err := s.Finish(ctx, "done", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 30_000}, c.now()); err != nil {
		t.Fatal(err)
	}
	want, err := s.Ledger(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, wantErr string
	}{
		{`UPDATE ledger SET closed_at = 99, charged_micros = 100000, cost_known = 0 WHERE job_id = 'done'`, "reservation already closed"},
		{`UPDATE ledger SET charged_micros = 0 WHERE job_id = 'done'`, "reservation already closed"},
		{`UPDATE ledger SET reserved_micros = 0`, "reservation already closed"},
		{`DELETE FROM ledger WHERE job_id = 'done'`, "reservations are never deleted"},
		{`DELETE FROM ledger WHERE job_id = 'open'`, "reservations are never deleted"},
	} {
		_, err := s.db.ExecContext(ctx, tc.query)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want an error saying %q", tc.query, err, tc.wantErr)
		}
	}
	if got, err := s.Ledger(ctx, "done"); err != nil || !cmp.Equal(want, got) {
		t.Errorf("closed row changed: %s, %v", cmp.Diff(want, got), err)
	}
	// The open row is closed once, and stays as that close left it.
	sqlExec(t, s, `UPDATE ledger SET charged_micros = 1, closed_at = 5 WHERE job_id = 'open'`)
	if _, err := s.db.ExecContext(ctx, `UPDATE ledger SET charged_micros = 2, closed_at = 6 WHERE job_id = 'open'`); err == nil {
		t.Error("a second close of the same row succeeded")
	}
	if row, err := s.Ledger(ctx, "open"); err != nil || row.ChargedMicros != 1 || !row.ClosedAt.Equal(fromMS(5)) {
		t.Errorf("row after a refused second close: %+v, %v", row, err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d ledger rows (%v), want 2", n, err)
	}
}

func sqlExec(t *testing.T, s *Store, q string) {
	t.Helper()
	if _, err := s.db.Exec(q); err != nil {
		t.Fatal(err)
	}
}
