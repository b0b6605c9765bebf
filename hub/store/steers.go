package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// AddSteer queues a steering message for an active job and appends a
// "steer" event. A job that is queued or ended gets ErrWrongState.
func (s *Store) AddSteer(ctx context.Context, jobID, text string, now time.Time) (*Steer, error) {
	st := &Steer{JobID: jobID, Text: text, CreatedAt: stamp(now)}
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		if !j.State.Active() {
			return wrongState("job %s is %s; only an active job can be steered", jobID, j.State)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO steers (job_id, text, created_at) VALUES (?, ?, ?)`, jobID, text, ms(now))
		if err != nil {
			return fmt.Errorf("store: queue steering for %s: %w", jobID, err)
		}
		if st.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = appendEvent(ctx, tx, jobID, protocol.EventSteer, text, nil, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// TakeSteers returns a job's undelivered steering, oldest first, marks it
// delivered and appends one "delivered" event per message, in one
// transaction: each message is handed out once.
func (s *Store) TakeSteers(ctx context.Context, jobID string, now time.Time) ([]Steer, error) {
	// The common case is nothing queued: answer it without the write lock.
	var waiting int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM steers WHERE job_id = ? AND delivered_at IS NULL`,
		jobID).Scan(&waiting); err != nil {
		return nil, fmt.Errorf("store: steering of %s: %w", jobID, err)
	}
	if waiting == 0 {
		if _, err := getJob(ctx, s.db, jobID); err != nil {
			return nil, err
		}
		return nil, nil
	}
	var out []Steer
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, `SELECT id, text, created_at FROM steers
			WHERE job_id = ? AND delivered_at IS NULL ORDER BY id`, jobID)
		if err != nil {
			return err
		}
		for rows.Next() {
			st := Steer{JobID: jobID, DeliveredAt: stamp(now)}
			var created int64
			if err := rows.Scan(&st.ID, &st.Text, &created); err != nil {
				rows.Close()
				return err
			}
			st.CreatedAt = fromMS(created)
			out = append(out, st)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, st := range out {
			if _, err := tx.ExecContext(ctx, `UPDATE steers SET delivered_at = ? WHERE id = ?`, ms(now), st.ID); err != nil {
				return err
			}
			if _, err := appendEvent(ctx, tx, jobID, protocol.EventDelivered, st.Text, nil, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: take steering of %s: %w", jobID, err)
	}
	return out, nil
}
