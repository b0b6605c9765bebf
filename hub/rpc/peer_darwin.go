package rpc

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerPID is the pid of the process at the other end of a unix socket, as
// the kernel recorded it when that process connected (LOCAL_PEERPID): 0
// when rwc is no unix socket.
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
		if p, err := unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID); err == nil {
			pid = p
		}
	})
	return pid
}
