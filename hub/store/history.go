package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// Run is one ended job as the router and the money views see it.
type Run struct {
	ID, Engine, Model string
	Kind              protocol.Kind
	State             protocol.State // terminal
	Verified          bool           // the caller's verify ran on the result and passed
	HadVerify         bool           // a verify command was given
	Duration          time.Duration  // preparing → ended (0 if unknown)
	// CostMicros is what the job was charged: its real cost when CostKnown,
	// else its whole reservation. ReservedMicros is what it asked to reserve
	// when it was admitted, without any overrun (0 when never admitted).
	CostMicros, ReservedMicros micros.Micros
	CostKnown                  bool
	EndedAt                    time.Time
}

// Runs returns every job that ended at or after since, oldest ending first.
func (s *Store) Runs(ctx context.Context, since time.Time) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT j.id, j.engine, j.kind, j.model, j.state, j.spec, j.verify,
		j.preparing_at, j.ended_at, j.cost_micros, j.cost_known, COALESCE(l.reserved_micros - l.overrun_micros, 0)
		FROM jobs j LEFT JOIN ledger l ON l.job_id = j.id
		WHERE j.ended_at > 0 AND j.ended_at >= ? AND j.state IN (`+stateList(protocol.State.Terminal)+`)
		ORDER BY j.ended_at, j.seq`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: runs since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var (
			r                Run
			state            string
			spec, verify     sql.NullString
			preparing, ended int64
		)
		if err := rows.Scan(&r.ID, &r.Engine, &r.Kind, &r.Model, &state, &spec, &verify,
			&preparing, &ended, &r.CostMicros, &r.CostKnown, &r.ReservedMicros); err != nil {
			return nil, fmt.Errorf("store: runs: %w", err)
		}
		r.State, r.EndedAt = protocol.State(state), fromMS(ended)
		if preparing > 0 && ended >= preparing {
			r.Duration = time.Duration(ended-preparing) * time.Millisecond
		}
		if b := unblob(spec); b != nil {
			p, err := DecodeSpec(b)
			if err != nil {
				return nil, fmt.Errorf("store: job %s: %w", r.ID, err)
			}
			r.HadVerify = p.Verify != ""
		}
		if b := unblob(verify); b != nil {
			var v protocol.Verify
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, fmt.Errorf("store: job %s: verify: %w", r.ID, err)
			}
			r.HadVerify = true
			r.Verified = v.ExitCode == 0 && !v.TimedOut
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	return out, nil
}
