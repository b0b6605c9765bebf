//go:build unix

package store

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// helperEnv names the role a re-executed test binary plays (see TestMain).
const helperEnv = "HUB_STORE_HELPER"

func TestMain(m *testing.M) {
	switch role := os.Getenv(helperEnv); role {
	case "":
		os.Exit(m.Run())
	case "open":
		os.Exit(helperOpen())
	case "admit":
		os.Exit(helperAdmit())
	case "crash":
		os.Exit(helperCrash())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, role)
		os.Exit(2)
	}
}

// clock hands out increasing, millisecond-exact instants.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// testHome points HOME and HUB_HOME at fresh temporary directories and
// returns HUB_HOME.
func testHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("HUB_HOME", home)
	return home
}

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(testHome(t), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newJob creates a queued job with the given id and reservation.
func newJob(t *testing.T, s *Store, c *clock, id string, maxMicros micros.Micros) *Job {
	t.Helper()
	j := &Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Repo: "/src/repo", Task: "task " + id,
		Branch: "hub/" + id, MaxMicros: maxMicros}
	if err := s.CreateJob(context.Background(), j, c.now()); err != nil {
		t.Fatal(err)
	}
	return j
}

var bigLimits = Limits{MaxRunning: 100, MonthlyCap: 1_000_000_000}

// admitted creates a job and admits it (state preparing).
func admitted(t *testing.T, s *Store, c *clock, id string, maxMicros micros.Micros) *Job {
	t.Helper()
	newJob(t, s, c, id, maxMicros)
	adm, err := s.Admit(context.Background(), id, bigLimits, c.now())
	if err != nil || !adm.Admitted {
		t.Fatalf("Admit(%s) = %+v, %v", id, adm, err)
	}
	return mustJob(t, s, id)
}

// running creates a job and brings it to running.
func running(t *testing.T, s *Store, c *clock, id string) *Job {
	t.Helper()
	admitted(t, s, c, id, 100_000)
	if _, err := s.SetState(context.Background(), id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", c.now()); err != nil {
		t.Fatal(err)
	}
	return mustJob(t, s, id)
}

func mustJob(t *testing.T, s *Store, id string) *Job {
	t.Helper()
	j, err := s.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func healthy(t *testing.T, s *Store) {
	t.Helper()
	bad, err := s.CheckInvariants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("invariants broken:\n%s", strings.Join(bad, "\n"))
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(testHome(t), "hub.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := newClock()
	newJob(t, s, c, "j1", 0) // makes SQLite write the WAL too
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), got)
		}
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	// Every pooled connection carries the pragmas: check several at once.
	ctx := context.Background()
	var conns []*sql.Conn
	for i := 0; i < 4; i++ {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		var fk, busy, sync int
		if err := conn.QueryRowContext(ctx, `SELECT * FROM pragma_foreign_keys, pragma_busy_timeout, pragma_synchronous`).Scan(&fk, &busy, &sync); err != nil {
			t.Fatal(err)
		}
		if fk != 1 || busy != 10000 || sync != 1 {
			t.Errorf("connection %d: foreign_keys %d, busy_timeout %d, synchronous %d; want 1, 10000, 1", i, fk, busy, sync)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

func TestWriteHonoursContext(t *testing.T) {
	s := openTest(t)
	s.writeTurn <- struct{}{} // another writer of this process holds the turn
	defer func() { <-s.writeTurn }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.CreateJob(ctx, &Job{ID: "j"}, time.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateJob while waiting its turn with a cancelled ctx = %v", err)
	}
}

func TestOpenAgainIsNoOp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(testHome(t), "hub.db")
	c := newClock()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	newJob(t, s, c, "j1", 0)
	s.Close()

	for i := 0; i < 3; i++ {
		s, err = Open(path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+2, err)
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if v != len(migrations) || rows != len(migrations) {
			t.Errorf("open #%d: version %d with %d rows, want %d", i+2, v, rows, len(migrations))
		}
		if _, err := s.Job(ctx, "j1"); err != nil {
			t.Errorf("open #%d lost the job: %v", i+2, err)
		}
		s.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(testHome(t), "hub.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	newer := len(migrations) + 3
	if _, err := s.db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, newer); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err = Open(path)
	want := fmt.Sprintf("hub.db is at schema version %d, this hub knows up to %d; upgrade hub", newer, len(migrations))
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}
}

func TestOpenConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(testHome(t), "hub.db")
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := Open(path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestOpenConcurrentProcesses opens one fresh file from several processes
// released at the same moment: every one must migrate or find it migrated.
func TestOpenConcurrentProcesses(t *testing.T) {
	path := filepath.Join(testHome(t), "hub.db")
	const n = 6
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *strings.Builder
	}
	var procs []proc
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=open", "HUB_STORE_DB="+path, fmt.Sprintf("HUB_STORE_N=%d", i))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &strings.Builder{}
		cmd.Stderr = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the helper is up and about to open.
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("helper %d: %q, %v", i, line, err)
		}
		procs = append(procs, proc{cmd, stdin, out})
	}
	for _, p := range procs { // release them together
		p.stdin.Close()
	}
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v\n%s", i, err, p.out)
		}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	jobs, err := s.ListJobs(context.Background(), nil, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n {
		t.Errorf("%d jobs, want one per helper (%d)", len(jobs), n)
	}
	healthy(t, s)
}

// helperOpen says ready, waits for stdin to close, then opens the store and
// creates one job.
func helperOpen() int {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	s, err := Open(os.Getenv("HUB_STORE_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	j := &Job{ID: "open-" + os.Getenv("HUB_STORE_N"), Task: "t"}
	if err := s.CreateJob(context.Background(), j, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestStoreErrorsWrapSentinels(t *testing.T) {
	err := notFound("job %s not found", "x")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrWrongState) || err.Error() != "job x not found" {
		t.Errorf("notFound: %v", err)
	}
	if diff := cmp.Diff("wrong", wrongState("wrong").Error()); diff != "" {
		t.Error(diff)
	}
}

// TestMigrationOneName: evidence stored before 0.2 (state as "status",
// the worker's words as claimed.summary) reads under the new names after
// the migration; evidence already new, and a job with none, are untouched.
func TestMigrationOneName(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(testHome(t), "hub.db")
	c := newClock()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old", "new", "none"} {
		newJob(t, s, c, id, 0)
	}
	blobs := map[string]string{
		"old": `{"id":"old","status":"failed","claimed":{"summary":"did half","progress":["a"]},"files":[]}`,
		"new": `{"id":"new","state":"succeeded","claimed":{"report":"done"},"files":[]}`,
	}
	for id, b := range blobs {
		if _, err := s.db.Exec(`UPDATE jobs SET evidence = ? WHERE id = ?`, b, id); err != nil {
			t.Fatal(err)
		}
	}
	// A spec as 0.1 stored it: the bare params.
	if _, err := s.db.Exec(`UPDATE jobs SET spec = ? WHERE id = 'old'`, `{"task":"t","verify":"make test","max_usd":0}`); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the migration, as a 0.1 hub left it.
	if _, err := s.db.Exec(`DELETE FROM schema_migrations WHERE version > 3`); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"target", "forecast", "landed", "rubric", "alerts"} { // migrations 6 and 7
		if _, err := s.db.Exec(`ALTER TABLE jobs DROP COLUMN ` + col); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`DROP TABLE land_runs`); err != nil { // migration 8
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]string{
		"old": `{"claimed":{"progress":["a"],"report":"did half"},"files":[],"id":"old","state":"failed"}`,
		"new": `{"claimed":{"report":"done"},"files":[],"id":"new","state":"succeeded"}`,
	}
	for id, w := range want {
		j, err := s.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got, exp any
		if err := json.Unmarshal(j.Evidence, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(w), &exp)
		if diff := cmp.Diff(exp, got); diff != "" {
			t.Errorf("%s's evidence after the migration (-want +got):\n%s", id, diff)
		}
	}
	if j, _ := s.Job(ctx, "none"); len(j.Evidence) != 0 {
		t.Errorf("a job with no evidence got %s", j.Evidence)
	}
	j, _ := s.Job(ctx, "old")
	if p, err := DecodeSpec(j.Spec); err != nil || p.Task != "t" || p.Verify != "make test" || p.MaxUSD == nil || *p.MaxUSD != 0 {
		t.Errorf("the old spec after the migration: %s → %+v, %v", j.Spec, p, err)
	}
}
