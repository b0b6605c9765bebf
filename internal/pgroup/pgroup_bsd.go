//go:build unix && !linux

package pgroup

import "syscall"

// setGroup: a group of its own. No parent-death signal exists here
// (Pdeathsig is Linux's): should hub die unannounced, the group keeps
// running until the job's recovery ends it.
func setGroup(a *syscall.SysProcAttr) {
	a.Setpgid = true
}
