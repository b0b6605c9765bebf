package proc

import (
	"strings"

	"golang.org/x/sys/unix"
)

// listsGroups: the table says which group each process is in.
const listsGroups = true

// sZomb is SZOMB of <sys/proc.h>: a process that exited and was not
// waited for.
const sZomb = 5

// fromKinfo makes an entry of the kernel's record (sysctl kern.proc); the
// start time is in microseconds since the epoch.
func fromKinfo(k *unix.KinfoProc) entry {
	pid := int(k.Proc.P_pid)
	sid, _ := unix.Getsid(pid)
	tv := k.Proc.P_starttime
	return entry{pid: pid, ppid: int(k.Eproc.Ppid), pgid: int(k.Eproc.Pgid), sid: sid,
		start: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec)}
}

// info reads one process, and whether it is a zombie.
func info(pid int) (entry, bool, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return entry{}, false, err
	}
	return fromKinfo(k), k.Proc.P_stat == sZomb, nil
}

// tableOK reads every live (not zombie) process from one sysctl.
func tableOK() ([]entry, bool) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, false
	}
	out := make([]entry, 0, len(ks))
	for i := range ks {
		if ks[i].Proc.P_stat != sZomb && ks[i].Proc.P_pid > 0 {
			out = append(out, fromKinfo(&ks[i]))
		}
	}
	return out, true
}

// hasEnv cannot read another process's environment here (it would take
// the kern.procargs2 sysctl, which hub does not parse): a leftover that
// left both the group and the caller's tree is not found by its marker.
func hasEnv(int, string) bool { return false }

// cmdline gives the process's name in brackets (its command line would
// take kern.procargs2): "" when the process is gone.
func cmdline(pid int) string {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return ""
	}
	b := k.Proc.P_comm[:]
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	name := make([]byte, n)
	for i := range n {
		name[i] = byte(b[i])
	}
	return "[" + strings.ToValidUTF8(string(name), "?") + "]"
}

// parentOf returns the parent of pid.
func parentOf(pid int) (int, error) {
	e, _, err := info(pid)
	return e.ppid, err
}
