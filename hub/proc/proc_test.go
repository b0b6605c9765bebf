//go:build linux

package proc

import (
	"os"
	"os/exec"
	"strconv"
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

func TestStopSession(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sid := cmd.Process.Pid
	start, err := StartTime(sid)
	if err != nil {
		t.Fatal(err)
	}
	members := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if f, err := stat(e.Name()); err == nil && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); members() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	// A live leader is left alone: under another start time (a reused
	// pid), or its own (it is not dead).
	if n := StopSession(sid, start+1, 100*time.Millisecond); n != 0 || members() < 3 {
		t.Fatalf("StopSession with a live leader of another start time signalled %d", n)
	}
	if n := StopSession(sid, start, 100*time.Millisecond); n != 0 || members() < 3 {
		t.Fatalf("StopSession with the leader alive signalled %d", n)
	}
	// The leader dies; what it started stays in its session until stopped.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if members() < 2 {
		t.Fatal("the leader's children went with it; nothing to test")
	}
	if n := StopSession(sid, start, 2*time.Second); n < 2 {
		t.Errorf("StopSession signalled %d processes, want the 2 left", n)
	}
	if n := members(); n != 0 {
		t.Errorf("%d processes left in the session", n)
	}
}
