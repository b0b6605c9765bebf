package e2e

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestMCPSurvivesDaemonRestart: `hub mcp` outlives its daemon. After kill -9
// of the daemon, the next tool call starts a new one and sees the same jobs.
func TestMCPSurvivesDaemonRestart(t *testing.T) {
	w := newWorld(t)
	ctx := deadline(t, 60*time.Second)
	repo := sampleRepo(t, "repo")
	cmd := exec.Command(w.bin, "mcp")
	cmd.Env = w.env.Vars
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
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
