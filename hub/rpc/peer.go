package rpc

import (
	"io"
	"syscall"
)

// peerPID is the pid of the process at the other end of a unix socket, as
// the kernel recorded it when that process connected: 0 when rwc is no
// unix socket, or the platform does not say (peerPIDOfFD, per platform).
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
	_ = raw.Control(func(fd uintptr) { pid = peerPIDOfFD(fd) })
	return pid
}
