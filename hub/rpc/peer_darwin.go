package rpc

import "golang.org/x/sys/unix"

// peerPIDOfFD reads LOCAL_PEERPID.
func peerPIDOfFD(fd uintptr) int {
	p, err := unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return 0
	}
	return p
}
