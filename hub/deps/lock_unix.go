//go:build unix

package deps

import (
	"os"
	"syscall"
)

// lockKey takes an exclusive lock on the file at p without waiting; ok is
// false when another process holds it.
func lockKey(p string) (unlock func(), ok bool) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
