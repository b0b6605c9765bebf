//go:build unix

package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestMCPSurvivesDaemonRestart: `hub mcp` outlives its daemon. After kill -9
// of the daemon, the next tool call starts a new one and sees the same jobs.
func TestMCPSurvivesDaemonRestart(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	repo := sampleRepo(t, "repo")
	cs, _ := w.mcpSession(ctx, "2025-06-18")
	var started protocol.StartResult
	decodeStructured(t, callTool(t, ctx, cs, "start", map[string]any{"task": "t", "repo": repo, "engine": "exec", "exec": "echo x > x.txt"}), &started)

	c := w.connect(ctx) // the daemon hub mcp started
	if err := syscall.Kill(c.Info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.DisconnectNotify()

	var wr protocol.WaitResult
	decodeStructured(t, callTool(t, ctx, cs, "wait", map[string]any{"ids": []string{started.ID}, "timeout_s": 30}), &wr)
	if !wr.Done || wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("after the restart: %+v", wr)
	}
	c2 := w.connect(ctx)
	if c2.Info.PID == c.Info.PID {
		t.Fatal("no new daemon")
	}
}

// TestMCPWaitProgress: while wait blocks, a client that sent a progress token
// hears how the jobs go; one that did not still gets its result.
func TestMCPWaitProgress(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	repo := sampleRepo(t, "repo")
	cs, progress := w.mcpSession(ctx, "2025-11-25")
	var started protocol.StartResult
	decodeStructured(t, callTool(t, ctx, cs, "start", map[string]any{"task": "t", "repo": repo, "engine": "exec",
		"exec": `for i in 1 2 3 4 5 6 7 8 9 10 11 12; do hub progress "step $i"; sleep 0.25; done; echo done > done.txt`}), &started)
	var wr protocol.WaitResult
	decodeStructured(t, callToolMeta(t, ctx, cs, "wait", map[string]any{"ids": []string{started.ID}, "timeout_s": 30}, mcp.Meta{"progressToken": "p"}), &wr)
	if !wr.Done || wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("wait: %+v", wr)
	}
	select {
	case msg := <-progress:
		if !strings.Contains(msg, started.ID) && !strings.Contains(msg, "step") {
			t.Errorf("progress message %q names neither the job nor its step", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("a 3-second wait with a progress token sent no progress")
	}
}
