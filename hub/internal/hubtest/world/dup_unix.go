//go:build unix

package world

import (
	"os"
	"syscall"
)

// dupLock duplicates the lock's descriptor (the same open file
// description, so the same flock), never inherited by a worker.
func dupLock(lock *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(lock.Fd()))
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd) // a worker must never hold the job's lock
	return os.NewFile(uintptr(fd), lock.Name()), nil
}
