package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// The ledger benchmark: reservations per second from ledgerProcs processes
// sharing one database, with the ledger's invariant checked after every run.
//
// Each worker process runs ledgerCycles cycles of the calls every job makes
// on the money ledger: CreateJob → Admit (slot and reservation, one
// immediate transaction) → SetState preparing→running → Finish (closes the
// reservation with a known cost, frees the slot). The reference is one
// process running the same total, ledgerProcs × ledgerCycles cycles, on a
// fresh database of its own, so both runs do exactly the same work and the
// ratio of their rates is what the extra processes buy (or cost) against the
// one SQLite write lock they all meet at.

// roleEnv names the role a re-executed copy of this binary plays; main runs
// ledgerWorker and exits with its code when it is "ledger".
const roleEnv = "HUB_BENCH_ROLE"

// The worker's parameters, passed in its environment.
const (
	ledgerDBEnv     = "HUB_BENCH_LEDGER_DB"     // the database file
	ledgerCyclesEnv = "HUB_BENCH_LEDGER_CYCLES" // cycles to run
	ledgerIDEnv     = "HUB_BENCH_LEDGER_ID"     // prefix of its job ids, unique per process
)

const (
	// ledgerProcs is how many processes share the database.
	ledgerProcs = 8
	// ledgerCycles is the cycles each of them runs: one repetition (the 8
	// processes and the single-process reference, 800 cycles in all, with
	// the spawning and the checks) took 1.6–2.5 s on a 2-core machine.
	ledgerCycles = 50
	// ledgerReserve is what each job asks for ($0.10); every job costs less
	// (ledgerCost), so no reservation grows.
	ledgerReserve micros.Micros = 100_000
	// The limits are chosen never to bind, so the figure is the ledger's own
	// throughput, not contention for slots or money: a worker holds at most
	// one slot at a time, so with one slot per process a refusal can only
	// mean a slot leaked (the harness treats it as a breach); the monthly cap
	// ($1,000,000,000) is far beyond anything a run can reserve.
	ledgerMaxRunning = ledgerProcs
	ledgerCap        = 1_000_000_000 * micros.PerUSD
	// ledgerAdmitFor bounds how long a worker keeps retrying a refused Admit.
	ledgerAdmitFor = 30 * time.Second
	// ledgerRunFor bounds one run of the workers.
	ledgerRunFor = 3 * time.Minute
)

// ledgerJobID is the id of cycle i of the process with prefix p.
func ledgerJobID(p string, i int) string { return fmt.Sprintf("%s-j%05d", p, i) }

// ledgerCost is the known cost job i is finished with: small, below its
// reservation, and different per job so a charge cannot be right by luck.
func ledgerCost(i int) micros.Micros { return 1_000 + micros.Micros(i%50_000) }

// ledgerWorker is one worker process: it opens the database, says "ready",
// waits until stdin is closed, runs its cycles and prints one line:
// "reservations=N refused=R elapsed_ms=T". It returns the process's exit code.
func ledgerWorker() int {
	prefix := os.Getenv(ledgerIDEnv)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "ledger worker %s: %s\n", prefix, fmt.Sprintf(format, args...))
		return 1
	}
	n, err := strconv.Atoi(os.Getenv(ledgerCyclesEnv))
	if err != nil || n <= 0 || prefix == "" || os.Getenv(ledgerDBEnv) == "" {
		return fail("needs %s, %s (> 0) and %s", ledgerDBEnv, ledgerCyclesEnv, ledgerIDEnv)
	}
	s, err := store.Open(os.Getenv(ledgerDBEnv))
	if err != nil {
		return fail("%v", err)
	}
	defer s.Close()
	ctx := context.Background()
	// Start together: say ready, wait for the parent to close stdin.
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)

	start := time.Now()
	lim := store.Limits{MaxRunning: ledgerMaxRunning, MonthlyCap: ledgerCap}
	refused := 0
	for i := 0; i < n; i++ {
		id := ledgerJobID(prefix, i)
		if err := s.CreateJob(ctx, &store.Job{ID: id, Task: "bench", MaxMicros: ledgerReserve}, time.Now()); err != nil {
			return fail("create %s: %v", id, err)
		}
		deadline := time.Now().Add(ledgerAdmitFor)
		for {
			adm, err := s.Admit(ctx, id, lim, time.Now())
			if err != nil {
				return fail("admit %s: %v", id, err)
			}
			if adm.Admitted {
				break
			}
			refused++
			if time.Now().After(deadline) {
				return fail("admit %s: still refused after %s: %s", id, ledgerAdmitFor, adm.Reason)
			}
			// Back off as the daemon's scheduler would before its next pass.
			time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Microsecond)
		}
		if _, err := s.SetState(ctx, id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", time.Now()); err != nil {
			return fail("run %s: %v", id, err)
		}
		closed, err := s.Finish(ctx, id, store.Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: ledgerCost(i)}, time.Now())
		if err != nil || !closed {
			return fail("finish %s: closed=%v, %v", id, closed, err)
		}
	}
	fmt.Printf("reservations=%d refused=%d elapsed_ms=%.3f\n", n, refused, ms(time.Since(start)))
	return 0
}

// ledgerFigures runs the ledger benchmark runs times (after one warm-up,
// checked but not counted) and returns the 8-process rate and the
// single-process reference. A run whose ledger breaks an invariant is an
// error: no figure is reported from it.
func ledgerFigures(runs int) ([]*figure, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	multi := &figure{name: fmt.Sprintf("ledger: reservations/s, %d processes", ledgerProcs), unit: "/s"}
	single := &figure{name: "reference: reservations/s, 1 process", unit: "/s"}
	var ratios []float64
	checked, checkedRuns := 0, 0
	for i := -1; i < runs; i++ {
		var multiRate, singleRate float64
		multiRun := func() error {
			r, err := ledgerRun(exe, ledgerProcs, ledgerCycles)
			multiRate = r
			return err
		}
		singleRun := func() error {
			r, err := ledgerRun(exe, 1, ledgerProcs*ledgerCycles)
			singleRate = r
			return err
		}
		if err := pair(i, multiRun, singleRun); err != nil {
			return nil, err
		}
		checked += 2 * ledgerProcs * ledgerCycles
		checkedRuns += 2
		if i < 0 {
			continue
		}
		multi.samples = append(multi.samples, multiRate)
		single.samples = append(single.samples, singleRate)
		ratios = append(ratios, multiRate/singleRate)
	}
	r := &figure{samples: ratios}
	r50, _, _, rmin, rmax := r.stats()
	m50, _, _, _, _ := multi.stats()
	s50, _, _, _, _ := single.stats()
	multi.note = fmt.Sprintf("%.2f× a single process running the same %d cycles (median of the per-run ratios, %.2f–%.2f; "+
		"medians %.0f /s against %.0f /s); the invariant held after every run, warm-up included: "+
		"%d reservations in %d databases, each closed once and charged its cost, none left open, no slot held, no refusal",
		r50, ledgerProcs*ledgerCycles, rmin, rmax, m50, s50, checked, checkedRuns)
	return []*figure{multi, single}, nil
}

// ledgerRun runs procs workers of cycles each on a fresh database, released
// together, and returns the reservations closed per second: procs × cycles
// over the wall time from the release to the last worker's exit. It then
// checks the ledger and returns an error if any rule is broken.
func ledgerRun(exe string, procs, cycles int) (float64, error) {
	dir, err := os.MkdirTemp("", "hub-bench-ledger-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hub.db")
	st, err := store.Open(path) // creates the schema before any worker opens it
	if err != nil {
		return 0, err
	}
	defer st.Close()

	ctx, cancel := context.WithTimeout(context.Background(), ledgerRunFor)
	defer cancel()
	type proc struct {
		prefix string
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		out    *bufio.Reader
		errOut bytes.Buffer
		done   bool
	}
	var ps []*proc
	defer func() { // on an early return, end the workers already started
		for _, p := range ps {
			if !p.done {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		}
	}()
	for k := 0; k < procs; k++ {
		p := &proc{prefix: fmt.Sprintf("p%d", k), cmd: exec.CommandContext(ctx, exe)}
		p.cmd.Env = append(os.Environ(), roleEnv+"=ledger", ledgerDBEnv+"="+path,
			ledgerCyclesEnv+"="+strconv.Itoa(cycles), ledgerIDEnv+"="+p.prefix)
		p.cmd.Stderr = &p.errOut
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return 0, err
		}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		p.out = bufio.NewReader(stdout)
		if err := p.cmd.Start(); err != nil {
			return 0, err
		}
		ps = append(ps, p)
		if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
			return 0, fmt.Errorf("ledger worker %s: said %q, %v\n%s", p.prefix, line, err, p.errOut.String())
		}
	}
	t0 := time.Now()
	for _, p := range ps { // release them together
		p.stdin.Close()
	}
	refused := 0
	var errs []error
	for _, p := range ps {
		said, _ := io.ReadAll(p.out)
		err := p.cmd.Wait()
		p.done = true
		if err != nil {
			errs = append(errs, fmt.Errorf("ledger worker %s: %v\n%s", p.prefix, err, p.errOut.String()))
			continue
		}
		var n, r int
		var el float64
		if _, err := fmt.Sscanf(string(said), "reservations=%d refused=%d elapsed_ms=%f", &n, &r, &el); err != nil || n != cycles {
			errs = append(errs, fmt.Errorf("ledger worker %s said %q (%v), want %d reservations", p.prefix, said, err, cycles))
		}
		refused += r
	}
	wall := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if refused > 0 {
		return 0, fmt.Errorf("ledger bench: %d admissions refused, though no worker holds more than one of the %d slots: a slot leaked",
			refused, ledgerMaxRunning)
	}
	var prefixes []string
	for _, p := range ps {
		prefixes = append(prefixes, p.prefix)
	}
	if err := ledgerCheck(context.Background(), st, prefixes, cycles); err != nil {
		return 0, fmt.Errorf("ledger bench, %d processes: %w", procs, err)
	}
	return float64(procs*cycles) / wall.Seconds(), nil
}

// ledgerCheck verifies the ledger after a run: the store's own invariants
// hold; every job has exactly one reservation, closed, charged the cost it
// was finished with, never grown; there are no other rows; no job is left
// queued, admitted or running and no slot is held; and each month's totals
// are the sum of its charges with nothing reserved.
func ledgerCheck(ctx context.Context, st *store.Store, prefixes []string, cycles int) error {
	broken, err := st.CheckInvariants(ctx)
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("invariants broken: %q", broken)
	}
	want := len(prefixes) * cycles
	for _, p := range prefixes {
		for i := 0; i < cycles; i++ {
			id := ledgerJobID(p, i)
			row, err := st.Ledger(ctx, id)
			if err != nil {
				return fmt.Errorf("reservation of %s: %w", id, err)
			}
			if !row.Closed || !row.CostKnown || row.ChargedMicros != ledgerCost(i) ||
				row.ReservedMicros != ledgerReserve || row.OverrunMicros != 0 {
				return fmt.Errorf("reservation of %s = %+v; want closed, charged %d of %d reserved",
					id, row, ledgerCost(i), ledgerReserve)
			}
			j, err := st.Job(ctx, id)
			if err != nil {
				return err
			}
			if j.State != protocol.StateSucceeded || j.CostMicros != ledgerCost(i) {
				return fmt.Errorf("job %s is %s with cost %d; want succeeded with %d", id, j.State, j.CostMicros, ledgerCost(i))
			}
		}
	}
	rows, err := st.LedgerEntries(ctx, store.LedgerFilter{})
	if err != nil {
		return err
	}
	if len(rows) != want {
		return fmt.Errorf("%d ledger rows, want one per job (%d)", len(rows), want)
	}
	charged := map[string]micros.Micros{}
	for _, r := range rows {
		charged[r.Month] += r.ChargedMicros
	}
	for m, c := range charged {
		t, err := st.MonthTotals(ctx, m)
		if err != nil {
			return err
		}
		if t.ChargedMicros != c || t.ReservedMicros != 0 {
			return fmt.Errorf("month %s totals %+v; want %d charged, nothing reserved", m, t, c)
		}
	}
	jobs, err := st.ListJobs(ctx, nil, "", 0)
	if err != nil {
		return err
	}
	if len(jobs) != want {
		return fmt.Errorf("%d jobs, want %d", len(jobs), want)
	}
	running, queued, err := st.CountActive(ctx)
	if err != nil {
		return err
	}
	states, err := st.CountStates(ctx)
	if err != nil {
		return err
	}
	if running != 0 || queued != 0 || len(states) != 0 {
		return fmt.Errorf("%d slots held, %d queued, unended jobs %v after every job ended", running, queued, states)
	}
	return nil
}
