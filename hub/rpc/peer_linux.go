package rpc

import (
	"io"
	"syscall"
)

// peerPID is the pid of the process at the other end of a unix socket, as
// the kernel recorded it when that process connected (SO_PEERCRED), in this
// process's pid namespace: 0 when rwc is no unix socket, or the peer's pid
// has no number here (it lives in a pid namespace this one cannot see).
func peerPID(rwc io.ReadWriteCloser) int {
	sc, ok := rwc.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if u, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(u.Pid)
		}
	})
	return pid
}
