package shim

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/windows"
)

// LockFile takes an exclusive lock on all of f without waiting (LockFileEx).
func LockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, 1, 0, &ol)
}

// HandLock passes lock, taken with LockFile, to the shim cmd starts: an
// inherited handle, its value in LockFDEnv. What this relies on (built,
// not run on Windows yet): Windows releases a byte-range lock when the
// last handle to its file object closes, and the shim's inherited handle is
// one, so the lock holds while the shim lives, after the daemon closed its
// own handle, as flock's does on unix.
func HandLock(cmd *exec.Cmd, lock *os.File) {
	cmd.Env = append(cmd.Env, LockFDEnv+"="+strconv.FormatUint(uint64(lock.Fd()), 10))
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.AdditionalInheritedHandles = append(cmd.SysProcAttr.AdditionalInheritedHandles, syscall.Handle(lock.Fd()))
}

// inherited opens the lock the daemon handed over as handle v, and keeps
// the worker from inheriting it.
func inherited(v, path string) (*os.File, error) {
	h, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a handle", LockFDEnv, v)
	}
	_ = windows.SetHandleInformation(windows.Handle(h), windows.HANDLE_FLAG_INHERIT, 0)
	return os.NewFile(uintptr(h), path), nil
}

// retake cannot take the handed lock again here: the daemon's lock is its
// process's, so a second LockFileEx from the shim would conflict with it.
// The lock is held through the shared file object (see HandLock).
func retake(*os.File) error { return nil }
