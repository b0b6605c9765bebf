package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hub-agents/hub/internal/pgroup"
	"github.com/hub-agents/hub/internal/text"
)

// runShellArgs are run_shell's arguments.
type runShellArgs struct {
	Command  string `json:"command" jsonschema:"Shell command line."`
	TimeoutS int64  `json:"timeout_s,omitempty" jsonschema:"Timeout in seconds."`
}

// homeDir returns HOME for commands: Options.Home, or a temporary directory
// made on first use.
func (w *Workspace) homeDir() (string, error) {
	w.homeOnce.Do(func() {
		if w.opt.Home != "" {
			w.home = w.opt.Home
			return
		}
		w.home, w.homeErr = os.MkdirTemp("", "hub-tool-home-")
		w.homeMade = w.homeErr == nil
	})
	if w.home == "" && w.homeErr == nil {
		return "", errors.New("the workspace is closed")
	}
	return w.home, w.homeErr
}

// environ returns the environment of commands: Options.Env as given, or a
// minimal one, with HOME added when missing. Nothing comes from the hub's
// own environment but PATH, and that only in the minimal one.
func (w *Workspace) environ() ([]string, error) {
	env := w.opt.Env
	if env == nil {
		path := os.Getenv("PATH")
		if path == "" {
			path = "/usr/local/bin:/usr/bin:/bin"
		}
		env = []string{"PATH=" + path, "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=" + os.TempDir()}
	}
	env = append([]string(nil), env...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "HOME=") {
			return env, nil
		}
	}
	home, err := w.homeDir()
	if err != nil {
		return nil, fmt.Errorf("cannot make a HOME for commands: %v", err)
	}
	return append(env, "HOME="+home), nil
}

func (w *Workspace) runShell(ctx context.Context, a runShellArgs) (string, error) {
	command := a.Command
	if strings.TrimSpace(command) == "" {
		return "", errors.New("command is empty; give a shell command line")
	}
	timeout := w.opt.ShellTimeout
	if a.TimeoutS != 0 { // absent: at least 1 when given
		timeout = time.Duration(a.TimeoutS) * time.Second
	}
	env, err := w.environ()
	if err != nil {
		return "", err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer pr.Close()
	argv := []string{shellPath, "-c", command}
	if w.opt.Wrap != nil {
		if argv, err = w.opt.Wrap(argv); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.root
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = pw // one pipe for both: output stays interleaved
	cmd.Stderr = pw
	var busyOnce sync.Once
	w.busy.Add(1) // before Start: the command may be seen running at once
	idle := func() { busyOnce.Do(func() { w.busy.Add(-1) }) }
	defer idle()
	// A group of its own, ended with hub where the platform can.
	err = pgroup.Start(cmd)
	pw.Close() // the children hold the write end now
	if err != nil {
		return "", fmt.Errorf("cannot start the command: %v", err)
	}
	pgid := cmd.Process.Pid

	out := newHeadTail(w.opt.MaxOutput)
	drained := make(chan struct{})
	go func() {
		io.Copy(out, pr) // ends at EOF, when every process holding the pipe is gone
		close(drained)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	select {
	case <-exited:
	case <-timer.C:
		idle()
		stopped = "timeout"
	case <-ctx.Done():
		stopped = "cancel"
	}
	// Stop the whole group, leftovers in the background included: first
	// SIGTERM, then SIGKILL once they are gone or the grace is over.
	signalGroup(pgid, syscall.SIGTERM)
	grace := time.NewTimer(killGrace)
	select {
	case <-bothDone(exited, drained):
	case <-grace.C:
	}
	grace.Stop()
	signalGroup(pgid, syscall.SIGKILL)
	<-exited
	select {
	case <-drained:
	case <-time.After(drainWait):
		// Someone outside the group (a daemon that made its own session)
		// still holds the pipe: stop reading.
		pr.Close()
		<-drained
	}

	text := out.String()
	switch stopped {
	case "timeout":
		return fmt.Sprintf("timed out after %s; the command and its children were stopped. If it needs longer, set timeout_s (at most %d), or run a smaller step.\n%s",
			seconds(timeout), int(w.opt.MaxShellTimeout/time.Second), orNoOutput(text)), nil
	case "cancel":
		return "", fmt.Errorf("cancelled (%v); the command and its children were stopped", context.Cause(ctx))
	}
	return fmt.Sprintf("%s\n%s", exitStatus(cmd.ProcessState, waitErr), orNoOutput(text)), nil
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
}

func orNoOutput(s string) string {
	if s == "" {
		return "(no output)"
	}
	return s
}

func exitStatus(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("exit code -1 (%v)", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("exit code %d (killed by signal %v)", 128+int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}

// signalGroup signals process group pgid (pgroup.Signal: the group's
// leader may be reaped already, the signal still reaches the leftovers).
// (Once none is left, the id could in theory be reused by a new group in
// the instant before the signal; pids wrap far too slowly for that to
// matter.)
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = pgroup.Signal(pgid, sig)
	}
}

func bothDone(a, b <-chan struct{}) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		<-a
		<-b
		close(c)
	}()
	return c
}

// newHeadTail keeps the first and the last of a command's output, max
// bytes in all, as every command hub runs does (text.HeadTail).
func newHeadTail(max int) *text.HeadTail { return &text.HeadTail{Max: max} }
