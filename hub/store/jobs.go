package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/job/lifecycle"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// jobColumns are the jobs table's columns in the order jobArgs and scanJob use.
var jobColumns = []string{
	"id", "seq", "state", "kind", "engine", "model", "isolation",
	"repo", "cwd", "base_ref", "base_sha", "branch", "worktree", "task", "spec",
	"max_micros",
	"created_at", "preparing_at", "running_at", "verifying_at", "ended_at", "updated_at",
	"head_sha", "salvaged", "error", "progress", "summary", "notes",
	"cost_micros", "cost_known", "tokens",
	"shim_pid", "shim_start", "engine_pgid", "engine_start",
	"verify", "evidence", "cursor", "route", "category",
	"target", "forecast", "landed", "rubric", "alerts",
}

var (
	jobSelect = "SELECT " + strings.Join(jobColumns, ", ") + " FROM jobs"
	jobInsert = "INSERT INTO jobs (" + strings.Join(jobColumns, ", ") + ") VALUES (?" +
		strings.Repeat(", ?", len(jobColumns)-1) + ")"
	// jobUpdate writes every column but id (the last argument).
	jobUpdate = "UPDATE jobs SET " + strings.Join(jobColumns[1:], " = ?, ") + " = ? WHERE id = ?"
)

func jobArgs(j *Job) ([]any, error) {
	notes := j.Notes
	if notes == nil {
		notes = []string{}
	}
	nb, err := json.Marshal(notes)
	if err != nil {
		return nil, err
	}
	var alerts []byte
	if len(j.Alerts) > 0 {
		if alerts, err = json.Marshal(j.Alerts); err != nil {
			return nil, err
		}
	}
	return []any{
		j.ID, j.Seq, string(j.State), j.Kind, j.Engine, j.Model, j.Isolation,
		j.Repo, j.Cwd, j.BaseRef, j.BaseSHA, j.Branch, j.Worktree, j.Task, blob(j.Spec),
		j.MaxMicros,
		ms(j.CreatedAt), ms(j.PreparingAt), ms(j.RunningAt), ms(j.VerifyingAt), ms(j.EndedAt), ms(j.UpdatedAt),
		j.HeadSHA, j.Salvaged, j.Error, j.Progress, j.Summary, string(nb),
		j.CostMicros, j.CostKnown, j.Tokens,
		j.ShimPID, int64(j.ShimStart), j.EnginePGID, int64(j.EngineStart),
		blob(j.Verify), blob(j.Evidence), j.Cursor, blob(j.Route), j.Category,
		j.Target, blob(j.Forecast), blob(j.Landed), j.Rubric, blob(alerts),
	}, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanJob(r rowScanner) (*Job, error) {
	var (
		j                                   Job
		state, notes                        string
		spec, verify, evidence, route       sql.NullString
		forecast, landed, alerts            sql.NullString
		created, preparing, running, verif  int64
		ended, updated, shimStart, engStart int64
	)
	err := r.Scan(
		&j.ID, &j.Seq, &state, &j.Kind, &j.Engine, &j.Model, &j.Isolation,
		&j.Repo, &j.Cwd, &j.BaseRef, &j.BaseSHA, &j.Branch, &j.Worktree, &j.Task, &spec,
		&j.MaxMicros,
		&created, &preparing, &running, &verif, &ended, &updated,
		&j.HeadSHA, &j.Salvaged, &j.Error, &j.Progress, &j.Summary, &notes,
		&j.CostMicros, &j.CostKnown, &j.Tokens,
		&j.ShimPID, &shimStart, &j.EnginePGID, &engStart,
		&verify, &evidence, &j.Cursor, &route, &j.Category,
		&j.Target, &forecast, &landed, &j.Rubric, &alerts,
	)
	if err != nil {
		return nil, err
	}
	j.State = protocol.State(state)
	j.Spec, j.Verify, j.Evidence, j.Route = unblob(spec), unblob(verify), unblob(evidence), unblob(route)
	j.Forecast, j.Landed = unblob(forecast), unblob(landed)
	j.CreatedAt, j.PreparingAt, j.RunningAt = fromMS(created), fromMS(preparing), fromMS(running)
	j.VerifyingAt, j.EndedAt, j.UpdatedAt = fromMS(verif), fromMS(ended), fromMS(updated)
	j.ShimStart, j.EngineStart = uint64(shimStart), uint64(engStart)
	if err := json.Unmarshal([]byte(notes), &j.Notes); err != nil {
		return nil, fmt.Errorf("job %s: notes: %w", j.ID, err)
	}
	if len(j.Notes) == 0 {
		j.Notes = nil
	}
	if alerts.Valid && alerts.String != "" {
		if err := json.Unmarshal([]byte(alerts.String), &j.Alerts); err != nil {
			return nil, fmt.Errorf("job %s: alerts: %w", j.ID, err)
		}
	}
	return &j, nil
}

// getJob reads one job through q (the pool or a transaction).
func getJob(ctx context.Context, q querier, id string) (*Job, error) {
	j, err := scanJob(q.QueryRowContext(ctx, jobSelect+" WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("job %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: read job %s: %w", id, err)
	}
	return j, nil
}

func putJob(ctx context.Context, tx *sql.Tx, j *Job) error {
	args, err := jobArgs(j)
	if err != nil {
		return err
	}
	args = append(args[1:], j.ID)
	if _, err := tx.ExecContext(ctx, jobUpdate, args...); err != nil {
		return fmt.Errorf("store: write job %s: %w", j.ID, err)
	}
	return nil
}

// stateData is a state event's data.
type stateData struct {
	From   protocol.State `json:"from"`
	Reason string         `json:"reason"`
}

// CreateJob inserts j in state queued, assigning j.Seq, j.CreatedAt (now),
// j.UpdatedAt and j.Cursor (its "queued" state event). A duplicate id is an
// error.
func (s *Store) CreateJob(ctx context.Context, j *Job, now time.Time) error {
	if j.ID == "" {
		return errors.New("store: a job needs an id")
	}
	rec := *j
	rec.State = protocol.StateQueued
	rec.CreatedAt, rec.UpdatedAt = stamp(now), stamp(now)
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE id = ?`, rec.ID).Scan(&exists); err != nil {
			return err
		}
		if exists > 0 {
			return fmt.Errorf("store: job %s already exists", rec.ID)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs`).Scan(&rec.Seq); err != nil {
			return err
		}
		args, err := jobArgs(&rec)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, jobInsert, args...); err != nil {
			return fmt.Errorf("store: insert job %s: %w", rec.ID, err)
		}
		rec.Cursor, err = appendEvent(ctx, tx, rec.ID, protocol.EventState, string(protocol.StateQueued), nil, now)
		return err
	})
	if err != nil {
		return err
	}
	*j = rec
	return nil
}

// Job reads one job; ErrNotFound when there is none.
func (s *Store) Job(ctx context.Context, id string) (*Job, error) {
	return getJob(ctx, s.db, id)
}

// ListJobs returns jobs newest first, in any of states (nil: every state)
// and, when repo is not empty, of that repo. limit <= 0 means no limit.
func (s *Store) ListJobs(ctx context.Context, states []protocol.State, repo string, limit int) ([]*Job, error) {
	var (
		where []string
		args  []any
	)
	if states != nil {
		if len(states) == 0 {
			return nil, nil
		}
		where = append(where, "state IN ("+placeholders(len(states))+")")
		for _, st := range states {
			args = append(args, string(st))
		}
	}
	if repo != "" {
		where = append(where, "repo = ?")
		args = append(args, repo)
	}
	q := jobSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY seq DESC"
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	return s.queryJobs(ctx, q, args...)
}

// QueuedJobs returns the queued jobs, oldest first.
func (s *Store) QueuedJobs(ctx context.Context) ([]*Job, error) {
	return s.queryJobs(ctx, jobSelect+" WHERE state = ? ORDER BY seq", string(protocol.StateQueued))
}

func (s *Store) queryJobs(ctx context.Context, q string, args ...any) ([]*Job, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	return out, nil
}

func placeholders(n int) string {
	return strings.TrimPrefix(strings.Repeat(", ?", n), ", ")
}

// Admit books a slot and the job's reservation and moves it queued →
// preparing, all in one immediate transaction, so two processes admitting at
// once can neither overfill the slots nor overspend the month. When there is
// no room it returns Admission{Admitted: false} with the reason, and changes
// nothing.
func (s *Store) Admit(ctx context.Context, id string, lim Limits, now time.Time) (Admission, error) {
	var adm Admission
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if j.State != protocol.StateQueued {
			return wrongState("job %s is %s, not queued", id, j.State)
		}
		if err := checkMove(id, j.State, protocol.StatePreparing); err != nil {
			return err
		}
		// Slots: this machine's, or the job's remote queue's.
		queue := ""
		if p, err := DecodeSpec(j.Spec); err == nil {
			queue = p.Queue
		}
		var held int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM slots JOIN jobs ON jobs.id = slots.job_id
			WHERE `+slotQueue+` = ?`, queue).Scan(&held); err != nil {
			return err
		}
		max, known := lim.QueueSlots[queue]
		switch {
		case queue == "" && held >= lim.MaxRunning:
			adm.Reason = fmt.Sprintf("all %d slots are busy", lim.MaxRunning)
			return nil
		case queue != "" && !known:
			adm.Reason = fmt.Sprintf("queue %s is not in config.json: put it back, or stop the job", queue)
			return nil
		case queue != "" && held >= max:
			adm.Reason = fmt.Sprintf("all %d slots of queue %s are busy", max, queue)
			return nil
		}
		month := now.UTC().Format("2006-01")
		t, err := monthTotals(ctx, tx, month)
		if err != nil {
			return err
		}
		if used := t.ChargedMicros + t.ReservedMicros; used+j.MaxMicros > lim.MonthlyCap {
			adm.Reason = fmt.Sprintf("monthly cap: %s of %s spent or reserved; this job asks %s",
				used, lim.MonthlyCap, j.MaxMicros)
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (job_id, month, reserved_micros, opened_at) VALUES (?, ?, ?, ?)`,
			id, month, j.MaxMicros, ms(now)); err != nil {
			return fmt.Errorf("store: reserve for %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO slots (job_id, taken_at) VALUES (?, ?)`, id, ms(now)); err != nil {
			return fmt.Errorf("store: slot for %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, preparing_at = ? WHERE id = ?`,
			string(protocol.StatePreparing), ms(now), id); err != nil {
			return err
		}
		if _, err := appendEvent(ctx, tx, id, protocol.EventState, string(protocol.StatePreparing),
			stateData{From: protocol.StateQueued, Reason: "admitted"}, now); err != nil {
			return err
		}
		adm.Admitted = true
		return nil
	})
	if err != nil {
		return Admission{}, err
	}
	return adm, nil
}

// SetState moves a job to to, stamping running_at or verifying_at the first
// time it enters them, and appends a state event. The move must be one the
// job's state machine (package lifecycle) allows; a caller that also needs
// the job to be in one of from (a precondition of its own) names them, and
// nil means any state the move is allowed from. Only Admit enters preparing
// and only Finish ends a job, so to may be neither queued, preparing nor
// terminal.
func (s *Store) SetState(ctx context.Context, id string, from []protocol.State, to protocol.State, reason string, now time.Time) (int64, error) {
	switch {
	case to.Terminal():
		return 0, fmt.Errorf("store: SetState cannot end job %s (%s); use Finish", id, to)
	case to == protocol.StateQueued || to == protocol.StatePreparing:
		return 0, fmt.Errorf("store: SetState cannot move job %s to %s", id, to)
	case !lifecycle.Known(to):
		return 0, fmt.Errorf("store: unknown state %q", to)
	}
	var cursor int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(from) > 0 && !contains(from, j.State) {
			return wrongState("job %s is %s, not %s", id, j.State, joinStates(from))
		}
		cursor, err = moveState(ctx, tx, j, to, reason, now)
		return err
	})
	return cursor, err
}

// moveState writes j's new state with its phase stamp and appends the state
// event; it refuses a move the state machine does not allow.
func moveState(ctx context.Context, tx *sql.Tx, j *Job, to protocol.State, reason string, now time.Time) (int64, error) {
	from := j.State
	if err := checkMove(j.ID, from, to); err != nil {
		return 0, err
	}
	j.State = to
	switch {
	case to == protocol.StateRunning && j.RunningAt.IsZero():
		j.RunningAt = stamp(now)
	case to == protocol.StateVerifying && j.VerifyingAt.IsZero():
		j.VerifyingAt = stamp(now)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, running_at = ?, verifying_at = ? WHERE id = ?`,
		string(to), ms(j.RunningAt), ms(j.VerifyingAt), j.ID); err != nil {
		return 0, fmt.Errorf("store: move job %s to %s: %w", j.ID, to, err)
	}
	return appendEvent(ctx, tx, j.ID, protocol.EventState, string(to), stateData{From: from, Reason: reason}, now)
}

func contains(states []protocol.State, st protocol.State) bool {
	for _, x := range states {
		if x == st {
			return true
		}
	}
	return false
}

func joinStates(states []protocol.State) string {
	parts := make([]string, len(states))
	for i, st := range states {
		parts[i] = string(st)
	}
	return strings.Join(parts, " or ")
}

// Update runs fn on the current record inside an immediate transaction and
// writes every field back; it appends no event. fn returning an error aborts
// the update. fn must not change the job's identity or lifecycle (ID, Seq,
// State, Cursor): those move only through the methods that keep slots,
// money and the journal in step.
func (s *Store) Update(ctx context.Context, id string, fn func(*Job) error) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		was := *j
		if err := fn(j); err != nil {
			return err
		}
		if j.ID != was.ID || j.Seq != was.Seq || j.State != was.State || j.Cursor != was.Cursor {
			return fmt.Errorf("store: Update of job %s may not change its id, seq, state or cursor", id)
		}
		return putJob(ctx, tx, j)
	})
}

// Finish ends a job in one immediate transaction: it writes the ending,
// closes the job's reservation (if it has an open one) with the real cost,
// or with the whole reservation when the cost is unknown, frees its slot,
// expires its pending questions and appends the terminal state event. A
// known cost above the reservation grows the reservation to it (the growth is
// the row's overrun) and appends a note saying so. It
// reports whether this call closed a reservation; a job already ended gets
// ErrWrongState and nothing changes, so a reservation is closed at most once.
func (s *Store) Finish(ctx context.Context, id string, e Ending, now time.Time) (bool, error) {
	if !e.State.Terminal() {
		return false, fmt.Errorf("store: Finish needs a terminal state, not %q", e.State)
	}
	if e.CostKnown && e.CostMicros < 0 {
		return false, fmt.Errorf("store: job %s: negative cost %d", id, e.CostMicros)
	}
	var closed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			return wrongState("job %s already ended (%s)", id, j.State)
		}
		from := j.State
		if err := checkMove(id, from, e.State); err != nil {
			return err
		}

		var reserved micros.Micros
		var closedAt sql.NullInt64
		err = tx.QueryRowContext(ctx, `SELECT reserved_micros, closed_at FROM ledger WHERE job_id = ?`, id).Scan(&reserved, &closedAt)
		hasRow := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: read reservation of %s: %w", id, err)
		}
		cost := e.CostMicros
		if !e.CostKnown {
			cost = 0
			if hasRow {
				cost = reserved
			}
		}
		// An engine can spend past its reservation. The close then grows the
		// reservation to the real cost and records the growth as the overrun,
		// so a closed row never has charged > reserved and the month counts
		// what was really spent.
		var overrun micros.Micros
		if hasRow && !closedAt.Valid {
			if cost > reserved {
				overrun = cost - reserved
			}
			res, err := tx.ExecContext(ctx, `UPDATE ledger SET reserved_micros = ?, overrun_micros = overrun_micros + ?,
				charged_micros = ?, closed_at = ?, cost_known = ?
				WHERE job_id = ? AND closed_at IS NULL`, reserved+overrun, overrun, cost, ms(now), e.CostKnown, id)
			if err != nil {
				return fmt.Errorf("store: close reservation of %s: %w", id, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			closed = n == 1
		}

		j.State = e.State
		j.EndedAt = stamp(now)
		j.HeadSHA, j.Salvaged, j.Error, j.Summary = e.HeadSHA, e.Salvaged, e.Error, e.Summary
		j.Category = protocol.CategoryOf(e.State, e.Category)
		j.Rubric, j.Alerts = e.Rubric, e.Alerts
		j.CostMicros, j.CostKnown, j.Tokens = cost, e.CostKnown, e.Tokens
		if e.Evidence != nil {
			ev := *e.Evidence
			ev.State = e.State
			if ev.Timings, err = phaseTimings(ctx, tx, id, now, ev.Timings.SetupMS); err != nil {
				return err
			}
			if j.Evidence, err = json.Marshal(&ev); err != nil {
				return fmt.Errorf("store: encode evidence of %s: %w", id, err)
			}
		}
		if err := putJob(ctx, tx, j); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM slots WHERE job_id = ?`, id); err != nil {
			return fmt.Errorf("store: free slot of %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE questions SET status = 'expired', answered_at = ?
			WHERE job_id = ? AND status = 'pending'`, ms(now), id); err != nil {
			return fmt.Errorf("store: expire questions of %s: %w", id, err)
		}
		if closed && overrun > 0 {
			// Before the state event, which stays the job's last.
			note := fmt.Sprintf("the cost %s exceeded the reservation of %s by %s; the reservation grew to match",
				cost, reserved, overrun)
			if _, err := appendEvent(ctx, tx, id, protocol.EventNote, note, nil, now); err != nil {
				return err
			}
		}
		_, err = appendEvent(ctx, tx, id, protocol.EventState, string(e.State), stateData{From: from, Reason: e.Text}, now)
		return err
	})
	if err != nil {
		return false, err
	}
	return closed, nil
}

// CountActive returns how many slots are held and how many jobs wait in the queue.
func (s *Store) CountActive(ctx context.Context) (running int, queued int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM slots), (SELECT COUNT(*) FROM jobs WHERE state = ?)`,
		string(protocol.StateQueued)).Scan(&running, &queued)
	if err != nil {
		return 0, 0, fmt.Errorf("store: count active: %w", err)
	}
	return running, queued, nil
}

// CountStates counts the jobs in each state that has not ended.
func (s *Store) CountStates(ctx context.Context) (map[protocol.State]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM jobs WHERE state IN (?, ?, ?, ?, ?) GROUP BY state`,
		string(protocol.StateQueued), string(protocol.StatePreparing), string(protocol.StateRunning),
		string(protocol.StateNeedsInput), string(protocol.StateVerifying))
	if err != nil {
		return nil, fmt.Errorf("store: count states: %w", err)
	}
	defer rows.Close()
	n := map[protocol.State]int{}
	for rows.Next() {
		var st string
		var c int
		if err := rows.Scan(&st, &c); err != nil {
			return nil, fmt.Errorf("store: count states: %w", err)
		}
		n[protocol.State(st)] = c
	}
	return n, rows.Err()
}

// phaseTimings sums the time a job spent in each state, from its state
// events up to now (its end): the one clock every phase is read from, so
// the phases add up to the total. setupMS is carried through: the shim
// times its setup step inside preparing.
func phaseTimings(ctx context.Context, tx *sql.Tx, id string, now time.Time, setupMS int64) (protocol.Timings, error) {
	rows, err := tx.QueryContext(ctx, `SELECT at, text FROM events WHERE job_id = ? AND kind = ? ORDER BY cursor`, id, protocol.EventState)
	if err != nil {
		return protocol.Timings{}, fmt.Errorf("store: read state events of %s: %w", id, err)
	}
	defer rows.Close()
	t := protocol.Timings{SetupMS: setupMS}
	var (
		first, last int64
		in          protocol.State
	)
	end := ms(now)
	add := func(until int64) {
		d := max(until-last, 0)
		switch in {
		case protocol.StateQueued:
			t.QueuedMS += d
		case protocol.StatePreparing:
			t.PreparingMS += d
		case protocol.StateRunning:
			t.RunningMS += d
		case protocol.StateNeedsInput:
			t.RunningMS += d
			t.NeedsInputMS += d
		case protocol.StateVerifying:
			t.VerifyingMS += d
		}
	}
	for n := 0; rows.Next(); n++ {
		var at int64
		var text string
		if err := rows.Scan(&at, &text); err != nil {
			return protocol.Timings{}, err
		}
		if n == 0 {
			first = at
		} else {
			add(at)
		}
		last, in = at, protocol.State(text)
	}
	if err := rows.Err(); err != nil {
		return protocol.Timings{}, err
	}
	if in != "" {
		add(end)
		t.TotalMS = max(end-first, 0)
	}
	return t, nil
}

// slotQueue is, in a query over jobs, the remote queue a job's slot is of
// ("" for this machine's): its spec's queue.
const slotQueue = `COALESCE(json_extract(CAST(jobs.spec AS TEXT), '$.params.queue'), '')`

// SlotsHeld counts the slots held now, by remote queue ("" for this machine's).
func (s *Store) SlotsHeld(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+slotQueue+`, COUNT(*) FROM slots JOIN jobs ON jobs.id = slots.job_id GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[string]int{}
	for rows.Next() {
		var q string
		var n int
		if err := rows.Scan(&q, &n); err != nil {
			return nil, err
		}
		held[q] = n
	}
	return held, rows.Err()
}
