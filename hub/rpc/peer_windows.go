package rpc

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// sioAFUnixGetPeerPID is SIO_AF_UNIX_GETPEERPID of <afunix.h>:
// _WSAIOR(IOC_VENDOR, 256).
const sioAFUnixGetPeerPID = 0x58000100

// peerPIDOfFD asks Windows for the pid it recorded when the peer of an
// AF_UNIX socket connected (SIO_AF_UNIX_GETPEERPID): 0 when it does not say.
func peerPIDOfFD(fd uintptr) int {
	var p, n uint32
	if windows.WSAIoctl(windows.Handle(fd), sioAFUnixGetPeerPID, nil, 0, (*byte)(unsafe.Pointer(&p)), uint32(unsafe.Sizeof(p)), &n, nil, 0) != nil {
		return 0
	}
	return int(p)
}
