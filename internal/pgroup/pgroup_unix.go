//go:build unix

package pgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

func started(*exec.Cmd) error { return nil }

func detach(a *syscall.SysProcAttr) { a.Setsid = true }

// Signal sends sig to the process group pgid. The group's head may be
// reaped already: the kernel keeps its id for the group while any member
// lives, so the signal reaches the rest. A group that is gone is no error.
// Signal 0 only checks that the group exists (see Alive).
func Signal(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("no process group to signal")
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// SignalPID sends sig to the one process pid. A process that is gone is no
// error.
func SignalPID(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return errors.New("no process to signal")
	}
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Alive reports whether the group pgid still has a process, zombies
// included (the caller's hub/proc tells those apart where it can).
func Alive(pgid int) bool {
	return pgid > 1 && syscall.Kill(-pgid, 0) == nil
}
