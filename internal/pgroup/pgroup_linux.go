package pgroup

import "syscall"

// setGroup: a group of its own, and SIGKILL should the thread that
// started it die (os/exec starts from a locked thread only when asked, so
// in practice: should hub die).
func setGroup(a *syscall.SysProcAttr) {
	a.Setpgid = true
	a.Pdeathsig = syscall.SIGKILL
}
