//go:build unix

package store

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"modernc.org/sqlite"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// The kill test (issue 5): for every job, reserved ≥ charged, and every
// reservation is closed exactly once, whenever the processes sharing the
// database die.
//
// crashProcs copies of this test binary share one database. Each loops over
// jobs of its own: create → Admit → run → (sometimes ReportCost) → Finish,
// and sometimes a second Finish. When Admit finds every slot taken, the
// helper settles, as the daemon does, the active jobs whose owner died, so
// dead helpers' slots come back; settlers in several processes may race for
// the same job. For crashFor the parent SIGKILLs helpers and starts new ones:
//
//   - parked: a helper told to stop inside the transaction of an Admit, a
//     Finish or a settling Finish (the first, from its n-th, that writes),
//     before its k-th row change or at its commit (SQLite's pre-update and
//     commit hooks), says so and waits; the parent kills it there. These land
//     inside a transaction for sure, at every step of it.
//   - on cue: a helper announces each store call before it makes it; the
//     parent kills it as it reads the n-th announcement of a chosen call, so
//     the kill lands before, inside or just after that call's transaction.
//   - at random: every so often, any live helper; and at the end, all of them.
//
// Each kill first stops the helper (SIGSTOP) and reads /proc/locks to see
// whether it held SQLite's write lock, that is, was inside a write
// transaction; the log counts those kills by the call they interrupted.
//
// Then the parent runs the daemon's recovery, and a second Finish of every
// job (what a settle racing the job's own Finish would try), and checks:
// every job is queued without a reservation or ended with exactly one
// admission, one ending and one closed ledger row; reserved = ask + overrun
// ≥ charged, the charge is the job's cost, and a known cost the helper saw
// committed is the one charged; the month's totals are the sum of the rows;
// no slot is held; CheckInvariants is silent; the file passes
// PRAGMA integrity_check.
//
// What breaks it (each tried on a copy of the store):
//   - Admit not atomic (its reservation committed before its slot and state
//     change): a helper parked or killed between the two leaves a queued job
//     with a reservation. The checks find a reservation for a job never
//     admitted, more ledger rows than admissions, an open reservation in the
//     month's totals, and CheckInvariants says "queued but has a
//     reservation". (Not tried, by the same reasoning: a slot committed on
//     its own is held after recovery; a state change committed on its own
//     makes a preparing job that settling closes nothing for.)
//   - Finish able to end a job twice (no state check inside its
//     transaction): the helpers' and the late second Finish get no
//     ErrWrongState and the journal has two endings. Also closing a closed
//     row: the settlers racing for one dead job hit ledger_close_once; and
//     with that trigger gone too, the late settle closes again, the ledger
//     changes under it, and a charge a helper saw committed is replaced by
//     the whole reservation.
//   - Finish split over transactions (the close apart from the job's end):
//     a helper killed between them leaves an active job with a closed
//     reservation, and settling it closes nothing.
//   - An overrun not grown into the reservation: charged > reserved.
//
// The seed fixes every choice the parent and the helpers make (printed;
// HUB_CRASH_SEED replays it), not the interleaving of the processes.
const (
	crashProcs = 6
	crashSlots = 3
	// crashCap never binds: money limits are TestMultiProcessAdmission's.
	crashCap = 1_000_000_000_000
	// Kills and restarts go on for crashFor, and longer, up to crashMax, until
	// helpers were parked inside Admit and Finish after a write.
	crashFor = 6 * time.Second
	crashMax = 12 * time.Second
)

var crashAsks = []micros.Micros{100_000, 250_000, 400_000}

// The crash helper is dispatched here, before TestMain (store_test.go)
// looks at the other roles.
// crashActive are the states the daemon's recovery looks at (daemon.recover).
var crashActive = []protocol.State{protocol.StatePreparing, protocol.StateRunning,
	protocol.StateNeedsInput, protocol.StateVerifying}

// settleDead does for jobs whose owner died what the daemon does for jobs
// whose shim died (daemon.recover and settle, through shim.Settle's store
// calls): every job in an active state whose owner no longer holds its lock
// is read again and, unless it ended meanwhile, finished as failed with an
// unknown cost, which charges its whole reservation. Unlike the daemon it
// lets go of the owner's lock before it settles, so settlers in several
// processes race for the same job and Finish alone keeps the close to one.
// around, if set, wraps each settling Finish. It returns the jobs it closed.
func settleDead(ctx context.Context, s *Store, owners string, around func(id string) (done func())) ([]string, error) {
	jobs, err := s.ListJobs(ctx, crashActive, "", 0)
	if err != nil {
		return nil, err
	}
	var closed []string
	for _, j := range jobs {
		owner, _, _ := strings.Cut(j.ID, "-")
		gone, err := ownerGone(owners, owner)
		if err != nil {
			return closed, err
		}
		if !gone {
			continue
		}
		j, err := s.Job(ctx, j.ID)
		if err != nil {
			return closed, err
		}
		if j.State.Terminal() {
			continue
		}
		const msg = "the job's shim died"
		done := func() {}
		if around != nil {
			done = around(j.ID)
		}
		ok, err := s.Finish(ctx, j.ID, Ending{State: protocol.StateFailed, HeadSHA: j.BaseSHA, Error: msg, Text: msg},
			time.Now().UTC())
		done()
		switch {
		case errors.Is(err, ErrWrongState) && !ok:
			// Another settler ended it first.
		case err != nil:
			return closed, fmt.Errorf("settle %s: closed=%v, %w", j.ID, ok, err)
		case !ok:
			return closed, fmt.Errorf("settle %s: it was %s but had no open reservation to close", j.ID, j.State)
		default:
			closed = append(closed, j.ID)
		}
	}
	return closed, nil
}

// ownerLock is the file a helper (owner "g007") holds an flock on while it lives.
func ownerLock(owners, owner string) string { return filepath.Join(owners, owner+".lock") }

// ownerGone reports whether no process holds owner's lock, the way the
// daemon tells a dead shim (a TryLock that succeeds). It lets go at once.
func ownerGone(owners, owner string) (bool, error) {
	f, err := os.OpenFile(ownerLock(owners, owner), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return true, nil
}

// crashFate is how the parent means a helper to die. kind "park": the
// helper parks inside the first call (admit, finish or settle), from the
// n-th on, that writes anything: before its row change at, or at its commit
// when at is 0 or the transaction makes fewer changes. kind "cue": the
// parent kills it as it announces the n-th call. kind "": it dies at random.
type crashFate struct {
	kind, call string
	nth, at    int
}

func pickFate(rng *rand.Rand) crashFate {
	switch r := rng.IntN(10); {
	case r < 4:
		calls := []string{"admit", "admit", "finish", "finish", "settle"}
		return crashFate{kind: "park", call: calls[rng.IntN(len(calls))], nth: 1 + rng.IntN(2), at: rng.IntN(7)}
	case r < 7:
		calls := []string{"create", "admit", "admit", "run", "cost", "finish", "finish", "refinish", "settle"}
		return crashFate{kind: "cue", call: calls[rng.IntN(len(calls))], nth: 1 + rng.IntN(3)}
	default:
		return crashFate{}
	}
}

// parker parks its helper inside one chosen transaction. SQLite calls row
// before each row change and commit just before a commit, on the goroutine
// running the statement, while the transaction holds the write lock.
type parker struct {
	mu    sync.Mutex
	armed string // the call to park in ("admit g001-002"); "" when none
	at    int    // the row change to park before; 0: at the commit
	rows  int
}

// hook installs the parker on every connection the driver opens.
func (p *parker) hook(conn sqlite.ExecQuerierContext, _ string) error {
	h, ok := conn.(sqlite.HookRegisterer)
	if !ok {
		return errors.New("the sqlite driver offers no hooks")
	}
	h.RegisterPreUpdateHook(func(d sqlite.SQLitePreUpdateData) { p.row(d.TableName) })
	h.RegisterCommitHook(func() int32 { p.commit(); return 0 })
	return nil
}

// arm parks the next transaction at row change at (0: at its commit), and
// returns the disarming function.
func (p *parker) arm(what string, at int) func() {
	p.mu.Lock()
	p.armed, p.at, p.rows = what, at, 0
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.armed = ""
		p.mu.Unlock()
	}
}

func (p *parker) row(table string) {
	p.mu.Lock()
	what := p.armed
	if what != "" {
		p.rows++
	}
	rows, at := p.rows, p.at
	p.mu.Unlock()
	if what != "" && rows == at {
		park(fmt.Sprintf("%s row %d %s", what, rows, table))
	}
}

// commit parks at the commit of a transaction that wrote something (an
// Admit refused for want of a slot writes nothing).
func (p *parker) commit() {
	p.mu.Lock()
	what, rows := p.armed, p.rows
	p.mu.Unlock()
	if what != "" && rows > 0 {
		park(fmt.Sprintf("%s commit %d", what, rows))
	}
}

// park says where the helper is and waits for the parent's SIGKILL.
func park(where string) {
	fmt.Println("parked " + where)
	time.Sleep(time.Minute)
	fmt.Fprintln(os.Stderr, "parked for a minute and not killed: "+where)
	os.Exit(4)
}

// helperCrash is one helper of TestCrashLedger. It announces each store
// call on stdout before making it ("admit g001-002"), and what it saw
// committed after ("admitted g001-002", "finished g001-002 succeeded 1200
// true", "settled g000-004"). It runs until it is killed, and reports on
// stderr anything the store did that it must not.
func helperCrash() int {
	gen, _ := strconv.Atoi(os.Getenv("HUB_CRASH_GEN"))
	seed, _ := strconv.ParseUint(os.Getenv("HUB_CRASH_HELPER_SEED"), 10, 64)
	path := os.Getenv("HUB_STORE_DB")
	owners := filepath.Join(filepath.Dir(path), "owners")
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "helper g%03d: %s\n", gen, fmt.Sprintf(format, args...))
		return 1
	}
	var fate crashFate
	if f := os.Getenv("HUB_CRASH_PARK"); f != "" {
		fate.kind = "park"
		if _, err := fmt.Sscanf(f, "%s %d %d", &fate.call, &fate.nth, &fate.at); err != nil {
			return fail("HUB_CRASH_PARK=%q: %v", f, err)
		}
	}
	// The parent holds stdin open; should it go away, so do we.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()

	lock, err := os.OpenFile(ownerLock(owners, fmt.Sprintf("g%03d", gen)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fail("%v", err)
	}
	defer lock.Close() // held, and kept from the finalizer, for life
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail("lock %s: %v", lock.Name(), err)
	}
	pk := &parker{}
	sqlite.RegisterConnectionHook(pk.hook)
	s, err := Open(path)
	if err != nil {
		return fail("%v", err)
	}
	defer s.Close()

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, uint64(gen)))
	lim := Limits{MaxRunning: crashSlots, MonthlyCap: crashCap}
	calls := map[string]int{}
	call := func(name, id string) (done func()) {
		calls[name]++
		fmt.Println(name + " " + id)
		if fate.kind == "park" && fate.call == name && calls[name] >= fate.nth {
			return pk.arm(name+" "+id, fate.at)
		}
		return func() {}
	}
	settle := func(id string) func() { return call("settle", id) }
	below := func(n micros.Micros) micros.Micros { return micros.Micros(rng.Int64N(int64(n))) }
	for i := 0; ; i++ {
		id := fmt.Sprintf("g%03d-%03d", gen, i)
		ask := crashAsks[rng.IntN(len(crashAsks))]
		done := call("create", id)
		err := s.CreateJob(ctx, &Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Task: "t", MaxMicros: ask,
			ShimPID: os.Getpid()}, time.Now().UTC())
		done()
		if err != nil {
			return fail("create %s: %v", id, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			done := call("admit", id)
			adm, err := s.Admit(ctx, id, lim, time.Now().UTC())
			done()
			if err != nil {
				return fail("admit %s: %v", id, err)
			}
			if adm.Admitted {
				break
			}
			if !strings.HasPrefix(adm.Reason, "all ") {
				return fail("admit %s: odd refusal %q", id, adm.Reason)
			}
			settled, err := settleDead(ctx, s, owners, settle)
			for _, sid := range settled {
				fmt.Println("settled " + sid)
			}
			if err != nil {
				return fail("%v", err)
			}
			if time.Now().After(deadline) {
				return fail("admit %s: still refused after 30s: %s", id, adm.Reason)
			}
			time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Microsecond)
		}
		fmt.Println("admitted " + id)

		done = call("run", id)
		_, err = s.SetState(ctx, id, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", time.Now().UTC())
		done()
		if err != nil {
			return fail("run %s: %v", id, err)
		}
		if rng.IntN(2) == 0 {
			done := call("cost", id)
			_, err := s.ReportCost(ctx, id, below(ask), protocol.CostEvent{Known: true}, time.Now().UTC())
			done()
			if err != nil {
				return fail("cost %s: %v", id, err)
			}
		}
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // the work, holding the slot

		end := Ending{State: protocol.StateSucceeded, CostKnown: true}
		switch r := rng.IntN(10); {
		case r < 3:
			end = Ending{State: protocol.StateFailed, CostMicros: below(ask)} // unknown: the reservation is charged
		case r < 7:
			end.CostMicros = below(ask + 1)
		default:
			end.CostMicros = ask + 1 + below(ask/2) // an overrun
		}
		done = call("finish", id)
		closed, err := s.Finish(ctx, id, end, time.Now().UTC())
		done()
		if err != nil || !closed {
			return fail("finish %s: closed=%v, %v", id, closed, err)
		}
		fmt.Printf("finished %s %s %d %t\n", id, end.State, end.CostMicros, end.CostKnown)
		if rng.IntN(4) == 0 {
			done := call("refinish", id)
			closed, err := s.Finish(ctx, id, Ending{State: protocol.StateFailed, CostKnown: true, CostMicros: 1}, time.Now().UTC())
			done()
			if closed || !errors.Is(err, ErrWrongState) {
				return fail("second finish %s: closed=%v, %v", id, closed, err)
			}
		}
	}
}

// crashProc is one helper as the parent sees it.
type crashProc struct {
	gen    int
	fate   crashFate
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer

	// Set by the reading goroutine; read once it sent the helper on exited.
	last     string // the last line it wrote
	parked   string // its "parked ..." line
	admitted []string
	finished map[string]Ending
	settled  []string

	killMu   sync.Mutex
	reaped   bool   // Wait is about to run or ran: signal it no more
	killedBy string // "park", "cue", "random", "end"; "" while not killed
	probed   bool   // the write lock was looked at while it was stopped
	inTx     bool   // it held the write lock when it was killed
}

// kill stops the helper, looks whether it holds the write lock, and
// SIGKILLs it; once.
func (p *crashProc) kill(by, shm string) {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	if p.reaped || p.killedBy != "" {
		return
	}
	p.killedBy = by
	if p.cmd.Process.Signal(syscall.SIGSTOP) == nil && waitFrozen(p.cmd.Process.Pid, time.Second) {
		p.inTx, p.probed = holdsWriteLock(shm, p.cmd.Process.Pid)
	}
	_ = p.cmd.Process.Kill()
}

func (p *crashProc) killInfo() (by string, probed, inTx bool) {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	return p.killedBy, p.probed, p.inTx
}

// read takes in the helper's lines until it dies, killing it where its fate
// says, then hands it to exited.
func (p *crashProc) read(stdout io.Reader, shm string, exited chan<- *crashProc) {
	sc := bufio.NewScanner(stdout)
	cues := 0
	for sc.Scan() {
		line := sc.Text()
		p.last = line
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "parked":
			p.parked = line
			p.kill("park", shm)
		case f[0] == "admitted" && len(f) == 2:
			p.admitted = append(p.admitted, f[1])
		case f[0] == "settled" && len(f) == 2:
			p.settled = append(p.settled, f[1])
		case f[0] == "finished" && len(f) == 5:
			cost, _ := strconv.ParseInt(f[3], 10, 64)
			p.finished[f[1]] = Ending{State: protocol.State(f[2]), CostMicros: micros.Micros(cost), CostKnown: f[4] == "true"}
		case p.fate.kind == "cue" && f[0] == p.fate.call:
			if cues++; cues == p.fate.nth {
				p.kill("cue", shm)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	exited <- p
}

// waitFrozen waits until every thread of pid is stopped (or gone).
func waitFrozen(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !frozen(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}

func frozen(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')') // the state follows the command name
		if i < 0 || i+2 >= len(b) || !strings.ContainsRune("TtZX", rune(b[i+2])) {
			return false
		}
	}
	return true
}

// holdsWriteLock reports whether pid holds SQLite's WAL write lock on the
// database whose shared-memory file is shm, as /proc/locks shows it: a POSIX
// write lock on byte 120 of the file (the unix VFS's first shared-memory
// lock, WAL_WRITE_LOCK), held from BEGIN IMMEDIATE until the commit or the
// rollback is done. ok is false when it cannot tell.
func holdsWriteLock(shm string, pid int) (held, ok bool) {
	fi, err := os.Stat(shm)
	if err != nil {
		return false, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	b, err := os.ReadFile("/proc/locks")
	if err != nil || !isStat {
		return false, false
	}
	ino := strconv.FormatUint(st.Ino, 10)
	for _, line := range strings.Split(string(b), "\n") {
		// "1: POSIX  ADVISORY  WRITE 24842 fe:00:9978055 120 120"; a
		// blocked request has "->" after the number, and 9 fields.
		f := strings.Fields(line)
		if len(f) != 8 || f[1] != "POSIX" || f[3] != "WRITE" || f[4] != strconv.Itoa(pid) {
			continue
		}
		if dev := strings.Split(f[5], ":"); len(dev) != 3 || dev[2] != ino {
			continue
		}
		start, err1 := strconv.ParseInt(f[6], 10, 64)
		end, err2 := strconv.ParseInt(f[7], 10, 64)
		if f[7] == "EOF" {
			end, err2 = 1<<62, nil
		}
		if err1 == nil && err2 == nil && start <= 120 && 120 <= end {
			return true, true
		}
	}
	return false, true
}

func TestCrashLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill test")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("HUB_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("HUB_CRASH_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (HUB_CRASH_SEED=%d replays the plan)", seed, seed)

	ctx := context.Background()
	home := testHome(t)
	path := filepath.Join(home, "hub.db")
	owners := filepath.Join(home, "owners")
	if err := os.Mkdir(owners, 0o700); err != nil {
		t.Fatal(err)
	}
	// The parent's store stays open, idle, while the helpers run: it keeps
	// the -shm file that /proc/locks is read for.
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r := &crashRun{t: t, ctx: cctx, rng: rand.New(rand.NewPCG(seed, 0x5eed)), path: path, shm: path + "-shm",
		exited: make(chan *crashProc), by: map[string]int{}, parked: map[string]int{}, torn: map[string]int{},
		inTx: map[string]int{}}
	took := r.run()

	// The daemon's recovery: every job still active has a dead owner.
	recovered, err := settleDead(ctx, s, owners, nil)
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	admitted, jobs := checkCrashLedger(t, s, r.done)

	settledByHelpers := 0
	for _, p := range r.done {
		settledByHelpers += len(p.settled)
	}
	t.Logf("%s of kills: %d helpers, %d jobs (%d admitted), %d kills (%d parked, %d on cue, %d at random, %d at the end)",
		took.Round(time.Millisecond), len(r.done), jobs, admitted, r.kills, r.by["park"], r.by["cue"], r.by["random"], r.by["end"])
	t.Logf("parked inside: %d Admit (%d after a write), %d Finish (%d after a write), %d settling Finish (%d after a write)",
		r.parked["admit"], r.torn["admit"], r.parked["finish"], r.torn["finish"], r.parked["settle"], r.torn["settle"])
	t.Logf("inside a write transaction when killed, by /proc/locks (%d of %d kills looked at): %v", r.probed, r.kills, r.inTx)
	t.Logf("settled: %d by helpers, %d by the final recovery", settledByHelpers, len(recovered))
	if r.torn["admit"] == 0 || r.torn["finish"] == 0 {
		t.Errorf("no kill landed between the writes of Admit (%d) or of Finish (%d)", r.torn["admit"], r.torn["finish"])
	}
}

// crashRun starts, kills and replaces the helpers of TestCrashLedger. Its
// fields are the test goroutine's, except exited, which the helpers'
// reading goroutines send on.
type crashRun struct {
	t         *testing.T
	ctx       context.Context
	rng       *rand.Rand
	path, shm string
	exited    chan *crashProc
	live      []*crashProc // in the order they started
	done      []*crashProc

	kills, probed int
	by            map[string]int // kills by how they were meant
	parked        map[string]int // parked kills by the call they were inside
	torn          map[string]int // of those, after the call's first write
	inTx          map[string]int // kills inside a write transaction, by the call announced last
}

// run keeps crashProcs helpers alive and kills them for crashFor (up to
// crashMax, until helpers were parked between the writes of Admit and of
// Finish), then kills the rest and returns once every helper is reaped.
func (r *crashRun) run() time.Duration {
	start := time.Now()
	for len(r.live) < crashProcs {
		r.spawn()
	}
	nextKill := func() time.Duration { return time.Duration(200+r.rng.IntN(400)) * time.Millisecond }
	randomKill := time.NewTimer(nextKill())
	defer randomKill.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	chaos := true
	for len(r.live) > 0 {
		select {
		case p := <-r.exited:
			r.reap(p)
			if chaos {
				r.spawn()
			}
		case <-randomKill.C:
			if chaos {
				r.live[r.rng.IntN(len(r.live))].kill("random", r.shm)
				randomKill.Reset(nextKill())
			}
		case <-tick.C:
			enough := r.torn["admit"] > 0 && r.torn["finish"] > 0
			if el := time.Since(start); chaos && (el >= crashFor && enough || el >= crashMax) {
				chaos = false
				for _, p := range r.live {
					time.AfterFunc(time.Duration(r.rng.IntN(50))*time.Millisecond, func() { p.kill("end", r.shm) })
				}
			}
		}
	}
	return time.Since(start)
}

func (r *crashRun) spawn() {
	t := r.t
	p := &crashProc{gen: len(r.live) + len(r.done), fate: pickFate(r.rng), finished: map[string]Ending{}}
	p.cmd = exec.CommandContext(r.ctx, os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), helperEnv+"=crash", "HUB_STORE_DB="+r.path,
		fmt.Sprintf("HUB_CRASH_GEN=%d", p.gen), fmt.Sprintf("HUB_CRASH_HELPER_SEED=%d", r.rng.Uint64()))
	if p.fate.kind == "park" {
		p.cmd.Env = append(p.cmd.Env, fmt.Sprintf("HUB_CRASH_PARK=%s %d %d", p.fate.call, p.fate.nth, p.fate.at))
	}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stdout, r.shm, r.exited)
	r.live = append(r.live, p)
}

// reap waits for a helper whose output ended, checks that it died of our
// SIGKILL and said nothing on stderr, and counts where the kill landed.
func (r *crashRun) reap(p *crashProc) {
	t := r.t
	p.killMu.Lock()
	p.reaped = true
	p.killMu.Unlock()
	err := p.cmd.Wait()
	for i, q := range r.live {
		if q == p {
			r.live = append(r.live[:i], r.live[i+1:]...)
			break
		}
	}
	r.done = append(r.done, p)
	by, probed, inTx := p.killInfo()
	if ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus); by == "" || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("helper g%03d ended by itself (%v), its last line %q", p.gen, err, p.last)
	}
	if p.stderr.Len() > 0 {
		t.Errorf("helper g%03d said:\n%s", p.gen, p.stderr.String())
	}
	r.kills++
	r.by[by]++
	// "parked admit g001-002 row 3 slots" (before its third write) or
	// "parked finish g001-002 commit 5" (after its five writes).
	if f := strings.Fields(p.parked); len(f) >= 5 {
		r.parked[f[1]]++
		if n, _ := strconv.Atoi(f[4]); (f[3] == "row" && n >= 2) || (f[3] == "commit" && n >= 1) {
			r.torn[f[1]]++
		}
		if probed && !inTx {
			t.Errorf("helper g%03d was parked inside a transaction (%s) but held no write lock", p.gen, p.parked)
		}
	}
	if !probed {
		return
	}
	r.probed++
	if inTx {
		call := "other"
		if f := strings.Fields(p.last); len(f) > 0 {
			call = f[0]
			if call == "parked" && len(f) > 1 {
				call = f[1]
			}
		}
		r.inTx[call]++
	}
}

// checkCrashLedger checks the database after the kills and the recovery,
// and what the helpers saw committed. It returns how many jobs were
// admitted, of how many.
func checkCrashLedger(t *testing.T, s *Store, helpers []*crashProc) (admitted, all int) {
	ctx := context.Background()
	ledger := readLedger(t, s)
	jobs, err := s.ListJobs(ctx, nil, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// A second Finish of every admitted job, as a settle racing the job's
	// own Finish would try: refused, and nothing moves.
	for _, j := range jobs {
		if j.State == protocol.StateQueued {
			continue
		}
		closed, err := s.Finish(ctx, j.ID, Ending{State: protocol.StateFailed, Text: "late settle"}, time.Now().UTC())
		if closed || !errors.Is(err, ErrWrongState) {
			t.Errorf("second Finish of %s (%s) = %v, %v; want false, ErrWrongState", j.ID, j.State, closed, err)
		}
	}
	if diff := cmp.Diff(ledger, readLedger(t, s), cmp.AllowUnexported(crashRow{})); diff != "" {
		t.Errorf("the late settle changed the ledger (-before +after):\n%s", diff)
	}

	// The journal: admissions, endings and overrun notes per job.
	admissions, endings, notes := map[string]int{}, map[string]int{}, map[string]int{}
	rows, err := s.db.QueryContext(ctx, `SELECT job_id, kind, text FROM events WHERE kind IN ('state', 'note')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, text string
		var kind protocol.EventKind
		if err := rows.Scan(&id, &kind, &text); err != nil {
			t.Fatal(err)
		}
		switch state := protocol.State(text); {
		case kind == protocol.EventNote && strings.HasPrefix(text, "the cost "):
			notes[id]++
		case kind == protocol.EventNote:
		case state == protocol.StatePreparing:
			admissions[id]++
		case state.Terminal():
			endings[id]++
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}

	byID := map[string]*Job{}
	months := map[string]micros.Micros{}
	for _, j := range jobs {
		byID[j.ID] = j
		r, hasRow := ledger[j.ID]
		if j.State == protocol.StateQueued {
			if hasRow || admissions[j.ID] != 0 {
				t.Errorf("job %s is queued but has a reservation (%v) or %d admissions", j.ID, hasRow, admissions[j.ID])
			}
			continue
		}
		admitted++
		switch {
		case !j.State.Terminal():
			t.Errorf("job %s is still %s after recovery", j.ID, j.State)
		case admissions[j.ID] != 1 || endings[j.ID] != 1:
			t.Errorf("job %s: %d admissions and %d endings in the journal, want one each", j.ID, admissions[j.ID], endings[j.ID])
		case !hasRow:
			t.Errorf("job %s was admitted but has no reservation", j.ID)
		case !r.closed:
			t.Errorf("job %s ended (%s) with its reservation open", j.ID, j.State)
		case r.charged < 0 || r.charged > r.reserved || r.reserved != j.MaxMicros+r.overrun:
			t.Errorf("job %s asked %d: %+v", j.ID, j.MaxMicros, r)
		case r.known != j.CostKnown || r.charged != j.CostMicros:
			t.Errorf("job %s cost %d (known %v) but was charged %+v", j.ID, j.CostMicros, j.CostKnown, r)
		case !r.known && (r.charged != r.reserved || r.overrun != 0),
			r.known && r.reserved != max(j.MaxMicros, r.charged):
			t.Errorf("job %s asked %d: %+v", j.ID, j.MaxMicros, r)
		case notes[j.ID] != int(min(r.overrun, 1)):
			t.Errorf("job %s overran by %d and has %d notes saying so", j.ID, r.overrun, notes[j.ID])
		}
		months[r.month] += r.charged
	}
	if len(ledger) != admitted {
		t.Errorf("%d ledger rows for %d admitted jobs", len(ledger), admitted)
	}

	// What the helpers saw committed must have stayed so.
	for _, p := range helpers {
		for _, id := range p.admitted {
			if _, ok := ledger[id]; !ok {
				t.Errorf("helper g%03d saw %s admitted, but it has no reservation", p.gen, id)
			}
		}
		for id, e := range p.finished {
			j, r := byID[id], ledger[id]
			want := e.CostMicros
			if !e.CostKnown {
				want = r.reserved
			}
			if j == nil || j.State != e.State || r.known != e.CostKnown || r.charged != want {
				t.Errorf("helper g%03d finished %s as %+v, but the job is %v and its reservation %+v", p.gen, id, e, j, r)
			}
		}
		for _, id := range p.settled {
			if j, r := byID[id], ledger[id]; j == nil || j.State != protocol.StateFailed || r.known {
				t.Errorf("helper g%03d settled %s, but the job is %v and its reservation %+v", p.gen, id, j, r)
			}
		}
	}

	for m, charged := range months {
		tot, err := s.MonthTotals(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if want := (MonthTotals{Month: m, ChargedMicros: charged}); tot != want {
			t.Errorf("month %s totals %+v, want %+v (the sum of its rows)", m, tot, want)
		}
	}
	var slots int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM slots`).Scan(&slots); err != nil || slots != 0 {
		t.Errorf("%d slots held after recovery (%v)", slots, err)
	}
	healthy(t, s)
	for pragma, want := range map[string][]string{"integrity_check": {"ok"}, "foreign_key_check": nil} {
		if got := pragmaRows(t, s, pragma); !cmp.Equal(want, got) {
			t.Errorf("PRAGMA %s: %q, want %q", pragma, got, want)
		}
	}
	return admitted, len(jobs)
}

// pragmaRows runs PRAGMA name and returns its rows, each as its columns' text.
func pragmaRows(t *testing.T, s *Store, name string) []string {
	t.Helper()
	rows, err := s.db.Query("PRAGMA " + name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// crashRow is one ledger row, as the kill test compares it.
type crashRow struct {
	month                      string
	reserved, charged, overrun micros.Micros
	closed, known              bool
	openedAt, closedAt         int64
}

func readLedger(t *testing.T, s *Store) map[string]crashRow {
	t.Helper()
	rows, err := s.db.Query(`SELECT job_id, month, reserved_micros, charged_micros, overrun_micros, cost_known,
		opened_at, COALESCE(closed_at, 0), closed_at IS NOT NULL FROM ledger`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]crashRow{}
	for rows.Next() {
		var (
			id string
			r  crashRow
		)
		if err := rows.Scan(&id, &r.month, &r.reserved, &r.charged, &r.overrun, &r.known, &r.openedAt, &r.closedAt, &r.closed); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[id]; dup {
			t.Errorf("job %s has two ledger rows", id)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
