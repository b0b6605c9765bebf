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

// appendEvent inserts one event for jobID inside tx and makes it the job's
// latest: jobs.cursor and updated_at, and for a progress event the job's
// progress note. Cursors come from AUTOINCREMENT under the write lock, so
// they grow in commit order across every process.
func appendEvent(ctx context.Context, tx *sql.Tx, jobID string, kind protocol.EventKind, text string, data any, now time.Time) (int64, error) {
	raw, err := marshalData(data)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO events (job_id, at, kind, text, data) VALUES (?, ?, ?, ?, ?)`,
		jobID, ms(now), kind, text, raw)
	if err != nil {
		return 0, fmt.Errorf("store: append %s event to %s: %w", kind, jobID, err)
	}
	cursor, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if kind == protocol.EventProgress {
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET cursor = ?, updated_at = ?, progress = ? WHERE id = ?`,
			cursor, ms(now), text, jobID)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET cursor = ?, updated_at = ? WHERE id = ?`, cursor, ms(now), jobID)
	}
	if err != nil {
		return 0, fmt.Errorf("store: stamp job %s: %w", jobID, err)
	}
	return cursor, nil
}

// AppendEvent appends one event to a job's journal and returns its cursor.
// data is marshalled with encoding/json unless it is nil or already JSON
// (json.RawMessage or []byte, which must be valid). A progress event also
// becomes the job's progress note.
func (s *Store) AppendEvent(ctx context.Context, jobID string, kind protocol.EventKind, text string, data any, now time.Time) (int64, error) {
	if kind == "" {
		return 0, fmt.Errorf("store: an event of job %s needs a kind", jobID)
	}
	var cursor int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE id = ?`, jobID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return notFound("job %s not found", jobID)
		}
		var err error
		cursor, err = appendEvent(ctx, tx, jobID, kind, text, data, now)
		return err
	})
	return cursor, err
}

// defaultEventsLimit bounds Events when the caller gives no limit.
const defaultEventsLimit = 1000

// Events returns events after cursor since, in cursor order, of the given
// jobs (nil: every job; an empty, non-nil list matches none). limit <= 0
// means 1000.
func (s *Store) Events(ctx context.Context, jobIDs []string, since int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = defaultEventsLimit
	}
	q := `SELECT cursor, job_id, at, kind, text, data FROM events WHERE cursor > ?`
	args := []any{since}
	if jobIDs != nil {
		if len(jobIDs) == 0 {
			return nil, nil
		}
		q += " AND job_id IN (" + placeholders(len(jobIDs)) + ")"
		for _, id := range jobIDs {
			args = append(args, id)
		}
	}
	q += " ORDER BY cursor LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	defer rows.Close()
	return scanEvents(rows)
}

// scanEvents reads the rows of an events query.
func scanEvents(rows *sql.Rows) ([]Event, error) {
	var out []Event
	for rows.Next() {
		var (
			e    Event
			at   int64
			data sql.NullString
		)
		if err := rows.Scan(&e.Cursor, &e.JobID, &at, &e.Kind, &e.Text, &data); err != nil {
			return nil, fmt.Errorf("store: read events: %w", err)
		}
		e.At = fromMS(at)
		if data.Valid {
			e.Data = json.RawMessage(data.String)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	return out, nil
}

// EventsOfKind returns every event of one kind in a job's journal, in cursor order.
func (s *Store) EventsOfKind(ctx context.Context, jobID string, kind protocol.EventKind) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cursor, job_id, at, kind, text, data FROM events WHERE job_id = ? AND kind = ? ORDER BY cursor`, jobID, kind)
	if err != nil {
		return nil, fmt.Errorf("store: read %s events of %s: %w", kind, jobID, err)
	}
	defer rows.Close()
	return scanEvents(rows)
}

// LastCursor is the cursor of the newest event (0 when there is none).
func (s *Store) LastCursor(ctx context.Context) (int64, error) {
	var c int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(cursor), 0) FROM events`).Scan(&c); err != nil {
		return 0, fmt.Errorf("store: last cursor: %w", err)
	}
	return c, nil
}

// ReportCost records what a running job has spent so far: a cost event, and the job's live cost and tokens (Finish
// later writes the final ones). An ended job is left as it is.
func (s *Store) ReportCost(ctx context.Context, jobID string, spent micros.Micros, c protocol.CostEvent, now time.Time) (int64, error) {
	var cursor int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			return wrongState("job %s already ended (%s)", jobID, j.State)
		}
		if cursor, err = appendEvent(ctx, tx, jobID, protocol.EventCost, "", c, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET cost_micros = ?, cost_known = ?, tokens = ? WHERE id = ?`,
			spent, c.Known, c.Tokens, jobID)
		return err
	})
	return cursor, err
}
