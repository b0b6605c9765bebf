package shim

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/config"
)

// LockFDEnv names the environment variable through which the daemon hands
// a shim its job lock, already held: the daemon takes the lock before it
// spawns the shim, so there is no moment in which the job looks ownerless
// (a daemon that dies right after spawning would otherwise settle a job
// whose shim is just starting).
const LockFDEnv = "HUB_SHIM_LOCK_FD"

// lockJob takes the job's lock: the inherited one when the daemon passed
// it, else the lock file itself. It returns ErrOwned when another shim holds it.
func lockJob(path string, handed *os.File) (release func(), err error) {
	if handed != nil {
		// Same open file description as the daemon's, as below.
		if err := syscall.Flock(int(handed.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			handed.Close()
			return nil, ErrOwned
		}
		return func() { handed.Close() }, nil
	}
	if v := os.Getenv(LockFDEnv); v != "" {
		os.Unsetenv(LockFDEnv)
		fd, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a file descriptor", LockFDEnv, v)
		}
		// The worker must not inherit it: a worker outliving the shim would
		// keep the job looking alive.
		syscall.CloseOnExec(fd)
		f := os.NewFile(uintptr(fd), path)
		// Same open file description as the daemon's: this re-takes the
		// lock we already hold, and fails if it is somebody else's.
		if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, ErrOwned
		}
		return func() { f.Close() }, nil
	}
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, ErrOwned
	}
	return func() { _ = l.Unlock() }, nil
}

// TakeLock takes job id's lock for a process that stands in for its shim
// (a remote queue's relay): the one the daemon handed over in LockFDEnv,
// else the lock file. ErrOwned when another process holds it.
func TakeLock(paths config.Paths, id string) (release func(), err error) {
	return lockJob(paths.ShimLock(id), nil)
}
