package client

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// Session is a long-lived connection to the daemon for a front end that
// outlives daemons (`hub mcp`): when the daemon went away, the next call
// connects again, starting a daemon if none answers, and resubscribes from
// the last event seen, so no notification is lost across the restart.
//
// A call in flight when the daemon dies fails (it may or may not have been
// done); only calls made after the loss are sent to the new daemon.
// Session is safe for concurrent use.
type Session struct {
	paths     config.Paths
	o         Options
	subscribe bool

	mu     sync.Mutex
	c      *Client
	cursor int64 // newest job/event cursor delivered
}

// NewSession connects. With subscribe, it subscribes to notifications,
// which reach o.Handler.
func NewSession(ctx context.Context, paths config.Paths, o Options, subscribe bool) (*Session, error) {
	s := &Session{paths: paths, o: o, subscribe: subscribe}
	inner := o.Handler
	s.o.Handler = func(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == protocol.NotifyJobEvent && req.Params != nil {
			var ev struct {
				Cursor int64 `json:"cursor"`
			}
			if json.Unmarshal(*req.Params, &ev) == nil {
				s.mu.Lock()
				if ev.Cursor > s.cursor {
					s.cursor = ev.Cursor
				}
				s.mu.Unlock()
			}
		}
		if inner != nil {
			return inner(ctx, c, req)
		}
		return nil, nil
	}
	if _, err := s.conn(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// conn returns a live client, connecting again if the last one was lost.
func (s *Session) conn(ctx context.Context) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		select {
		case <-s.c.DisconnectNotify():
			s.c = nil
		default:
			return s.c, nil
		}
	}
	c, err := Connect(ctx, s.paths, s.o)
	if err != nil {
		return nil, err
	}
	if s.subscribe {
		res, err := c.Daemon().Subscribe(ctx, protocol.SubscribeParams{Since: s.cursor})
		if err != nil {
			c.Close()
			return nil, err
		}
		if s.cursor == 0 {
			s.cursor = res.Cursor
		}
	}
	s.c = c
	return c, nil
}

// Call makes one call on a live connection. A request that never left
// (the daemon died before we noticed), or a read-only one cut off by the
// daemon's death, is sent again on a new connection.
func (s *Session) Call(ctx context.Context, method string, params, result any) error {
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	// The connection's own Call (c.Conn), not the Client's: the Session
	// sends again itself, on a connection it resubscribed.
	return sendAgain(ctx, s.paths, method, func() error { return c.Conn.Call(ctx, method, params, result) }, func() error {
		s.drop(c)
		c, err = s.conn(ctx)
		return err
	})
}

// Daemon is the daemon's typed client over s: its calls are s's, on a
// live connection.
func (s *Session) Daemon() protocol.DaemonClient { return protocol.DaemonClient{C: s} }

// drop forgets c if it is still the current connection.
func (s *Session) drop(c *Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == c {
		s.c.Close()
		s.c = nil
	}
}

// Close closes the current connection.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	s.c = nil
	return err
}
