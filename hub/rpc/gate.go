package rpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// ErrDropped marks a Call whose connection the peer closed after saying
// ($/goingAway) that it acted on none of the requests it left unanswered:
// like ErrNotSent, the request may be sent again.
var ErrDropped = errors.New("the peer closed the connection without acting on the request")

// Gate lets a server shut down without cutting a request off halfway. Set
// in Options, it counts every request of every connection from the moment
// it is read until its answer is written. Close makes the connections
// answer new requests with the Gate's refusal, at once; Drain waits for
// the requests in flight to be answered and then tells each connection
// that it is going away ($/goingAway), so its client knows that whatever
// is still unanswered was not acted on. The server then closes them.
type Gate struct {
	refusal func() *jsonrpc2.Error

	mu       sync.Mutex
	n        int
	closing  bool
	draining chan struct{}
	idle     chan struct{}
	conns    map[*Conn]struct{}
}

// NewGate returns an open gate; refusal answers requests once it is closed.
func NewGate(refusal func() *jsonrpc2.Error) *Gate {
	return &Gate{refusal: refusal, draining: make(chan struct{}), idle: make(chan struct{}), conns: map[*Conn]struct{}{}}
}

// Draining is closed when Close is called: handlers that wait long (a
// wait for jobs) end early on it, with the refusal.
func (g *Gate) Draining() <-chan struct{} { return g.draining }

// Close turns new requests away; it reports whether this call closed it.
func (g *Gate) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.closing = true
	close(g.draining)
	if g.n == 0 {
		close(g.idle)
	}
	return true
}

// Drain waits up to d for every request admitted before Close to be
// answered. If they all were, it sends $/goingAway on every connection and
// reports true; otherwise it sends nothing (a client cannot know what a
// request cut off did) and reports false.
func (g *Gate) Drain(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.idle:
	case <-t.C:
		return false
	}
	g.mu.Lock()
	conns := make([]*Conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.Notify(ctx, protocol.NotifyGoingAway, struct{}{})
		cancel()
	}
	return true
}

// enter admits a request, or reports that the gate is closed.
func (g *Gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.n++
	return true
}

// leave ends a request enter admitted, once its answer is written.
func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.closing && g.n == 0 {
		close(g.idle)
	}
}

func (g *Gate) add(c *Conn) {
	g.mu.Lock()
	g.conns[c] = struct{}{}
	g.mu.Unlock()
	go func() {
		<-c.DisconnectNotify()
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}()
}
