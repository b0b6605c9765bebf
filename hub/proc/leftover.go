package proc

import (
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hub-agents/hub/internal/pgroup"
)

// DefaultGrace is EndLeftovers' time between SIGTERM and SIGKILL when the
// options give none.
const DefaultGrace = 5 * time.Second

const (
	// killWait is how long EndLeftovers waits after SIGKILL before it says a
	// process survived.
	killWait = time.Second
	// pollEvery paces the waits: the processes need not be the caller's
	// children, so there is nothing to wait on but /proc.
	pollEvery = 25 * time.Millisecond
	// maxCommand bounds a leftover's command line, in bytes.
	maxCommand = 200
)

// LeftoverOptions name a command whose leader exited, for EndLeftovers.
type LeftoverOptions struct {
	// PGID is the command's process group: its leader's pid (0: none).
	PGID int
	// LeaderStart is the leader's start time, taken while it was alive
	// (StartTime) or not yet waited for (ChildStartTime). The group is
	// signalled only under the rules of KillGroup (never when pid PGID now
	// names another process), and nothing that started before LeaderStart
	// is ever touched. 0 leaves everything outside the group alone.
	LeaderStart uint64
	// Grace is the time the processes get between SIGTERM and SIGKILL
	// (0: DefaultGrace).
	Grace time.Duration
	// Subreaper is the child subreaper the command ran under (the caller
	// after BecomeSubreaper, typically os.Getpid(); 0: none). Every process
	// descending from it that started at or after LeaderStart, and is
	// neither excluded nor the caller or one of its ancestors, is taken for
	// the command's: whatever it did (setsid, a double fork, a group of its
	// own), it cannot leave the subreaper's tree. So the caller must run
	// nothing else under the subreaper meanwhile, or list it in Exclude.
	Subreaper int
	// Marker is an environment entry the command's processes inherited, such
	// as "HUB_JOB=abc" (exactly; "": none). A process anywhere that holds it
	// in /proc/<pid>/environ and started at or after LeaderStart is the
	// command's too: best effort, for one that left both the group and the
	// subreaper's tree (or ran with no subreaper). A process that changed
	// its environment and escaped the tree is not found. Linux only: macOS
	// and Windows do not show hub another process's environment.
	Marker string
	// Exclude are processes that are not the command's, though they may
	// look so (the caller's other children, started meanwhile): neither
	// they nor their descendants are touched.
	Exclude []int
}

// Leftover is a process a command left that EndLeftovers had to end
// itself: one found outside the command's process group (it called setsid,
// made a group of its own, or was re-parented), or a member of the group
// that outlived the grace after SIGTERM. Members that died on the group's
// SIGTERM are not reported.
type Leftover struct {
	PID int
	// Command is its command line from /proc/<pid>/cmdline (on macOS and
	// Windows its program's name in brackets) (NULs as spaces,
	// at most about 200 bytes, valid UTF-8; "[name]" when it has none), as
	// the process gave it: the caller redacts it before it records it.
	Command string
	// Ended is true when it is gone; false when it was still alive after
	// SIGKILL and a short wait, or could not be signalled.
	Ended bool
}

// EndLeftovers ends what a command left running once its leader exited:
// SIGTERM to its process group and to every other process of the command
// it finds (see LeftoverOptions for which are the command's), SIGKILL to
// whatever is still alive after the grace, then a short wait. It looks
// again while it waits, so a process forked meanwhile is ended too. It
// returns the processes it had to end beyond the group's SIGTERM, and says
// of each whether it is gone.
//
// It reaps nothing: an adopted orphan it killed stays the subreaper's
// zombie (which counts as gone here) until the subreaper exits.
func EndLeftovers(o LeftoverOptions) []Leftover {
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	e := &ender{o: o, self: os.Getpid(), known: map[int]bool{}}
	e.ancestors = ancestors(e.self)
	group := o.PGID > 1 && KillGroup(o.PGID, o.LeaderStart, syscall.SIGTERM) == nil
	live := func() bool { return group && GroupAlive(o.PGID) || e.anyAlive() }

	e.sweep(syscall.SIGTERM)
	for deadline := time.Now().Add(grace); live() && time.Now().Before(deadline); {
		time.Sleep(pollEvery)
		e.sweep(syscall.SIGTERM)
	}
	if group && GroupAlive(o.PGID) {
		e.groupSurvivors()
		_ = KillGroup(o.PGID, o.LeaderStart, syscall.SIGKILL)
	}
	for _, t := range e.found {
		e.signal(t, syscall.SIGKILL)
	}
	e.sweep(syscall.SIGKILL)
	for deadline := time.Now().Add(killWait); live() && time.Now().Before(deadline); {
		time.Sleep(pollEvery)
		if group {
			_ = KillGroup(o.PGID, o.LeaderStart, syscall.SIGKILL)
		}
		e.sweep(syscall.SIGKILL)
	}

	out := make([]Leftover, 0, len(e.found))
	for _, t := range e.found {
		out = append(out, Leftover{PID: t.pid, Command: t.command, Ended: !Same(t.pid, t.start)})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ender is one EndLeftovers in progress.
type ender struct {
	o         LeftoverOptions
	self      int
	ancestors []int
	found     []*tracked
	known     map[int]bool
}

// tracked is a process EndLeftovers signalled itself.
type tracked struct {
	pid     int
	start   uint64
	command string
}

// since lists the live processes that started at or after start, from one
// look at the process table.
func since(start uint64) []entry {
	var out []entry
	for _, e := range table() {
		if e.start >= start {
			out = append(out, e)
		}
	}
	return out
}

// sweep finds the command's processes outside its group not found before,
// and sends them sig.
func (e *ender) sweep(sig syscall.Signal) {
	o := e.o
	if o.LeaderStart == 0 {
		return
	}
	var tree map[int]bool
	if o.Subreaper > 0 {
		tree = map[int]bool{}
		for _, pid := range Descendants(o.Subreaper) {
			tree[pid] = true
		}
	}
	var excluded map[int]bool
	for _, x := range o.Exclude {
		if excluded == nil {
			excluded = map[int]bool{}
		}
		excluded[x] = true
		for _, d := range Descendants(x) {
			excluded[d] = true
		}
	}
	for _, p := range since(o.LeaderStart) {
		switch {
		case e.known[p.pid], p.pid <= 1, p.pid == e.self, p.pid == o.Subreaper, excluded[p.pid], slices.Contains(e.ancestors, p.pid):
			continue
		case o.PGID > 1 && p.pgid == o.PGID:
			continue // the group's own: signalled as a group
		}
		if !tree[p.pid] && !hasEnv(p.pid, o.Marker) && !e.descendsFromFound(p.pid) {
			continue
		}
		t := &tracked{pid: p.pid, start: p.start, command: cmdline(p.pid)}
		e.known[p.pid] = true
		e.found = append(e.found, t)
		e.signal(t, sig)
	}
}

// groupSurvivors notes the members of the group still alive after the
// grace, for the report.
func (e *ender) groupSurvivors() {
	for _, p := range since(e.o.LeaderStart) {
		if p.pgid == e.o.PGID && !e.known[p.pid] {
			e.known[p.pid] = true
			e.found = append(e.found, &tracked{pid: p.pid, start: p.start, command: cmdline(p.pid)})
		}
	}
}

func (e *ender) descendsFromFound(pid int) bool {
	for _, t := range e.found {
		if Same(t.pid, t.start) && IsDescendant(pid, t.pid) {
			return true
		}
	}
	return false
}

func (e *ender) anyAlive() bool {
	for _, t := range e.found {
		if Same(t.pid, t.start) {
			return true
		}
	}
	return false
}

// signal sends sig to t while its pid still names it.
func (e *ender) signal(t *tracked, sig syscall.Signal) {
	if Same(t.pid, t.start) {
		_ = pgroup.SignalPID(t.pid, sig) // one that cannot be signalled stays alive, and is reported so
	}
}

// ancestors lists the parents of pid up to init.
func ancestors(pid int) []int {
	var out []int
	for range 4096 { // a bound: a parent chain is never this long
		ppid, err := ParentPID(pid)
		if err != nil || ppid <= 0 {
			break
		}
		out = append(out, ppid)
		pid = ppid
	}
	return out
}
