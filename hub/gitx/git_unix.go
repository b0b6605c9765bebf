//go:build unix

package gitx

import (
	"os"
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs git in its own process group and kills the whole
// group when the context is done, so helpers git started (a shell alias, a
// filter, ssh) die with it instead of holding its output open.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// writable asks the kernel whether hub's user may write into dir
// (access(2) with W_OK): EROFS on a read-only mount, EACCES where the
// permissions say no. Nothing is written.
func writable(dir string) error {
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
