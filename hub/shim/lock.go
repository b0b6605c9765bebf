package shim

import (
	"fmt"
	"os"

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
		if err := retake(handed); err != nil {
			handed.Close()
			return nil, ErrOwned
		}
		return func() { handed.Close() }, nil
	}
	if v := os.Getenv(LockFDEnv); v != "" {
		os.Unsetenv(LockFDEnv)
		f, err := inherited(v, path)
		if err != nil {
			return nil, err
		}
		if err := retake(f); err != nil {
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
