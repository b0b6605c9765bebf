package rpc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// TestPeerPID: a server's Conn knows the pid of the process that connected,
// here a child process; a Conn over something other than a unix socket
// knows none.
func TestPeerPID(t *testing.T) {
	path := sockPath(t)
	serveAt(t, path, mux{"peer": func(_ context.Context, c *Conn, _ *jsonrpc2.Request) (any, error) {
		return c.PeerPID(), nil
	}}.handle, nil, nil)

	// This process as the peer; and the client side sees the server (also this process).
	c := dial(t, path, nil)
	var got int
	if err := c.Call(testCtx(t), "peer", nil, &got); err != nil {
		t.Fatal(err)
	}
	if got != os.Getpid() || c.PeerPID() != os.Getpid() {
		t.Errorf("peer pid %d, client's peer pid %d; want %d", got, c.PeerPID(), os.Getpid())
	}

	// A child process as the peer: it checks the answer names itself.
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerPIDHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RPC_PEER_SOCKET="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child peer: %v\n%s", err, out)
	}

	a, b := net.Pipe()
	defer b.Close()
	if p := NewConn(context.Background(), a, nil, nil); p.PeerPID() != 0 {
		t.Errorf("a pipe's peer pid = %d, want 0", p.PeerPID())
	} else {
		p.Close()
	}
}

// TestPeerPIDHelper is TestPeerPID's child: it asks the server for its peer's pid.
func TestPeerPIDHelper(t *testing.T) {
	path := os.Getenv("RPC_PEER_SOCKET")
	if path == "" {
		t.Skip("run by TestPeerPID")
	}
	c := dial(t, path, nil)
	var got int
	if err := c.Call(testCtx(t), "peer", nil, &got); err != nil {
		t.Fatal(err)
	}
	if got != os.Getpid() {
		t.Fatalf("the server saw peer pid %d; this child is %d", got, os.Getpid())
	}
}
