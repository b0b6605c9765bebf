package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/strictjson"
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

// HubRefs is what hub itself moves among a repository's refs: its jobs'
// branches (made when a job starts, committed by its shim, removed by
// cleanup) and, for each landing, the branch it moved and the commit it
// moved it to.
type HubRefs struct {
	branches map[string]bool // full ref names
	landed   map[string]bool // ref + "\x00" + commit
}

// Made reports whether ref pointing at after is hub's own doing.
func (h HubRefs) Made(ref, after string) bool {
	return h.branches[ref] || h.landed[ref+"\x00"+after]
}

// HubRefs reads the branches and landings of repo's jobs: two columns of
// the jobs that have one, not whole records.
func (s *Store) HubRefs(ctx context.Context, repo string) (HubRefs, error) {
	h := HubRefs{branches: map[string]bool{}, landed: map[string]bool{}}
	rows, err := s.db.QueryContext(ctx,
		`SELECT branch, COALESCE(landed, '') FROM jobs WHERE repo = ? AND (branch != '' OR COALESCE(landed, '') != '')`, repo)
	if err != nil {
		return h, fmt.Errorf("store: the jobs' refs of %s: %w", repo, err)
	}
	defer rows.Close()
	for rows.Next() {
		var branch, landed string
		if err := rows.Scan(&branch, &landed); err != nil {
			return h, fmt.Errorf("store: the jobs' refs of %s: %w", repo, err)
		}
		if branch != "" {
			h.branches["refs/heads/"+branch] = true
		}
		var l protocol.Landing
		if landed != "" && json.Unmarshal([]byte(landed), &l) == nil {
			h.landed["refs/heads/"+l.Into+"\x00"+l.Commit] = true
		}
	}
	return h, rows.Err()
}

// AddLandRun records landing run r, accepted and running.
func (s *Store) AddLandRun(ctx context.Context, r protocol.LandRun) error {
	ids, err := json.Marshal(r.IDs)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO land_runs (id, state, repo, into_ref, ids, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, protocol.LandRunRunning, r.Repo, r.Into, string(ids), ms(r.StartedAt))
		return err
	})
}

// EndLandRun ends landing run id, once: state (done, failed or
// interrupted), its result and error. A run that already ended gets
// ErrWrongState and keeps its end.
func (s *Store) EndLandRun(ctx context.Context, id, state string, res *protocol.LandResult, why string, now time.Time) error {
	var raw []byte
	if res != nil {
		var err error
		if raw, err = json.Marshal(res); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE land_runs SET state = ?, result = ?, error = ?, ended_at = ? WHERE id = ? AND state = ?`,
			state, blob(raw), why, ms(now), id, protocol.LandRunRunning)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			if _, err := landRun(ctx, tx, id); err != nil {
				return err
			}
			return wrongState("landing run %s has already ended", id)
		}
		return nil
	})
}

// InterruptLandRuns ends every running landing run as interrupted, with
// why: a daemon starting up runs none, so any still running was its
// predecessor's. It returns their ids.
func (s *Store) InterruptLandRuns(ctx context.Context, why string, now time.Time) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		ids = nil
		rows, err := tx.QueryContext(ctx, `UPDATE land_runs SET state = ?, error = ?, ended_at = ? WHERE state = ? RETURNING id`,
			protocol.LandRunInterrupted, why, ms(now), protocol.LandRunRunning)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	return ids, err
}

// LandRun reads landing run id.
func (s *Store) LandRun(ctx context.Context, id string) (*protocol.LandRun, error) {
	return landRun(ctx, s.db, id)
}

func landRun(ctx context.Context, q querier, id string) (*protocol.LandRun, error) {
	var r protocol.LandRun
	var ids string
	var started, ended int64
	var result sql.NullString
	err := q.QueryRowContext(ctx, `SELECT id, state, repo, into_ref, ids, started_at, ended_at, result, error FROM land_runs WHERE id = ?`, id).
		Scan(&r.ID, &r.State, &r.Repo, &r.Into, &ids, &started, &ended, &result, &r.Error)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no landing run %s", id)
	}
	if err != nil {
		return nil, err
	}
	r.StartedAt, r.EndedAt = fromMS(started), fromMS(ended)
	if err := json.Unmarshal([]byte(ids), &r.IDs); err != nil {
		return nil, fmt.Errorf("landing run %s: ids: %w", id, err)
	}
	if raw := unblob(result); raw != nil {
		r.Result = new(protocol.LandResult)
		if err := strictjson.Decode(raw, r.Result); err != nil {
			return nil, fmt.Errorf("landing run %s: result: %w", id, err)
		}
	}
	return &r, nil
}
