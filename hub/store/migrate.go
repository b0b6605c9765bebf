package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// migrations are applied in order; migration i brings the schema to
// version i+1. Append new ones; never edit one that has shipped.
var migrations = []string{
	// 1: the first schema.
	`
CREATE TABLE jobs (
	id           TEXT PRIMARY KEY,
	seq          INTEGER NOT NULL UNIQUE,
	state        TEXT NOT NULL,
	kind         TEXT NOT NULL DEFAULT '',
	engine       TEXT NOT NULL DEFAULT '',
	model        TEXT NOT NULL DEFAULT '',
	isolation    TEXT NOT NULL DEFAULT '',
	repo         TEXT NOT NULL DEFAULT '',
	cwd          TEXT NOT NULL DEFAULT '',
	base_ref     TEXT NOT NULL DEFAULT '',
	base_sha     TEXT NOT NULL DEFAULT '',
	branch       TEXT NOT NULL DEFAULT '',
	worktree     TEXT NOT NULL DEFAULT '',
	task         TEXT NOT NULL DEFAULT '',
	spec         TEXT,
	max_micros   INTEGER NOT NULL DEFAULT 0 CHECK (max_micros >= 0),
	created_at   INTEGER NOT NULL DEFAULT 0,
	preparing_at INTEGER NOT NULL DEFAULT 0,
	running_at   INTEGER NOT NULL DEFAULT 0,
	verifying_at INTEGER NOT NULL DEFAULT 0,
	ended_at     INTEGER NOT NULL DEFAULT 0,
	updated_at   INTEGER NOT NULL DEFAULT 0,
	head_sha     TEXT NOT NULL DEFAULT '',
	salvaged     INTEGER NOT NULL DEFAULT 0,
	error        TEXT NOT NULL DEFAULT '',
	progress     TEXT NOT NULL DEFAULT '',
	summary      TEXT NOT NULL DEFAULT '',
	notes        TEXT NOT NULL DEFAULT '[]',
	cost_micros  INTEGER NOT NULL DEFAULT 0,
	cost_known   INTEGER NOT NULL DEFAULT 0,
	tokens       INTEGER NOT NULL DEFAULT 0,
	shim_pid     INTEGER NOT NULL DEFAULT 0,
	shim_start   INTEGER NOT NULL DEFAULT 0,
	engine_pgid  INTEGER NOT NULL DEFAULT 0,
	engine_start INTEGER NOT NULL DEFAULT 0,
	verify       TEXT,
	evidence     TEXT,
	cursor       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_state ON jobs (state);
CREATE INDEX jobs_repo ON jobs (repo, seq);

CREATE TABLE events (
	cursor INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id TEXT NOT NULL REFERENCES jobs (id),
	at     INTEGER NOT NULL,
	kind   TEXT NOT NULL,
	text   TEXT NOT NULL DEFAULT '',
	data   TEXT
);
CREATE INDEX events_job ON events (job_id, cursor);

CREATE TABLE questions (
	id          TEXT PRIMARY KEY,
	job_id      TEXT NOT NULL REFERENCES jobs (id),
	kind        TEXT NOT NULL DEFAULT '',
	text        TEXT NOT NULL,
	context     TEXT NOT NULL DEFAULT '',
	asked_at    INTEGER NOT NULL DEFAULT 0,
	expires_at  INTEGER NOT NULL DEFAULT 0,
	status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'expired')),
	answered_at INTEGER,
	answer      TEXT NOT NULL DEFAULT '',
	cursor      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX questions_job ON questions (job_id, status, cursor);

CREATE TABLE steers (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id       TEXT NOT NULL REFERENCES jobs (id),
	text         TEXT NOT NULL,
	created_at   INTEGER NOT NULL DEFAULT 0,
	delivered_at INTEGER
);
CREATE INDEX steers_job ON steers (job_id, delivered_at, id);

CREATE TABLE ledger (
	job_id          TEXT NOT NULL UNIQUE REFERENCES jobs (id),
	month           TEXT NOT NULL,
	reserved_micros INTEGER NOT NULL CHECK (reserved_micros >= 0),
	charged_micros  INTEGER NOT NULL DEFAULT 0,
	opened_at       INTEGER NOT NULL DEFAULT 0,
	closed_at       INTEGER,
	cost_known      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX ledger_month ON ledger (month, closed_at);

CREATE TABLE slots (
	job_id   TEXT PRIMARY KEY REFERENCES jobs (id),
	taken_at INTEGER NOT NULL
);
`,
	// 2: the router's record of each start, quota signals, and a ledger
	// that refuses to close a reservation twice.
	`
ALTER TABLE jobs ADD COLUMN route TEXT;

ALTER TABLE ledger ADD COLUMN overrun_micros INTEGER NOT NULL DEFAULT 0 CHECK (overrun_micros >= 0);
CREATE TRIGGER ledger_close_once BEFORE UPDATE ON ledger
	WHEN OLD.closed_at IS NOT NULL
	BEGIN SELECT RAISE(ABORT, 'ledger: reservation already closed'); END;
CREATE TRIGGER ledger_keep BEFORE DELETE ON ledger
	BEGIN SELECT RAISE(ABORT, 'ledger: reservations are never deleted'); END;

CREATE TABLE quota (
	engine     TEXT NOT NULL,
	name       TEXT NOT NULL,
	used_pct   REAL NOT NULL DEFAULT 0,
	exhausted  INTEGER NOT NULL DEFAULT 0,
	resets_at  INTEGER NOT NULL DEFAULT 0,
	source     TEXT NOT NULL DEFAULT '',
	confidence TEXT NOT NULL DEFAULT '',
	read_at    INTEGER NOT NULL,
	PRIMARY KEY (engine, name)
);
`,
	// 3: why a job did not succeed, as a category (setup, worker, verify, …).
	`
ALTER TABLE jobs ADD COLUMN category TEXT NOT NULL DEFAULT '';
`,
	// 4: the evidence speaks the protocol's one name per concept (0.2): a
	// job's state is "state" (was "status"), the worker's final words are
	// claimed.report (was claimed.summary). Stored evidence is decoded
	// strictly, so a blob under the old names would be refused, not zeroed.
	`
UPDATE jobs SET evidence = json_remove(json_set(evidence, '$.state', json_extract(evidence, '$.status')), '$.status')
	WHERE evidence IS NOT NULL AND json_valid(evidence) AND json_type(evidence, '$.status') IS NOT NULL;
UPDATE jobs SET evidence = json_remove(json_set(evidence, '$.claimed.report', json_extract(evidence, '$.claimed.summary')), '$.claimed.summary')
	WHERE evidence IS NOT NULL AND json_valid(evidence) AND json_type(evidence, '$.claimed.summary') IS NOT NULL;
`,
	// 5: a job's spec is a versioned record, {"v": 1, "params": StartParams},
	// decoded strictly (store.DecodeSpec); the bare params of older jobs are
	// wrapped as version 1.
	`
UPDATE jobs SET spec = json_object('v', 1, 'params', json(spec))
	WHERE spec IS NOT NULL AND json_valid(spec) AND json_type(spec, '$.v') IS NULL;
`,
	// 6: landing: the branch a job's work would land on, hub's forecast of
	// that (protocol.Forecast), and the record of its landing (protocol.Landing).
	`
ALTER TABLE jobs ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN forecast TEXT;
ALTER TABLE jobs ADD COLUMN landed TEXT;
`,
	// 7: the verdict an ended job shows in every status: its rubric's
	// verdict and what it did beyond its branch (a JSON array of lines).
	`
ALTER TABLE jobs ADD COLUMN rubric TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN alerts TEXT;
`,
	// 8: landing runs (protocol.LandRun): a landing's own record, from the
	// moment it is accepted to its one end.
	`
CREATE TABLE land_runs (
	id         TEXT PRIMARY KEY,
	state      TEXT NOT NULL,
	repo       TEXT NOT NULL,
	into_ref   TEXT NOT NULL,
	ids        TEXT NOT NULL,
	started_at INTEGER NOT NULL,
	ended_at   INTEGER NOT NULL DEFAULT 0,
	result     TEXT,
	error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX land_runs_state ON land_runs (state);
`,
}

// migrate brings the schema up to date, one immediate transaction per
// migration. Each transaction re-reads the version under the write lock,
// so processes migrating the same fresh file at once each apply nothing
// twice: the loser of a race finds the work done and moves on.
func (s *Store) migrate(ctx context.Context) error {
	for {
		done := false
		err := s.write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER PRIMARY KEY,
				applied_at INTEGER NOT NULL)`); err != nil {
				return err
			}
			var v int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
				return err
			}
			if v > len(migrations) {
				return &schemaError{msg: fmt.Sprintf("%s is at schema version %d, this hub knows up to %d; upgrade hub",
					filepath.Base(s.path), v, len(migrations))}
			}
			if v == len(migrations) {
				done = true
				return nil
			}
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("schema migration %d: %w", v+1, err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				v+1, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			var se *schemaError
			if errors.As(err, &se) {
				return err
			}
			return fmt.Errorf("open %s: %w", s.path, err)
		}
		if done {
			return nil
		}
	}
}

// SchemaVersion is the schema version of the open database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// schemaError is a schema refusal, already worded for the user.
type schemaError struct{ msg string }

func (e *schemaError) Error() string { return e.msg }
