package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// monthTotals sums a month's ledger through q: charged amounts of closed
// reservations, and open reservations.
func monthTotals(ctx context.Context, q querier, month string) (MonthTotals, error) {
	t := MonthTotals{Month: month}
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN closed_at IS NOT NULL THEN charged_micros END), 0),
		COALESCE(SUM(CASE WHEN closed_at IS NULL THEN reserved_micros END), 0)
		FROM ledger WHERE month = ?`, month).Scan(&t.ChargedMicros, &t.ReservedMicros)
	if err != nil {
		return MonthTotals{}, fmt.Errorf("store: totals of %s: %w", month, err)
	}
	return t, nil
}

// MonthTotals is the money view of month ("2026-12", UTC).
func (s *Store) MonthTotals(ctx context.Context, month string) (MonthTotals, error) {
	return monthTotals(ctx, s.db, month)
}

// Ledger returns a job's reservation; ErrNotFound when it has none (it was
// never admitted).
func (s *Store) Ledger(ctx context.Context, jobID string) (*LedgerRow, error) {
	var (
		r      = LedgerRow{JobID: jobID}
		closed sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `SELECT month, reserved_micros, charged_micros, overrun_micros, closed_at, cost_known
		FROM ledger WHERE job_id = ?`, jobID).Scan(&r.Month, &r.ReservedMicros, &r.ChargedMicros, &r.OverrunMicros,
		&closed, &r.CostKnown)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("job %s has no reservation", jobID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: reservation of %s: %w", jobID, err)
	}
	r.Closed, r.ClosedAt = closed.Valid, nullMS(closed)
	return &r, nil
}

// CheckInvariants returns one sentence per broken rule between jobs, slots,
// the ledger, questions and the journal; none means healthy. It does not
// judge the monthly cap, which is the caller's setting.
func (s *Store) CheckInvariants(ctx context.Context) ([]string, error) {
	terminal := stateList(func(st protocol.State) bool { return st.Terminal() })
	active := stateList(func(st protocol.State) bool { return st.Active() })
	checks := []struct {
		query string
		say   func(cols []any) string
	}{
		{`SELECT l.job_id, j.state, l.reserved_micros FROM ledger l JOIN jobs j ON j.id = l.job_id
			WHERE l.closed_at IS NULL AND j.state IN (` + terminal + `)`,
			func(c []any) string {
				return fmt.Sprintf("job %s is %s but its reservation of %s is still open", c[0], c[1], micros.Micros(c[2].(int64)))
			}},
		{`SELECT l.job_id, l.reserved_micros FROM ledger l JOIN jobs j ON j.id = l.job_id
			WHERE j.state = 'queued'`,
			func(c []any) string {
				return fmt.Sprintf("job %s is queued but has a reservation of %s", c[0], micros.Micros(c[1].(int64)))
			}},
		{`SELECT s.job_id, j.state FROM slots s JOIN jobs j ON j.id = s.job_id
			WHERE j.state NOT IN (` + active + `)`,
			func(c []any) string { return fmt.Sprintf("job %s holds a slot but is %s", c[0], c[1]) }},
		{`SELECT j.id, j.state FROM jobs j LEFT JOIN slots s ON s.job_id = j.id
			WHERE j.state IN (` + active + `) AND s.job_id IS NULL`,
			func(c []any) string { return fmt.Sprintf("job %s is %s but holds no slot", c[0], c[1]) }},
		{`SELECT j.id, j.state FROM jobs j LEFT JOIN ledger l ON l.job_id = j.id AND l.closed_at IS NULL
			WHERE j.state IN (` + active + `) AND l.job_id IS NULL`,
			func(c []any) string { return fmt.Sprintf("job %s is %s without an open reservation", c[0], c[1]) }},
		{`SELECT job_id, charged_micros FROM ledger WHERE closed_at IS NOT NULL AND charged_micros < 0`,
			func(c []any) string {
				return fmt.Sprintf("job %s was charged %s, a negative amount", c[0], micros.Micros(c[1].(int64)))
			}},
		{`SELECT job_id, charged_micros FROM ledger WHERE closed_at IS NULL AND charged_micros != 0`,
			func(c []any) string {
				return fmt.Sprintf("job %s has an open reservation already charged %s", c[0], micros.Micros(c[1].(int64)))
			}},
		// Finish grows a reservation to a cost above it, so no closed row
		// is charged more than it reserved.
		{`SELECT job_id, charged_micros, reserved_micros FROM ledger
			WHERE closed_at IS NOT NULL AND charged_micros > reserved_micros`,
			func(c []any) string {
				return fmt.Sprintf("job %s was charged %s, more than its reservation of %s",
					c[0], micros.Micros(c[1].(int64)), micros.Micros(c[2].(int64)))
			}},
		// A reservation is the job's ask (jobs.max_micros, which never
		// changes) plus the overrun its close added; nothing else moves it.
		{`SELECT l.job_id, l.reserved_micros, l.overrun_micros, j.max_micros FROM ledger l JOIN jobs j ON j.id = l.job_id
			WHERE l.overrun_micros != l.reserved_micros - j.max_micros`,
			func(c []any) string {
				return fmt.Sprintf("job %s has a reservation of %s with %s of overrun, but it asked for %s",
					c[0], micros.Micros(c[1].(int64)), micros.Micros(c[2].(int64)), micros.Micros(c[3].(int64)))
			}},
		{`SELECT q.id, q.job_id, j.state FROM questions q JOIN jobs j ON j.id = q.job_id
			WHERE q.status = 'pending' AND j.state IN (` + terminal + `)`,
			func(c []any) string {
				return fmt.Sprintf("question %s of job %s is still pending but the job is %s", c[0], c[1], c[2])
			}},
		{`SELECT j.id, j.cursor, COALESCE(MAX(e.cursor), 0) FROM jobs j LEFT JOIN events e ON e.job_id = j.id
			GROUP BY j.id HAVING j.cursor != COALESCE(MAX(e.cursor), 0)`,
			func(c []any) string {
				return fmt.Sprintf("job %s points at event %d but its latest event is %d", c[0], c[1], c[2])
			}},
	}
	var out []string
	for _, ch := range checks {
		rows, err := s.db.QueryContext(ctx, ch.query)
		if err != nil {
			return nil, fmt.Errorf("store: check invariants: %w", err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: check invariants: %w", err)
			}
			out = append(out, ch.say(vals))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: check invariants: %w", err)
		}
	}
	return out, nil
}

// stateList is the SQL list of the quoted states that match.
func stateList(match func(protocol.State) bool) string {
	var parts []string
	for _, st := range protocol.States {
		if match(st) {
			parts = append(parts, "'"+string(st)+"'")
		}
	}
	return strings.Join(parts, ", ")
}
