package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestStartTimeAndGroups(t *testing.T) {
	self, err := StartTime(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("StartTime(self) = %d, %v", self, err)
	}
	if !Same(os.Getpid(), self) || Same(os.Getpid(), self+1) {
		t.Error("Same does not tell processes by start time")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	start, err := StartTime(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if !GroupAlive(pgid) {
		t.Fatal("new group not alive")
	}
	// A wrong start time means the pid is someone else's: nothing is signalled.
	if err := KillGroup(pgid, start+1, syscall.SIGKILL); err == nil {
		t.Error("KillGroup signalled a group whose leader's start time does not match")
	}
	if !GroupAlive(pgid) {
		t.Fatal("group died from a refused kill")
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	StopGroup(pgid, start, 2*time.Second)
	<-done
	if GroupAlive(pgid) {
		t.Error("group alive after StopGroup")
	}
	if err := KillGroup(1, 0, syscall.SIGTERM); err == nil {
		t.Error("KillGroup(1) must refuse")
	}
}
