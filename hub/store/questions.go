package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// Question statuses as stored. A question stops being pending exactly once:
// answered by the supervisor, or expired (the ask timed out, or the job ended).
const (
	questionPending  = "pending"
	questionAnswered = "answered"
	questionExpired  = "expired"
)

const questionSelect = `SELECT id, job_id, kind, text, context, asked_at, expires_at, status, answered_at, answer, cursor FROM questions`

// scanQuestion reads a question row. AnsweredAt is when it stopped being
// pending: answered, or expired when Expired is set.
func scanQuestion(r rowScanner) (*Question, string, error) {
	var (
		q              Question
		asked, expires int64
		status         string
		answered       sql.NullInt64
	)
	if err := r.Scan(&q.ID, &q.JobID, &q.Kind, &q.Text, &q.Context, &asked, &expires, &status, &answered, &q.Answer, &q.Cursor); err != nil {
		return nil, "", err
	}
	q.AskedAt, q.ExpiresAt, q.AnsweredAt = fromMS(asked), fromMS(expires), nullMS(answered)
	q.Expired = status == questionExpired
	return &q, status, nil
}

// AddQuestion records a worker's question. The job must be running (it then
// needs input) or already need input (several questions may be pending at
// once). It appends a "question" event carrying protocol.Question and sets
// q.Cursor to it; q.AskedAt defaults to now.
func (s *Store) AddQuestion(ctx context.Context, q *Question, now time.Time) error {
	if q.ID == "" || q.JobID == "" {
		return errors.New("store: a question needs an id and a job")
	}
	rec := *q
	if rec.AskedAt.IsZero() {
		rec.AskedAt = now
	}
	rec.AskedAt, rec.ExpiresAt = stamp(rec.AskedAt), stamp(rec.ExpiresAt)
	rec.AnsweredAt, rec.Answer, rec.Expired = time.Time{}, "", false
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, rec.JobID)
		if err != nil {
			return err
		}
		switch j.State {
		case protocol.StateRunning:
			if _, err := moveState(ctx, tx, j, protocol.StateNeedsInput, "question", now); err != nil {
				return err
			}
		case protocol.StateNeedsInput:
		default:
			return wrongState("job %s is %s; only a running job can ask", rec.JobID, j.State)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM questions WHERE id = ?`, rec.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("store: question %s already exists", rec.ID)
		}
		// The event carries its own cursor, known only once it is inserted.
		cursor, err := appendEvent(ctx, tx, rec.JobID, protocol.EventQuestion, rec.Text, nil, now)
		if err != nil {
			return err
		}
		rec.Cursor = cursor
		data, err := marshalData(protocol.Question{ID: rec.ID, Kind: rec.Kind, Text: rec.Text, Context: rec.Context,
			AskedAt: rec.AskedAt, ExpiresAt: rec.ExpiresAt, Cursor: cursor})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE events SET data = ? WHERE cursor = ?`, data, cursor); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO questions (id, job_id, kind, text, context, asked_at, expires_at, status, cursor)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			rec.ID, rec.JobID, rec.Kind, rec.Text, rec.Context, ms(rec.AskedAt), ms(rec.ExpiresAt), questionPending, cursor)
		if err != nil {
			return fmt.Errorf("store: insert question %s: %w", rec.ID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	*q = rec
	return nil
}

// PendingQuestions returns a job's pending questions, oldest first.
func (s *Store) PendingQuestions(ctx context.Context, jobID string) ([]*Question, error) {
	rows, err := s.db.QueryContext(ctx, questionSelect+` WHERE job_id = ? AND status = ? ORDER BY cursor`, jobID, questionPending)
	if err != nil {
		return nil, fmt.Errorf("store: pending questions of %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []*Question
	for rows.Next() {
		q, _, err := scanQuestion(rows)
		if err != nil {
			return nil, fmt.Errorf("store: pending questions of %s: %w", jobID, err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// AnswerQuestion stores the supervisor's answer to question qid of jobID
// (the oldest pending one when qid is ""). When no other question is pending
// the job goes back from needs_input to running.
func (s *Store) AnswerQuestion(ctx context.Context, jobID, qid, answer string, now time.Time) (*Question, error) {
	return s.closeQuestion(ctx, jobID, qid, answer, false, now)
}

// ExpireQuestion marks question qid of jobID (the oldest pending one when
// qid is "") as expired: the ask timed out and the worker goes on. A
// question already answered gets ErrWrongState.
func (s *Store) ExpireQuestion(ctx context.Context, jobID, qid string, now time.Time) error {
	_, err := s.closeQuestion(ctx, jobID, qid, "", true, now)
	return err
}

func (s *Store) closeQuestion(ctx context.Context, jobID, qid, answer string, expire bool, now time.Time) (*Question, error) {
	var out *Question
	err := s.write(ctx, func(tx *sql.Tx) error {
		var row *sql.Row
		if qid == "" {
			row = tx.QueryRowContext(ctx, questionSelect+` WHERE job_id = ? AND status = ? ORDER BY cursor LIMIT 1`, jobID, questionPending)
		} else {
			row = tx.QueryRowContext(ctx, questionSelect+` WHERE job_id = ? AND id = ?`, jobID, qid)
		}
		q, status, err := scanQuestion(row)
		switch {
		case errors.Is(err, sql.ErrNoRows) && qid == "":
			return notFound("job %s has no pending question", jobID)
		case errors.Is(err, sql.ErrNoRows):
			return notFound("job %s has no question %s", jobID, qid)
		case err != nil:
			return fmt.Errorf("store: read question of %s: %w", jobID, err)
		}
		if status != questionPending {
			return wrongState("question %s already %s", q.ID, status)
		}
		status, reason := questionAnswered, "answered"
		if expire {
			status, reason = questionExpired, "ask timed out"
		}
		q.AnsweredAt, q.Answer, q.Expired = stamp(now), answer, expire
		if _, err := tx.ExecContext(ctx, `UPDATE questions SET status = ?, answered_at = ?, answer = ? WHERE id = ?`,
			status, ms(now), answer, q.ID); err != nil {
			return fmt.Errorf("store: close question %s: %w", q.ID, err)
		}
		if _, err := appendEvent(ctx, tx, jobID, protocol.EventAnswer, "",
			map[string]any{"question_id": q.ID, "expired": expire}, now); err != nil {
			return err
		}
		var others int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM questions WHERE job_id = ? AND status = ?`,
			jobID, questionPending).Scan(&others); err != nil {
			return err
		}
		if others == 0 {
			j, err := getJob(ctx, tx, jobID)
			if err != nil {
				return err
			}
			if j.State == protocol.StateNeedsInput {
				if _, err := moveState(ctx, tx, j, protocol.StateRunning, reason, now); err != nil {
					return err
				}
			}
		}
		out = q
		return nil
	})
	return out, err
}
