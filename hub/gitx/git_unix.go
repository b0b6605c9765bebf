//go:build unix

package gitx

import (
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
