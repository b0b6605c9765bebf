//go:build unix

package shim

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// LockFile takes an exclusive lock on f without waiting (flock: it belongs
// to the open file description, so a child that inherits f holds it too).
func LockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// HandLock passes lock, taken with LockFile, to the shim cmd starts: as its
// descriptor 3, named in LockFDEnv.
func HandLock(cmd *exec.Cmd, lock *os.File) {
	cmd.Env = append(cmd.Env, LockFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{lock}
}

// inherited opens the lock the daemon handed over as descriptor v.
func inherited(v, path string) (*os.File, error) {
	fd, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a file descriptor", LockFDEnv, v)
	}
	// The worker must not inherit it: a worker outliving the shim would
	// keep the job looking alive.
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), path), nil
}

// retake takes the handed lock again. Same open file description as the
// daemon's: this re-takes the lock we already hold, and fails if it is
// somebody else's.
func retake(f *os.File) error { return LockFile(f) }
