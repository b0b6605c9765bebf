package rpc

import "syscall"

// peerPIDOfFD reads SO_PEERCRED, in this process's pid namespace: 0 when the
// peer's pid has no number here (it lives in a pid namespace this one
// cannot see).
func peerPIDOfFD(fd uintptr) int {
	u, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return 0
	}
	return int(u.Pid)
}
