package pgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stat returns the state, process group and session of pid from
// /proc/<pid>/stat; ok is false when the process is gone.
func stat(pid int) (state string, pgid, sid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	pgid, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return f[0], pgid, sid, true
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	st, _, _, ok := stat(pid)
	return ok && st != "Z"
}

// waitGone waits up to d for every pid to have exited.
func waitGone(d time.Duration, pids ...int) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		left := false
		for _, p := range pids {
			left = left || running(p)
		}
		if !left {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// readPID waits for a pid file the test's shell writes.
func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("%s was never written", path)
	return 0
}

// TestGroupKillEndsTree: a command's child forks a grandchild that ignores
// SIGTERM. Both are in the command's group; SIGTERM to the group leaves the
// grandchild running (it ignores it), SIGKILL to the group ends the whole
// tree, though the leader was reaped already.
func TestGroupKillEndsTree(t *testing.T) {
	dir := t.TempDir()
	script := `sh -c 'trap "" TERM; echo $$ > grandchild.pid; exec sleep 1000' & echo $! > child.pid; wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	gc := readPID(t, filepath.Join(dir, "grandchild.pid"))
	t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
	if _, g, _, _ := stat(gc); g != pgid {
		t.Fatalf("the grandchild is in group %d; want the command's, %d", g, pgid)
	}
	if !Alive(pgid) {
		t.Fatal("Alive = false for a running group")
	}

	if err := Signal(pgid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the leader exited cleanly after SIGTERM")
	}
	time.Sleep(100 * time.Millisecond) // what SIGTERM does, it has done by now
	if !running(gc) {
		t.Fatal("the grandchild died of SIGTERM; it was to ignore it (the test proves nothing)")
	}

	if err := Signal(pgid, syscall.SIGKILL); err != nil { // the leader is reaped: the group id still reaches the rest
		t.Fatal(err)
	}
	if !waitGone(5*time.Second, gc) {
		t.Fatalf("grandchild %d survived SIGKILL to the group", gc)
	}
	if err := Signal(pgid, syscall.SIGKILL); err != nil {
		t.Errorf("Signal to a group that is gone = %v; want nil", err)
	}
}

// TestParentDeath: a process that started a command with Start is killed
// (SIGKILL: no chance to clean up); the command, in a group of its own so
// nothing else reaches it, dies with it (Pdeathsig).
func TestParentDeath(t *testing.T) {
	if os.Getenv("PGROUP_TEST_PARENT") == "1" {
		cmd := exec.Command("sleep", "1000")
		if err := Start(cmd); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		select {} // until killed
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestParentDeath$")
	parent.Env = append(os.Environ(), "PGROUP_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent said nothing: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if _, g, _, _ := stat(child); g != child {
		t.Fatalf("the child is in group %d; want one of its own (%d)", g, child)
	}
	if !running(child) {
		t.Fatal("the child is not running before its parent dies")
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !waitGone(5*time.Second, child) {
		t.Fatalf("child %d outlived its killed parent", child)
	}
}

// TestDetach: a detached command leads a session of its own.
func TestDetach(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	Detach(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	if _, pgid, sid, ok := stat(pid); !ok || sid != pid || pgid != pid {
		t.Errorf("detached process %d: group %d, session %d; want both its own", pid, pgid, sid)
	}
}

// TestRefusesInit: pid 1 and below are never signalled, as a group or alone.
func TestRefusesInit(t *testing.T) {
	for _, pid := range []int{-1, 0, 1} {
		if Signal(pid, 0) == nil || SignalPID(pid, 0) == nil {
			t.Errorf("signalling %d was not refused", pid)
		}
	}
	if Alive(1) {
		t.Error("Alive(1) = true; group 1 is never hub's")
	}
}
