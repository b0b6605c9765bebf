//go:build unix

package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// The multi-process admission test: 8 copies of this test binary share one
// database and each runs mpJobs jobs through create → admit → run → finish.
// Every job reserves mpMax. The jobs alternate between two months with
// different caps, so the two limits bind in different ways:
//
//   - month A (even jobs) has a cap no one reaches: only the 3 slots limit it;
//   - month B (odd jobs) has a $0.80 cap. Two $0.30 reservations fit while
//     little is charged; once its one unknown-cost job has been charged its
//     whole reservation, only one month-B job fits at a time, whatever the
//     free slots. (A looser cap, where money bound only with two month-B
//     jobs holding slots and the third slot free, left money unexercised in
//     some runs under the race detector.)
//
// Month B's charges (one unknown cost plus $0.001 for each other job) stay
// under $0.40 by construction, so a lone month-B job always fits
// ($0.40 + $0.30 ≤ $0.80) and every job is admitted in the end.
//
// What breaks it: doing Admit's slot count or month totals before its
// immediate transaction begins (check, then BEGIN and write) lets two
// processes take the last slot or the last dollar at once, and the replay
// below sees 4 slots or more than the cap reserved. (A read on s.db made
// while the transaction already holds the write lock is still safe: no one
// can commit in between.) Dropping
// _txlock=immediate from the DSN makes the transactions deferred: a reader
// that then writes gets SQLITE_BUSY (busy_timeout cannot help a read→write
// upgrade in WAL), so helpers fail. A Finish that does not refuse an ended
// job re-closes the reservation on the second Finish each job gets.
const (
	mpProcs      = 8
	mpJobs       = 24
	mpMax        = 300_000
	mpMaxRunning = 3
	mpCapA       = 1_000_000_000
	mpCapB       = 800_000
)

var (
	mpMonthA = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	mpMonthB = time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
)

// mpPlan is what job i of process p does: its month, and its cost
// (known=false: the whole reservation is charged).
func mpPlan(p, i int) (month time.Time, capMicros, cost micros.Micros, known bool) {
	if i%2 == 0 {
		switch i % 4 {
		case 0:
			return mpMonthA, mpCapA, 100_000, true
		default:
			return mpMonthA, mpCapA, 0, false
		}
	}
	if i == 1 && p == 0 {
		return mpMonthB, mpCapB, 0, false
	}
	return mpMonthB, mpCapB, 1_000, true
}

func mpJobID(p, i int) string { return fmt.Sprintf("p%d-j%02d", p, i) }

// helperAdmit is one process of the test: it runs its jobs one after the
// other, retrying admission, and prints how often it was refused.
func helperAdmit() int {
	p, _ := strconv.Atoi(os.Getenv("HUB_STORE_N"))
	s, err := Open(os.Getenv("HUB_STORE_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	ctx := context.Background()
	// Start together: say ready, wait for the parent to close stdin.
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	start := time.Now()
	refusedSlots, refusedCap := 0, 0
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "process %d: %s\n", p, fmt.Sprintf(format, args...))
		return 1
	}
	for i := 0; i < mpJobs; i++ {
		id := mpJobID(p, i)
		month, capMicros, cost, known := mpPlan(p, i)
		// Stamps run with the wall clock inside the job's month.
		now := func() time.Time { return month.Add(time.Since(start)) }
		if err := s.CreateJob(ctx, &Job{ID: id, Task: "t", MaxMicros: mpMax}, now()); err != nil {
			return fail("create %s: %v", id, err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			adm, err := s.Admit(ctx, id, Limits{MaxRunning: mpMaxRunning, MonthlyCap: capMicros}, now())
			if err != nil {
				return fail("admit %s: %v", id, err)
			}
			if adm.Admitted {
				break
			}
			switch {
			case strings.HasPrefix(adm.Reason, "all "):
				refusedSlots++
			case strings.HasPrefix(adm.Reason, "monthly cap"):
				refusedCap++
			default:
				return fail("admit %s: odd refusal %q", id, adm.Reason)
			}
			if time.Now().After(deadline) {
				return fail("admit %s: still refused after 60s: %s", id, adm.Reason)
			}
			// Back off as the daemon's scheduler would before its next pass.
			time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Microsecond)
		}
		// "Work": a few writes and reads while holding the slot, and a
		// moment of simulated effort so jobs overlap.
		if _, err := s.SetState(ctx, id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", now()); err != nil {
			return fail("run %s: %v", id, err)
		}
		for k := 0; k < 2; k++ {
			if _, err := s.AppendEvent(ctx, id, protocol.EventProgress, fmt.Sprintf("step %d", k), nil, now()); err != nil {
				return fail("progress %s: %v", id, err)
			}
		}
		if _, _, err := s.CountActive(ctx); err != nil {
			return fail("count %s: %v", id, err)
		}
		time.Sleep(time.Duration(5+rand.IntN(6)) * time.Millisecond)
		closed, err := s.Finish(ctx, id, Ending{State: protocol.StateSucceeded, CostKnown: known, CostMicros: cost}, now())
		if err != nil || !closed {
			return fail("finish %s: closed=%v, %v", id, closed, err)
		}
		// A second Finish, as a racing settle would try, must change nothing.
		if closed, err := s.Finish(ctx, id, Ending{State: protocol.StateFailed, CostKnown: true, CostMicros: 1}, now()); err == nil || closed {
			return fail("second finish %s: closed=%v, %v", id, closed, err)
		}
	}
	fmt.Printf("refused slots=%d cap=%d\n", refusedSlots, refusedCap)
	return 0
}

func TestMultiProcessAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	ctx := context.Background()
	path := filepath.Join(testHome(t), "hub.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		out    *bufio.Reader
		errOut bytes.Buffer
	}
	procs := make([]*proc, mpProcs)
	for p := range procs {
		pr := &proc{cmd: exec.CommandContext(cctx, os.Args[0], "-test.run=^$")}
		pr.cmd.Env = append(os.Environ(), helperEnv+"=admit", "HUB_STORE_DB="+path, fmt.Sprintf("HUB_STORE_N=%d", p))
		pr.cmd.Stderr = &pr.errOut
		if pr.stdin, err = pr.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := pr.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		pr.out = bufio.NewReader(stdout)
		if err := pr.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := pr.out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("process %d: %q, %v\n%s", p, line, err, pr.errOut.String())
		}
		procs[p] = pr
	}
	for _, pr := range procs { // release them together
		pr.stdin.Close()
	}
	refusedSlots, refusedCap := 0, 0
	for p, pr := range procs {
		said, _ := io.ReadAll(pr.out)
		if err := pr.cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", p, err, pr.errOut.String())
			continue
		}
		var rs, rc int
		if _, err := fmt.Sscanf(string(said), "refused slots=%d cap=%d", &rs, &rc); err != nil {
			t.Errorf("process %d said %q: %v", p, said, err)
		}
		refusedSlots += rs
		refusedCap += rc
	}
	if t.Failed() {
		t.FailNow()
	}

	// What each job was booked and charged.
	type booking struct {
		month            string
		reserved, charge micros.Micros
	}
	book := map[string]booking{}
	wantCharged := map[string]micros.Micros{}
	for p := 0; p < mpProcs; p++ {
		for i := 0; i < mpJobs; i++ {
			id := mpJobID(p, i)
			row, err := s.Ledger(ctx, id)
			if err != nil {
				t.Fatalf("ledger of %s: %v", id, err)
			}
			month, _, cost, known := mpPlan(p, i)
			want := cost
			if !known {
				want = mpMax
			}
			m := month.Format("2006-01")
			if !row.Closed || row.Month != m || row.ReservedMicros != mpMax || row.ChargedMicros != want || row.CostKnown != known {
				t.Errorf("ledger of %s = %+v; want closed in %s, charged %d, known %v", id, row, m, want, known)
			}
			book[id] = booking{month: row.Month, reserved: row.ReservedMicros, charge: row.ChargedMicros}
			wantCharged[m] += want
		}
	}
	var rows int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM ledger`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != mpProcs*mpJobs {
		t.Errorf("%d ledger rows, want one per job (%d)", rows, mpProcs*mpJobs)
	}

	// Replay the journal in cursor order: the cursor is assigned under the
	// write lock, so this is the order the transactions committed in.
	caps := map[string]micros.Micros{mpMonthA.Format("2006-01"): mpCapA, mpMonthB.Format("2006-01"): mpCapB}
	var (
		slots, peakSlots int
		open             = map[string]micros.Micros{}
		charged          = map[string]micros.Micros{}
		peakOpenB        micros.Micros
		admittedAt       = map[string]int64{}
		endedAt          = map[string]int64{}
		since            int64
	)
	for {
		evs, err := s.Events(ctx, nil, since, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			since = e.Cursor
			if e.Kind != protocol.EventState {
				continue
			}
			b := book[e.JobID]
			switch st := protocol.State(e.Text); {
			case st == protocol.StatePreparing:
				if _, dup := admittedAt[e.JobID]; dup {
					t.Errorf("cursor %d: %s admitted twice", e.Cursor, e.JobID)
				}
				admittedAt[e.JobID] = e.Cursor
				slots++
				open[b.month] += b.reserved
			case st.Terminal():
				if _, dup := endedAt[e.JobID]; dup {
					t.Errorf("cursor %d: %s ended twice", e.Cursor, e.JobID)
				}
				if _, ok := admittedAt[e.JobID]; !ok {
					t.Errorf("cursor %d: %s ended before it was admitted", e.Cursor, e.JobID)
				}
				endedAt[e.JobID] = e.Cursor
				slots--
				open[b.month] -= b.reserved
				charged[b.month] += b.charge
			default:
				continue
			}
			peakSlots = max(peakSlots, slots)
			if slots > mpMaxRunning {
				t.Errorf("cursor %d: %d slots held, at most %d allowed", e.Cursor, slots, mpMaxRunning)
			}
			if m := b.month; charged[m]+open[m] > caps[m] {
				t.Errorf("cursor %d: month %s has %s charged + %s reserved, over its cap %s",
					e.Cursor, m, charged[m], open[m], caps[m])
			}
			if b.month == mpMonthB.Format("2006-01") {
				peakOpenB = max(peakOpenB, open[b.month])
			}
		}
	}
	if len(admittedAt) != mpProcs*mpJobs || len(endedAt) != mpProcs*mpJobs {
		t.Errorf("%d admissions and %d endings, want %d each", len(admittedAt), len(endedAt), mpProcs*mpJobs)
	}
	for m, want := range wantCharged {
		tot, err := s.MonthTotals(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if tot.ChargedMicros != want || tot.ReservedMicros != 0 || charged[m] != want {
			t.Errorf("month %s: totals %+v, replayed charge %d; want charged %d, nothing reserved", m, tot, charged[m], want)
		}
	}
	if running, queued, err := s.CountActive(ctx); running != 0 || queued != 0 || err != nil {
		t.Errorf("CountActive = %d, %d, %v after every job ended", running, queued, err)
	}
	healthy(t, s)

	// The test means something only if both limits were hit.
	t.Logf("peak slots %d, peak month-B reserved %s, refusals: %d for slots, %d for money",
		peakSlots, peakOpenB, refusedSlots, refusedCap)
	if peakSlots != mpMaxRunning || refusedSlots == 0 || refusedCap == 0 {
		t.Errorf("limits not exercised: peak slots %d, refusals %d for slots, %d for money", peakSlots, refusedSlots, refusedCap)
	}
}
