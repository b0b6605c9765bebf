package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hub-agents/hub/hub/protocol"
)

// PutQuota records quota signals, one row per engine and window. A signal
// older than the one stored for its window is ignored, so a slow job
// reporting late cannot overwrite what a newer one saw.
func (s *Store) PutQuota(ctx context.Context, signals []protocol.QuotaSignal) error {
	if len(signals) == 0 {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range signals {
			if q.Engine == "" || q.Name == "" {
				return fmt.Errorf("store: a quota signal needs an engine and a name (got %q, %q)", q.Engine, q.Name)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO quota (engine, name, used_pct, exhausted, resets_at, source, confidence, read_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (engine, name) DO UPDATE SET used_pct = excluded.used_pct, exhausted = excluded.exhausted,
					resets_at = excluded.resets_at, source = excluded.source, confidence = excluded.confidence, read_at = excluded.read_at
				WHERE excluded.read_at >= quota.read_at`,
				q.Engine, q.Name, q.UsedPct, q.Exhausted, ms(q.ResetsAt), q.Source, q.Confidence, ms(q.ReadAt))
			if err != nil {
				return fmt.Errorf("store: quota %s/%s: %w", q.Engine, q.Name, err)
			}
		}
		return nil
	})
}

// Quotas returns every stored signal, by engine and name.
func (s *Store) Quotas(ctx context.Context) ([]protocol.QuotaSignal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT engine, name, used_pct, exhausted, resets_at, source, confidence, read_at
		FROM quota ORDER BY engine, name`)
	if err != nil {
		return nil, fmt.Errorf("store: quotas: %w", err)
	}
	defer rows.Close()
	var out []protocol.QuotaSignal
	for rows.Next() {
		var q protocol.QuotaSignal
		var resets, read int64
		if err := rows.Scan(&q.Engine, &q.Name, &q.UsedPct, &q.Exhausted, &resets, &q.Source, &q.Confidence, &read); err != nil {
			return nil, fmt.Errorf("store: quotas: %w", err)
		}
		q.ResetsAt, q.ReadAt = fromMS(resets), fromMS(read)
		out = append(out, q)
	}
	return out, rows.Err()
}
