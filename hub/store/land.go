package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// SetForecast stores job id's latest forecast (protocol.Forecast JSON). With
// an event kind it also appends that event (text and data as AppendEvent
// takes them) in the same transaction, so a reader never sees the journal
// and the record disagree.
func (s *Store) SetForecast(ctx context.Context, id string, forecast []byte, kind protocol.EventKind, text string, data any, now time.Time) (int64, error) {
	var cursor int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET forecast = ? WHERE id = ?`, blob(forecast), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("job %s not found", id)
		}
		if kind == "" {
			return nil
		}
		cursor, err = appendEvent(ctx, tx, id, kind, text, data, now)
		return err
	})
	return cursor, err
}

// SetLanded records that job id's work landed (protocol.Landing JSON) and
// appends its land event, once: a job that already has a landing gets
// ErrWrongState and nothing changes.
func (s *Store) SetLanded(ctx context.Context, id string, landing []byte, text string, now time.Time) (int64, error) {
	var cursor int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(j.Landed) > 0 {
			return wrongState("job %s has already landed", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET landed = ? WHERE id = ?`, blob(landing), id); err != nil {
			return err
		}
		cursor, err = appendEvent(ctx, tx, id, protocol.EventLand, text, landing, now)
		return err
	})
	return cursor, err
}
