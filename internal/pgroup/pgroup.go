// Package pgroup starts a command as the head of a process group of its own
// (on Windows: a Job Object) and signals that group, so that a command and
// everything it started can be ended together. It is the one place that
// knows how each platform does this; hub/proc (process identity, leftovers)
// and the packages that run commands (agent/tool, hub/engine) go through it.
//
// It must never signal anything but the group or process it is given: who
// may be signalled (a pid reused since?) is the caller's to decide.
//
// What each platform gives:
//   - Linux: setpgid, and Pdeathsig (SIGKILL) so the head dies with the
//     thread that started it, should hub die without ending it.
//   - macOS and the other unixes: setpgid only. There is no parent-death
//     signal: a command whose hub died unannounced keeps running until
//     whoever recovers the job (the daemon's or the shim's leftover sweep)
//     ends its group.
//   - Windows: no process groups and no signals. The command goes into a
//     Job Object with KILL_ON_JOB_CLOSE: ending the group terminates the
//     job (the whole tree, at once; SIGTERM gets no grace, there is nothing
//     gentler to send), and when hub dies its handle to the job closes and
//     the tree goes with it (parent death). A child the command starts in
//     the instant between its creation and its assignment to the job is
//     not in the job.
package pgroup

import (
	"os/exec"
	"syscall"
)

// Start starts cmd as the head of a group of its own (see the package
// comment for what that means here), keeping whatever else cmd.SysProcAttr
// says. The group's id is cmd.Process.Pid.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setGroup(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return err
	}
	return started(cmd)
}

// Detach makes cmd, once started, independent of the caller's terminal and
// session (a daemon, a shim): a session of its own on unix; on Windows a
// process group of its own and no console.
func Detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	detach(cmd.SysProcAttr)
}
