package proc

import (
	"fmt"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// BecomeSubreaper makes the calling process a child subreaper: a process
// descending from it whose parent exits (a double fork, a setsid daemon)
// is re-parented to it instead of to init, so it stays one of
// Descendants(os.Getpid()) and EndLeftovers with Subreaper set finds it.
// It holds for the life of the process and is not inherited by children.
//
// Adopted orphans that exit become the caller's zombies until it exits;
// they are no harm (Descendants and the checks here skip zombies). Never
// reap them with wait4(-1): it would steal exit statuses from os/exec.
func BecomeSubreaper() error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", e)
	}
	return nil
}
