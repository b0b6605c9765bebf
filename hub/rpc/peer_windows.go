package rpc

import (
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sioAFUnixGetPeerPID is SIO_AF_UNIX_GETPEERPID of <afunix.h>:
// _WSAIOR(IOC_VENDOR, 256).
const sioAFUnixGetPeerPID = 0x58000100

// peerPID is the pid of the process at the other end of an AF_UNIX socket,
// as Windows recorded it when that process connected
// (SIO_AF_UNIX_GETPEERPID): 0 when rwc is no unix socket or Windows does
// not say.
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
		var p, n uint32
		if windows.WSAIoctl(windows.Handle(fd), sioAFUnixGetPeerPID, nil, 0, (*byte)(unsafe.Pointer(&p)), uint32(unsafe.Sizeof(p)), &n, nil, 0) == nil {
			pid = int(p)
		}
	})
	return pid
}
