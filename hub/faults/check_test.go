//go:build linux

package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// figures are what a case counts; every one must be 0.
type figures struct {
	WorkLost    int // files the worker wrote that are neither on the branch nor where the error says they stay
	Unreadable  int // records (status, result with evidence, events) that could not be read
	ClosedTwice int // jobs with more than one ending in the journal
	LeftOpen    int // ended jobs whose reservation is still open, or admitted jobs without one
	Orphans     int // processes of the run still alive after its jobs ended
	// Crossed counts the git boundary's checks a hostile-git case broke: a
	// program the worker planted ran on the host, the user's repository or
	// another job's branch changed, a file missed its branch, a process
	// was left.
	Crossed int
	// Bad input and hand-overs: an answer that took over answerLimit, a
	// refusal without a hint (or an input not refused), a refused input
	// that left something made, two daemons serving one HUB_HOME at once.
	Hung, Unhinted, HalfMade, TwoDaemons int
	// Breached counts the shared-channel cases whose fence did not hold:
	// a job's work reached another job, the cache, the host, the user's
	// repository or the network where its level promises it cannot.
	Breached int
}

func (f *figures) add(g figures) {
	f.Hung += g.Hung
	f.Unhinted += g.Unhinted
	f.HalfMade += g.HalfMade
	f.TwoDaemons += g.TwoDaemons
	f.WorkLost += g.WorkLost
	f.Unreadable += g.Unreadable
	f.ClosedTwice += g.ClosedTwice
	f.LeftOpen += g.LeftOpen
	f.Orphans += g.Orphans
	f.Crossed += g.Crossed
	f.Breached += g.Breached
}

func (f figures) zero() bool { return f == figures{} }

// work is what one job's worker wrote before the fault: path → content.
// kept, when set, is where the files may stay instead of the branch (a
// worktree the job's error names, after a commit that could not be made).
type work struct {
	id    string
	files map[string]string
	kept  string
	repo  string // default: the case's repo
}

// checkAll runs the four checks on the case's jobs, with a daemon up. The
// daemon is then shut down and nothing of the case may be left running.
func (w *world) checkAll(ctx context.Context, jobs ...work) figures {
	w.t.Helper()
	var f figures
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	for _, j := range jobs {
		f.WorkLost += w.checkWork(j)
		f.Unreadable += w.checkRecords(ctx, j.id)
	}
	twice, open := w.checkLedger(ctx, ids)
	f.ClosedTwice, f.LeftOpen = twice, open
	// The daemon goes the way a user stops it; then nothing of the run may remain.
	if w.c != nil {
		pid := w.c.Info.PID
		_, _ = w.c.Daemon().Shutdown(ctx, protocol.Empty{})
		<-w.c.DisconnectNotify()
		w.c.Close()
		w.c = nil
		waitGone(ctx, w.t, pid)
	}
	left := leftovers(w.dir, 10*time.Second)
	for _, p := range left {
		w.t.Errorf("orphan: pid %d (%s) is still alive after the run", p.pid, p.cmd)
	}
	f.Orphans = len(left)
	return f
}

// checkWork: every file the worker wrote is on the branch hub/<id> (or,
// when the job says its commit failed, still in the worktree it names).
func (w *world) checkWork(j work) int {
	w.t.Helper()
	lost := 0
	repo := j.repo
	if repo == "" {
		repo = w.repo
	}
	for path, want := range j.files {
		got, err := w.gitErr(repo, "show", "hub/"+j.id+":"+path)
		if err == nil && got == strings.TrimSpace(want) {
			continue
		}
		if j.kept != "" {
			if b, err := os.ReadFile(filepath.Join(j.kept, path)); err == nil && string(b) == want {
				continue
			}
		}
		w.t.Errorf("work lost: job %s wrote %s, but the branch has %q (%v)", j.id, path, got, err)
		lost++
	}
	return lost
}

// endsWithEnding reports whether events end with the job's ending, bar
// what comes after it by design: the notes of what was removed (cleanup,
// gc) or of its landing, its conflict forecasts and its landing.
func endsWithEnding(events []protocol.Event) bool {
	n := len(events)
	for n > 0 && afterEnding(events[n-1]) {
		n--
	}
	return n > 0 && events[n-1].Kind == protocol.EventState && protocol.State(events[n-1].Text).Terminal()
}

// afterEnding reports whether ev is one of the events an ended job's
// journal may gain.
func afterEnding(ev protocol.Event) bool {
	switch ev.Kind {
	case protocol.EventConflict, protocol.EventLand:
		return true
	case protocol.EventNote:
		for _, p := range []string{"cleanup: ", "gc: ", "land: "} {
			if strings.HasPrefix(ev.Text, p) {
				return true
			}
		}
	}
	return false
}

// checkRecords: job/status, job/result with evidence and job/events all
// answer for the job, the record says it ended, the evidence is there and
// the journal in the store ends with its ending.
func (w *world) checkRecords(ctx context.Context, id string) int {
	w.t.Helper()
	bad := 0
	fail := func(format string, args ...any) {
		w.t.Errorf("record of %s: "+format, append([]any{id}, args...)...)
		bad++
	}
	if w.c == nil {
		w.startDaemon(ctx)
	}
	if st, err := w.c.Daemon().JobStatus(ctx, protocol.IDParams{ID: id}); err != nil {
		fail("job/status: %v", err)
	} else if !st.State.Terminal() {
		fail("still %s", st.State)
	}
	if rr, err := w.c.Daemon().JobResult(ctx, protocol.ResultParams{ID: id, Evidence: true, Full: true}); err != nil {
		fail("job/result: %v", err)
	} else {
		switch {
		case rr.Evidence == nil:
			fail("job/result has no evidence")
		case rr.Evidence.ID != id || rr.Evidence.State != rr.State:
			fail("evidence of %s says %s, the record %s", rr.Evidence.ID, rr.Evidence.State, rr.State)
		case rr.Summary == "" || rr.Full == "":
			fail("job/result has no summary")
		}
	}
	if er, err := w.c.Daemon().JobEvents(ctx, protocol.EventsParams{ID: id, Limit: 10000}); err != nil {
		fail("job/events: %v", err)
	} else if !endsWithEnding(er.Events) {
		fail("job/events does not end with the job's ending (%d events)", len(er.Events))
	}
	return bad
}

// checkLedger reads the store: each job has one ending in its journal and,
// when it was admitted, one reservation, closed; CheckInvariants is silent.
func (w *world) checkLedger(ctx context.Context, ids []string) (twice, open int) {
	w.t.Helper()
	st, err := store.Open(w.paths.DB())
	if err != nil {
		w.t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, ids, 0, 100000)
	if err != nil {
		w.t.Fatal(err)
	}
	endings, admissions := map[string]int{}, map[string]int{}
	for _, e := range evs {
		if e.Kind != protocol.EventState {
			continue
		}
		switch s := protocol.State(e.Text); {
		case s == protocol.StatePreparing:
			admissions[e.JobID]++
		case s.Terminal():
			endings[e.JobID]++
		}
	}
	for _, id := range ids {
		if endings[id] > 1 || admissions[id] > 1 {
			w.t.Errorf("job %s: %d admissions and %d endings in its journal", id, admissions[id], endings[id])
			twice++
		}
		row, err := st.Ledger(ctx, id)
		switch {
		case err != nil && admissions[id] > 0:
			w.t.Errorf("job %s was admitted but has no reservation: %v", id, err)
			open++
		case err == nil && !row.Closed:
			w.t.Errorf("job %s ended with its reservation open: %+v", id, row)
			open++
		}
	}
	bad, err := st.CheckInvariants(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, b := range bad {
		w.t.Errorf("ledger invariant: %s", b)
		open++
	}
	return twice, open
}

// leftover is a live process of a case.
type leftover struct {
	pid int
	cmd string
}

// leftovers returns the live processes (zombies aside) that carry dir in
// their environment, command line or working directory, once none has
// gone away for a while or the wait is over: a shim that just ended a job
// may still be telling the daemon.
func leftovers(dir string, wait time.Duration) []leftover {
	end := time.Now().Add(wait)
	for {
		ps := scan(dir)
		if len(ps) == 0 || time.Now().After(end) {
			return ps
		}
		time.Sleep(50 * time.Millisecond) // processes we are not the parent of: no way to wait on them
	}
}

func scan(dir string) []leftover {
	ents, _ := os.ReadDir("/proc")
	var out []leftover
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		base := "/proc/" + e.Name()
		env, _ := os.ReadFile(base + "/environ")
		cmd, _ := os.ReadFile(base + "/cmdline")
		cwd, _ := os.Readlink(base + "/cwd")
		if bytes.Contains(env, []byte(dir)) || bytes.Contains(cmd, []byte(dir)) || strings.HasPrefix(cwd, dir) {
			out = append(out, leftover{pid: pid, cmd: strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))})
		}
	}
	return out
}

// outcome is one case's line in the matrix.
type outcome struct {
	Test, Fault, Step string
	Runs              int
	Ends              []string // how the jobs ended, state: error
	Figures           figures
	Took              time.Duration
	Slowest           time.Duration // the slowest run's Took
}

// sha is a commit id in an error, which differs from run to run.
var sha = regexp.MustCompile(`\b[0-9a-f]{40}\b`)

// ending is "state: error" for the matrix, the error cut to max bytes.
func ending(st protocol.JobStatus, max int) string {
	if st.Error == "" {
		return string(st.State)
	}
	e := sha.ReplaceAllString(st.Error, "<sha>")
	if len(e) > max {
		e = strings.ToValidUTF8(e[:max], "") + "…"
	}
	return fmt.Sprintf("%s: %s", st.State, e)
}

// report records a case's outcome for the matrix and fails the test when a
// figure is not 0.
func report(t *testing.T, o outcome) {
	t.Helper()
	record(o)
	if !o.Figures.zero() {
		t.Errorf("figures not all 0: %+v", o.Figures)
	}
}
