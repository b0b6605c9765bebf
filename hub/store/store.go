// Package store owns hub's durable state in one SQLite database
// (modernc.org/sqlite, pure Go): jobs, their journal events under one
// monotonically increasing cursor, workers' questions, steering messages,
// the money ledger (integer micro-dollars) and the running slots.
//
// The daemon and every shim open the same file at once, so the store is
// safe across processes: the database is in WAL mode with a busy timeout,
// and every write is one BEGIN IMMEDIATE transaction (taken through the
// driver's _txlock=immediate), so a transaction holds the write lock from
// its first read and never has to upgrade a read lock. The rules that
// span tables (a slot and a reservation are booked together, a reservation
// is closed exactly once) are each decided inside one such transaction.
//
// The store must never hold a transaction open across anything slow: no
// git, no processes, no network, no waiting on a caller inside a
// transaction. Update's fn runs inside the transaction and must only edit
// the record it is given.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/job/lifecycle"
	"github.com/hub-agents/hub/hub/protocol"
	"modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is hub's database. It is safe for concurrent use by many
// goroutines, and by many processes that open the same file.
type Store struct {
	db   *sql.DB
	path string
	// writeTurn queues this process's writers (a one-token semaphore that
	// honours ctx), so they wait in Go instead of polling SQLite's busy
	// handler while each holds a pooled connection; other processes still
	// meet at SQLite's write lock.
	writeTurn chan struct{}
}

// dsnParams are applied to every connection of the pool.
const dsnParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)&_txlock=immediate"

// dsn builds the SQLite URI for path. SQLite decodes %XX in file: URIs, so
// the characters that would end the path or start an escape are escaped.
func dsn(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + p + "?" + dsnParams
}

// Open opens (creating it with mode 0600 if needed) the database at path and
// brings its schema up to date. Several processes may open a fresh path at
// the same moment; each succeeds. A database written by a newer hub, whose
// schema this code does not know, is refused.
func Open(path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store path %s: %w", path, err)
	}
	// Create the file ourselves so SQLite finds it with the right mode; it
	// gives the -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	f.Close()

	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	// A few connections: concurrent readers (WAL) beside the one writer.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, path: abs, writeTurn: make(chan struct{}, 1)}
	// While a fresh file is still being turned into a WAL database, a
	// connection of another process can get SQLITE_BUSY at once (SQLite skips
	// the busy handler where waiting could deadlock a rollback-journal lock
	// upgrade). That window closes for good once the first Open is done, so
	// retry it here rather than anywhere else.
	delay := 5 * time.Millisecond
	for deadline := time.Now().Add(openRetryFor); ; {
		err = s.migrate(context.Background())
		if err == nil {
			return s, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			db.Close()
			return nil, unreadable(abs, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// busyFor bounds how long a write keeps asking for the write lock another
// process holds, beyond SQLite's own busy timeout; busyRetry is the pause
// between asks.
const (
	busyFor   = 2 * time.Minute
	busyRetry = 50 * time.Millisecond
)

// openRetryFor bounds Open's retries on a database that is busy being created.
const openRetryFor = 10 * time.Second

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// SQLite's primary result codes hub tells apart.
const (
	sqliteBusy    = 5  // SQLITE_BUSY
	sqliteCorrupt = 11 // SQLITE_CORRUPT: "database disk image is malformed"
	sqliteNotADB  = 26 // SQLITE_NOTADB: "file is not a database"
)

// UnreadableError is a store file SQLite cannot read: truncated, overwritten,
// or not a database at all. Nothing hub does fixes it, so it says at once
// what the user can do; the jobs' worktrees and branches live in git and
// do not depend on it.
type UnreadableError struct {
	Path string
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("hub's store %s cannot be read (%v)", e.Path, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Hint says what to do about it.
func (e *UnreadableError) Hint() string {
	return fmt.Sprintf("stop hub (hub shutdown), then move it away to start fresh: mv %s %s.broken — "+
		"your jobs' worktrees and hub/* branches stay; their records, questions and the money ledger start empty", e.Path, e.Path)
}

// unreadable turns SQLite's corrupt and not-a-database errors into an
// UnreadableError; others pass through.
func unreadable(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		if c := se.Code() & 0xff; c == sqliteCorrupt || c == sqliteNotADB {
			return &UnreadableError{Path: path, Err: err}
		}
	}
	return err
}

// QuickCheck reads every page of the database (PRAGMA quick_check), so a
// file damaged past the pages Open reads is found when the daemon starts,
// not by the first job that touches a broken page.
func (s *Store) QuickCheck(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return unreadable(s.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return unreadable(s.path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return unreadable(s.path, err)
	}
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return &UnreadableError{Path: s.path, Err: fmt.Errorf("quick_check: %s", strings.Join(problems, "; "))}
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// querier is what both *sql.DB and *sql.Tx offer; read helpers take it so
// they run inside a write transaction or straight on the pool alike.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs fn in one BEGIN IMMEDIATE transaction (the DSN's _txlock) and
// commits it when fn returns nil. fn must use only tx: a second connection
// of the pool taken inside fn would not see the transaction's writes.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	select {
	case s.writeTurn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeTurn }()
	tx, err := s.db.BeginTx(ctx, nil)
	// Another process holding the write lock past SQLite's busy timeout
	// (a long transaction, a stuck tool): keep asking, within busyFor and
	// while the caller waits, rather than drop a job's event or ending.
	// Only BEGIN is retried: nothing of fn has run yet.
	for deadline := time.Now().Add(busyFor); err != nil && isBusy(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: begin: %w", err)
		case <-time.After(busyRetry):
		}
		tx, err = s.db.BeginTx(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// storeError carries a readable message and the sentinel callers check
// with errors.Is.
type storeError struct {
	msg   string
	kind  error
	cause error // the lifecycle's refusal, for errors.As
}

func (e *storeError) Error() string { return e.msg }
func (e *storeError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func notFound(format string, args ...any) error {
	return &storeError{msg: fmt.Sprintf(format, args...), kind: ErrNotFound}
}

func wrongState(format string, args ...any) error {
	return &storeError{msg: fmt.Sprintf(format, args...), kind: ErrWrongState}
}

// checkMove refuses a move the job's state machine does not allow: an
// ErrWrongState that is also a *lifecycle.Error naming both states.
func checkMove(id string, from, to protocol.State) error {
	if err := lifecycle.Check(id, from, to); err != nil {
		return &storeError{msg: err.Error(), kind: ErrWrongState, cause: err}
	}
	return nil
}

// ms stores a time as unix milliseconds; the zero time is 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is the inverse of ms, in UTC.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// nullMS is fromMS for a nullable column (NULL: not yet).
func nullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
}

// stamp is t as the store keeps it: UTC, millisecond precision.
func stamp(t time.Time) time.Time { return fromMS(ms(t)) }

// blob stores JSON bytes as TEXT, nil when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// unblob reads a blob column back; empty is nil.
func unblob(v sql.NullString) []byte {
	if !v.Valid || v.String == "" {
		return nil
	}
	return []byte(v.String)
}

// marshalData turns an event's data into the stored JSON text (nil: none).
func marshalData(data any) (any, error) {
	var raw []byte
	switch d := data.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("store: event data: %w", err)
		}
		raw = b
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("store: event data is not valid JSON")
	}
	return string(raw), nil
}
