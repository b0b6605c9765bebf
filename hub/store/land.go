package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
