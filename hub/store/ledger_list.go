package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// LedgerEntry is one reservation with the job it pays for.
type LedgerEntry struct {
	JobID          string
	Engine         string
	Kind           protocol.Kind
	State          protocol.State
	Month          string        // "2026-12", UTC
	ReservedMicros micros.Micros // what the job asked for, plus OverrunMicros
	ChargedMicros  micros.Micros // 0 while open
	OverrunMicros  micros.Micros // what the job cost beyond what it asked for
	OpenedAt       time.Time
	Closed         bool
	ClosedAt       time.Time
	CostKnown      bool // false on a closed reservation: charged in full
}

// LedgerFilter picks reservations. Zero values keep everything.
type LedgerFilter struct {
	Month    string // "2026-12"
	OnlyOpen bool
	JobID    string
}

// LedgerEntries returns the reservations that f keeps, oldest first.
func (s *Store) LedgerEntries(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error) {
	var (
		where []string
		args  []any
	)
	if f.Month != "" {
		where = append(where, "l.month = ?")
		args = append(args, f.Month)
	}
	if f.OnlyOpen {
		where = append(where, "l.closed_at IS NULL")
	}
	if f.JobID != "" {
		where = append(where, "l.job_id = ?")
		args = append(args, f.JobID)
	}
	q := `SELECT l.job_id, j.engine, j.kind, j.state, l.month, l.reserved_micros, l.charged_micros,
		l.overrun_micros, l.opened_at, l.closed_at, l.cost_known
		FROM ledger l JOIN jobs j ON j.id = l.job_id`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY l.opened_at, j.seq"
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list ledger: %w", err)
	}
	defer rows.Close()
	var out []LedgerEntry
	for rows.Next() {
		var (
			e      LedgerEntry
			state  string
			opened int64
			closed sql.NullInt64
		)
		if err := rows.Scan(&e.JobID, &e.Engine, &e.Kind, &state, &e.Month, &e.ReservedMicros, &e.ChargedMicros,
			&e.OverrunMicros, &opened, &closed, &e.CostKnown); err != nil {
			return nil, fmt.Errorf("store: list ledger: %w", err)
		}
		e.State, e.OpenedAt = protocol.State(state), fromMS(opened)
		e.Closed, e.ClosedAt = closed.Valid, nullMS(closed)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list ledger: %w", err)
	}
	return out, nil
}
