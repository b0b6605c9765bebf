package world

import (
	"os"

	"golang.org/x/sys/windows"
)

// dupLock duplicates the lock's handle (the same file object), not
// inheritable: a worker must never hold the job's lock.
func dupLock(lock *os.File) (*os.File, error) {
	self := windows.CurrentProcess()
	var h windows.Handle
	if err := windows.DuplicateHandle(self, windows.Handle(lock.Fd()), self, &h, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(h), lock.Name()), nil
}
