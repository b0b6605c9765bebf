// Package proc identifies processes by pid plus start time, never by a bare
// pid, signals whole process groups, and ends what a command left running
// after it exited (EndLeftovers), with the caller a child subreaper
// (BecomeSubreaper) so orphans stay findable. It must never signal a process
// whose start time does not match the one recorded: pids get reused. Nor
// must it reap a child it did not start: under a subreaper, os/exec's
// children and adopted orphans are the caller's children alike, and a
// wait4(-1) would steal an exit status os/exec is waiting for.
//
// The process table is read per platform (proc_<os>.go: /proc on Linux,
// sysctl kern.proc on macOS, a Toolhelp snapshot on Windows); groups are
// signalled through internal/pgroup, which knows how each platform makes
// and ends them.
package proc

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hub-agents/hub/internal/pgroup"
)

// StartTime returns the start time of pid, in a unit of the platform's
// (Linux: clock ticks since boot; macOS: microseconds since the epoch;
// Windows: the creation time's 100 ns ticks): start times compare with one
// another, nothing more.
func StartTime(pid int) (uint64, error) {
	e, zombie, err := info(pid)
	if err != nil {
		return 0, err
	}
	if zombie {
		return 0, errors.New("zombie")
	}
	return e.start, nil
}

// ChildStartTime returns the start time of pid, a child of the caller it
// has not waited for yet, zombie or not: until it is waited for, its pid
// cannot name another process. (StartTime refuses a zombie: a zombie that
// is not the caller's child may be reaped, and its pid reused, any moment.)
func ChildStartTime(pid int) (uint64, error) {
	e, _, err := info(pid)
	if err != nil {
		return 0, err
	}
	return e.start, nil
}

// Same reports whether pid is alive and is the process that started at start.
func Same(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := StartTime(pid)
	return err == nil && st == start
}

// KillGroup signals the process group pgid, but only while its leader is
// still the process recorded (pgid == leader pid, with start time leaderStart).
// When the leader is gone, members may remain; with force it signals the group
// anyway if a member of the group still has that pgid and no process holds
// the pid under another start time.
func KillGroup(pgid int, leaderStart uint64, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if st, err := StartTime(pgid); err == nil && st != leaderStart {
		// The pid now names another process: whatever the group was, it is not ours to touch.
		return fmt.Errorf("process %d was reused (start time %d, recorded %d); not signalling", pgid, st, leaderStart)
	}
	return pgroup.Signal(pgid, sig)
}

// GroupAlive reports whether any live process (not a zombie waiting to be
// reaped) is left in process group pgid.
func GroupAlive(pgid int) bool {
	if !pgroup.Alive(pgid) {
		return false
	}
	if !listsGroups {
		return true // the platform's own answer is all there is
	}
	ents, ok := tableOK()
	if !ok {
		return true
	}
	for _, e := range ents {
		if e.pgid == pgid {
			return true
		}
	}
	return false
}

// StopGroup sends SIGTERM to the group, waits up to grace for it to empty,
// then sends SIGKILL.
func StopGroup(pgid int, leaderStart uint64, grace time.Duration) {
	if err := KillGroup(pgid, leaderStart, syscall.SIGTERM); err != nil {
		return
	}
	if !WaitGroupGone(pgid, grace) {
		_ = pgroup.Signal(pgid, syscall.SIGKILL)
	}
}

// WaitGroupGone waits up to d for process group pgid to empty (a signal is
// delivered, not acted on, when kill returns) and reports whether it did.
func WaitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for GroupAlive(pgid) {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // the kernel offers no wait on a group we are not the parent of
	}
	return true
}

// StopSession kills (SIGKILL) every process left in the session sid, whose
// leader is dead: what a dead `hub shim` (a session leader) started and did
// not stop — its git and the filters git runs, a verify command and what
// it started. It signals only processes that started no earlier than
// leaderStart, and nothing at all while pid sid is alive as another process
// (the pid was reused) or the leader outlives grace; it waits up to grace
// for them to go. It returns how many processes it signalled.
func StopSession(sid int, leaderStart uint64, grace time.Duration) int {
	if sid <= 1 {
		return 0
	}
	if st, err := StartTime(sid); err == nil {
		if st != leaderStart {
			return 0 // the pid was reused: whatever the session was, it is not ours to touch
		}
		// The leader itself, still on its way out (a dying process lets go
		// of its files, and so of its locks, before it is gone): wait for it.
		for deadline := time.Now().Add(grace); Same(sid, leaderStart) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if Same(sid, leaderStart) {
			return 0 // alive after all: not ours to clean up after
		}
	}
	members := func() []int {
		var pids []int
		for _, e := range table() {
			if e.sid == sid && e.start >= leaderStart {
				pids = append(pids, e.pid)
			}
		}
		return pids
	}
	// Again until none is left: one may have been forking as it was killed.
	killed := map[int]bool{}
	for deadline := time.Now().Add(grace); ; {
		pids := members()
		if len(pids) == 0 || time.Now().After(deadline) {
			return len(killed)
		}
		for _, pid := range pids {
			_ = pgroup.SignalPID(pid, syscall.SIGKILL)
			killed[pid] = true
		}
		time.Sleep(20 * time.Millisecond) // not our children: nothing to wait on
	}
}

// WaitExit waits up to d for pid to exit (a zombie counts as exited), and
// returns an error if it is still running then. A pid already gone, or
// reused by another process meanwhile, has exited.
func WaitExit(ctx context.Context, pid int, d time.Duration) error {
	start, err := StartTime(pid)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(d)
	for delay := time.Millisecond; Same(pid, start); delay = min(2*delay, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d is still running after %s", pid, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay): // not our child: nothing to wait on but polling
		}
	}
	return nil
}
