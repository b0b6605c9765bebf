//go:build linux

package faults

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver hub's store uses

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// lockerEnv makes this test binary the locker: another process that takes
// the store's write lock (BEGIN EXCLUSIVE, with a write of its own), holds
// it until the file named by lockerRelease appears, and rolls back.
const (
	lockerEnv     = "HUB_FAULTS_LOCKER"
	lockerRelease = "HUB_FAULTS_LOCKER_RELEASE"
)

// runLocker is the locker's main.
func runLocker(db, release string) int {
	ctx := context.Background()
	d, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer d.Close()
	conn, err := d.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, q := range []string{"BEGIN EXCLUSIVE", "CREATE TABLE faults_lock (x)", "INSERT INTO faults_lock VALUES (1)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", q, err)
			return 1
		}
	}
	fmt.Println("locked")
	for {
		if _, err := os.Stat(release); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // another process's file: nothing to wait on
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// lock starts the locker on the case's store and returns once it holds the
// lock; release lets it go and waits for it to exit.
func (w *world) lock(ctx context.Context) (release func()) {
	w.t.Helper()
	rel := filepath.Join(w.ctl, fmt.Sprintf("release-%d", time.Now().UnixNano()))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append([]string(nil), w.vars...), lockerEnv+"="+w.paths.DB(), lockerRelease+"="+rel)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		w.t.Fatalf("the locker did not take the lock: %q %v", line, err)
	}
	return func() {
		_ = os.WriteFile(rel, nil, 0o644)
		if err := cmd.Wait(); err != nil {
			w.t.Errorf("the locker: %v", err)
		}
	}
}

// startTimed is job/start, timed, in the background.
type started struct {
	id   string
	err  error
	took time.Duration
}

func (w *world) startTimed(ctx context.Context, p protocol.StartParams) <-chan started {
	p.Repo, p.Engine = w.repo, "exec"
	ch := make(chan started, 1)
	c := w.c
	go func() {
		t0 := time.Now()
		r, err := c.Daemon().JobStart(ctx, p)
		s := started{err: err, took: time.Since(t0)}
		if r != nil {
			s.id = r.ID
		}
		ch <- s
	}()
	return ch
}

// TestLockedStore: another process holds the store's write lock. Held
// for less than the store's busy timeout, a start waits and succeeds and
// reads go on; held past it, a start fails with an error that says the
// store is locked and leaves nothing behind, while a job that ends under
// the lock still ends whole once the lock is gone.
func TestLockedStore(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		lockCase(t)
	}
}

// shortLock is under the store's busy timeout (10 s), longLock past it.
const (
	shortLock = 2 * time.Second
	longLock  = 13 * time.Second
)

func lockCase(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	w.makeRepo(filepath.Join(w.dir, "repo"))
	w.startDaemon(ctx)
	aID := w.start(ctx, protocol.StartParams{Task: "ends under the lock",
		Exec: `echo "before a" > before.txt; hub progress parked; ` + w.gateCmd("a") + `; echo "after a" > after.txt`, Verify: "test -f after.txt"})
	w.until(ctx, aID, func(st protocol.JobStatus) bool { return st.Progress == "parked" })
	var notes []string

	// Short: reads go on, a start waits for the lock and succeeds.
	release := w.lock(ctx)
	t0 := time.Now()
	w.status(ctx, aID)
	if d := time.Since(t0); d > time.Second {
		t.Errorf("job/status took %s under a write lock; reads must not wait", d)
	}
	bCh := w.startTimed(ctx, protocol.StartParams{Task: "started under a short lock", Exec: `echo b > b.txt`, Verify: "test -f b.txt"})
	time.Sleep(shortLock) // the fault's length
	release()
	b := <-bCh
	if b.err != nil {
		t.Errorf("job/start under a %s lock failed: %v", shortLock, b.err)
	}
	notes = append(notes, fmt.Sprintf("start under a %s lock: waited %s and succeeded", shortLock, b.took.Round(100*time.Millisecond)))

	// Long: job a ends under the lock; a start gives up.
	release = w.lock(ctx)
	w.openGate("a")
	cCh := w.startTimed(ctx, protocol.StartParams{Task: "started under a long lock", Exec: `echo c > c.txt`, Verify: "test -f c.txt"})
	time.Sleep(longLock) // the fault's length
	release()
	c := <-cCh
	ids := []string{aID, b.id}
	jobs := []work{{id: aID, files: map[string]string{"before.txt": "before a\n", "after.txt": "after a\n"}},
		{id: b.id, files: map[string]string{"b.txt": "b\n"}}}
	switch {
	case c.err == nil:
		notes = append(notes, fmt.Sprintf("start under a %s lock: waited %s and succeeded", longLock, c.took.Round(100*time.Millisecond)))
		ids = append(ids, c.id)
		jobs = append(jobs, work{id: c.id, files: map[string]string{"c.txt": "c\n"}})
	default:
		msg := errText(c.err)
		if !strings.Contains(msg, "locked") && !strings.Contains(msg, "busy") {
			t.Errorf("job/start under a %s lock failed, but not saying the store is locked: %s", longLock, msg)
		}
		notes = append(notes, fmt.Sprintf("start under a %s lock: failed after %s: %s", longLock, c.took.Round(100*time.Millisecond), msg))
		// Nothing half-made: no job with that task.
		for _, j := range hubtest.Daemon(t, w.c).JobList(ctx, protocol.ListParams{}).Jobs {
			if j.Task == "started under a long lock" {
				t.Errorf("the failed start left job %s (%s) behind", j.ID, j.State)
			}
		}
	}
	ends := w.waitEnd(ctx, ids...)
	for _, e := range ends {
		if e.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", e.ID, e.State, e.Error)
		}
		notes = append(notes, w.ending(e))
	}
	// Every event job a's shim meant to record is in the store.
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, []string{aID}, 0, 1000)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[protocol.EventKind]int{}
	for _, e := range evs {
		kinds[e.Kind]++
	}
	lost := 0
	for _, k := range []protocol.EventKind{protocol.EventCommand, protocol.EventCommit, protocol.EventVerify} {
		if kinds[k] == 0 {
			t.Errorf("job a's %s event, recorded under the lock, is not in the store", k)
			lost++
		}
	}
	f := w.checkAll(ctx, jobs...)
	f.WorkLost += lost
	report(t, outcome{Test: "TestLockedStore", Fault: fmt.Sprintf("the store's write lock held by another process (BEGIN EXCLUSIVE and a write): %s, then %s while a job ends", shortLock, longLock),
		Ends: notes, Figures: f, Took: time.Since(began)})
}
