package daemon

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// TestRefuseOwnWorker: reply, steer and stop of a job are refused to a
// process below the job's shim, and to a caller gone since it connected
// while the shim lives; anyone else, and any caller once the shim is gone,
// passes.
func TestRefuseOwnWorker(t *testing.T) {
	// A stand-in shim (sh) with a worker below it (sleep).
	shimCmd := exec.Command("sh", "-c", `sleep 60 & echo $!; wait`)
	out, err := shimCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := shimCmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() {
		_ = shimCmd.Process.Kill()
		if p, err := os.FindProcess(worker); err == nil {
			_ = p.Kill()
		}
		_ = shimCmd.Wait()
	})
	shimStart, err := proc.StartTime(shimCmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: "job1", ShimPID: shimCmd.Process.Pid, ShimStart: shimStart}

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	as := func(pid int) context.Context {
		start, err := proc.StartTime(pid)
		return context.WithValue(context.Background(), callerKey{}, caller{pid: pid, start: start, known: err == nil})
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		job  *store.Job
		msg  string // "" passes
	}{
		{"the worker", as(worker), j, "own worker cannot stop"},
		{"the shim itself", as(j.ShimPID), j, "own worker cannot stop"},
		{"the supervisor", as(os.Getpid()), j, ""},
		{"a caller gone since it connected", as(gone.Process.Pid), j, "is gone"},
		{"no caller (in process)", context.Background(), j, ""},
		{"a peer outside the pid namespace", context.WithValue(context.Background(), callerKey{}, caller{}), j, ""},
		{"the worker of a job whose shim is gone", as(worker), &store.Job{ID: "job1", ShimPID: j.ShimPID, ShimStart: shimStart + 1}, ""},
		{"the worker of a job not started", as(worker), &store.Job{ID: "job1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseOwnWorker(tc.ctx, tc.job, "stop")
			if tc.msg == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			je, ok := err.(*jsonrpc2.Error)
			if !ok || je.Code != protocol.CodeRefused || !strings.Contains(je.Message, tc.msg) || je.Data == nil {
				t.Errorf("got %v, want refused with %q and a hint", err, tc.msg)
			}
		})
	}
}
