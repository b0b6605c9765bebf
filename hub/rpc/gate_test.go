package rpc

import (
	"context"
	"errors"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

func refusal() *jsonrpc2.Error {
	return Errorf(protocol.CodeShuttingDown, "send it again", "shutting down")
}

// TestGateDrains: once the gate closes, a request in flight is still
// answered whole, a new one is refused at once with the gate's refusal, and
// Drain reports true only after the one in flight was answered.
func TestGateDrains(t *testing.T) {
	g := NewGate(refusal)
	entered, release := make(chan struct{}), make(chan struct{})
	path := serve(t, mux{
		"slow": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
			close(entered)
			<-release
			return "done", nil
		},
		"echo": echo,
	}.handle, &Options{Gate: g})
	c := dial(t, path, nil)
	ctx := testCtx(t)

	slow := make(chan error, 1)
	var got string
	go func() { slow <- c.Call(ctx, "slow", nil, &got) }()
	recv(t, entered, "the slow request to start")
	if !g.Close() || g.Close() {
		t.Fatal("Close: want true once, then false")
	}
	select {
	case <-g.Draining():
	default:
		t.Fatal("Draining is not closed after Close")
	}
	err := c.Call(ctx, "echo", 1, nil)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != protocol.CodeShuttingDown {
		t.Fatalf("a request after Close: %v; want the gate's refusal", err)
	}
	drained := make(chan bool, 1)
	go func() { drained <- g.Drain(waitFor) }()
	select {
	case <-drained:
		t.Fatal("Drain returned while a request was in flight")
	default:
	}
	close(release)
	if err := recv(t, slow, "the slow answer"); err != nil || got != "done" {
		t.Fatalf("the request in flight: %q, %v; want it answered", got, err)
	}
	if !recv(t, drained, "Drain") {
		t.Fatal("Drain = false after every request was answered")
	}
}

// TestGoingAwayMarksDropped: a call left unanswered on a connection whose
// peer said $/goingAway fails with ErrDropped (safe to send again); one on
// a connection that just closed does not.
func TestGoingAwayMarksDropped(t *testing.T) {
	for _, say := range []bool{true, false} {
		path := serve(t, mux{
			"x": func(ctx context.Context, c *Conn, _ *jsonrpc2.Request) (any, error) {
				if say {
					_ = c.Notify(ctx, protocol.NotifyGoingAway, struct{}{})
				}
				c.Close()
				return nil, nil
			},
		}.handle, nil)
		c := dial(t, path, nil)
		err := c.Call(testCtx(t), "x", nil, nil)
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			t.Fatalf("goingAway %v: %v; want a closed connection", say, err)
		}
		if errors.Is(err, ErrDropped) != say {
			t.Errorf("goingAway %v: errors.Is(err, ErrDropped) = %v (%v)", say, !say, err)
		}
	}
}
