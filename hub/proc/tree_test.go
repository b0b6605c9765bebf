//go:build linux

package proc

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self, sh := os.Getpid(), cmd.Process.Pid
	var sleep int
	for deadline := time.Now().Add(10 * time.Second); sleep == 0; { // the shell forks its child soon after it starts
		if time.Now().After(deadline) {
			t.Fatal("the shell started no child")
		}
		for _, p := range Descendants(sh) {
			sleep = p
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	if ppid, err := ParentPID(sleep); err != nil || ppid != sh {
		t.Errorf("ParentPID(sleep) = %d, %v; want %d", ppid, err, sh)
	}
	if !IsDescendant(sleep, self) || !IsDescendant(sh, self) || !IsDescendant(self, self) {
		t.Errorf("the shell and its sleep should descend from the test")
	}
	if IsDescendant(self, sh) || IsDescendant(os.Getppid(), self) {
		t.Errorf("the test does not descend from its child, nor its parent from it")
	}
	if d := Descendants(self); !slices.Contains(d, sh) || !slices.Contains(d, sleep) {
		t.Errorf("Descendants(self) = %v; want the shell %d and its sleep %d", d, sh, sleep)
	}
}
