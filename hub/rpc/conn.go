package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// Handler handles one request or notification. For a notification
// (req.Notif) the result is ignored and a returned error is only logged.
//
// Handlers for requests run concurrently, each in its own goroutine, with a
// ctx that is cancelled by $/cancelRequest or when the connection closes.
// Handlers for notifications run one at a time, in arrival order, per
// connection. A handler may call c.Call and c.Notify, including back to the
// peer that sent req.
//
// Return a *jsonrpc2.Error (see Errorf) to choose the code; any other error
// becomes CodeInternal with the error's text. A handler that panics answers
// CodeInternal; the connection keeps serving.
type Handler func(ctx context.Context, c *Conn, req *jsonrpc2.Request) (any, error)

// Options tune a connection. A nil *Options, and zero fields, mean the
// defaults.
type Options struct {
	// MaxConcurrent is the number of requests whose handlers run at once
	// per connection; default 32. Extra requests wait (in a goroutine,
	// never in the read loop).
	MaxConcurrent int
	// MaxPending is the number of requests that may wait for one of the
	// MaxConcurrent slots; default 1024. A request beyond that is answered
	// at once with CodeUnavailable "server busy; retry".
	MaxPending int
	// MaxFrameBytes is the largest frame body accepted or sent; default
	// 16 MiB. A peer that announces a larger frame gets an error and the
	// connection is closed.
	MaxFrameBytes int64
	// Logger gets the transport's warnings (bad frames, handler errors and
	// panics). nil discards them. It must never write to stdout.
	Logger *zerolog.Logger
	// Gate, if set, counts this side's requests in flight and refuses new
	// ones once closed (see Gate): a server's graceful shutdown.
	Gate *Gate
}

const (
	defaultMaxConcurrent = 32
	defaultMaxPending    = 1024
	defaultMaxFrameBytes = 16 << 20

	// notifQueueLimit bounds the notifications waiting for the handler.
	// A peer that gets this far ahead is flooding; its connection is closed
	// rather than notifications dropped.
	notifQueueLimit = 1 << 16
)

func (o *Options) resolve() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = defaultMaxConcurrent
	}
	if r.MaxPending <= 0 {
		r.MaxPending = defaultMaxPending
	}
	if r.MaxFrameBytes <= 0 {
		r.MaxFrameBytes = defaultMaxFrameBytes
	}
	return r
}

// Conn is one JSON-RPC connection, client or server side (the protocol is
// symmetric: either end may call the other). It wraps a *jsonrpc2.Conn. Its
// methods are safe for concurrent use.
type Conn struct {
	jc    *jsonrpc2.Conn
	h     Handler
	log   zerolog.Logger
	sem   chan struct{} // one token per running request handler
	ready chan struct{} // closed once jc is set and onConn has run

	maxPending int
	nextID     atomic.Uint64

	// reqMu guards the requests in flight (waiting or running), by id, and
	// the number waiting for a slot.
	reqMu    sync.Mutex
	inflight map[jsonrpc2.ID]context.CancelCauseFunc
	waiting  int

	// notifMu guards the notifications waiting for the worker.
	notifMu   sync.Mutex
	notifQ    []queuedNotif
	notifWake chan struct{}

	valuesMu sync.Mutex
	values   map[any]any

	peerPID int // see PeerPID

	gate      *Gate       // see Options.Gate
	goingAway atomic.Bool // the peer sent $/goingAway
}

type queuedNotif struct {
	ctx context.Context
	req *jsonrpc2.Request
}

// NewConn starts serving rwc and returns the connection. h handles what the
// peer sends; h may be nil for a pure client, and then every incoming request
// is answered with -32601 and notifications are dropped. The connection is
// closed when ctx is done, when the peer hangs up, or by Close; rwc belongs
// to the Conn from now on.
func NewConn(ctx context.Context, rwc io.ReadWriteCloser, h Handler, opts *Options) *Conn {
	return newConn(ctx, rwc, h, opts, nil)
}

// newConn is NewConn with a hook that runs before the first incoming message
// reaches h.
func newConn(ctx context.Context, rwc io.ReadWriteCloser, h Handler, opts *Options, onConn func(*Conn)) *Conn {
	o := opts.resolve()
	c := &Conn{
		h:          h,
		log:        zerolog.Nop(),
		sem:        make(chan struct{}, o.MaxConcurrent),
		ready:      make(chan struct{}),
		maxPending: o.MaxPending,
		inflight:   map[jsonrpc2.ID]context.CancelCauseFunc{},
		notifWake:  make(chan struct{}, 1),
		peerPID:    peerPID(rwc),
		gate:       o.Gate,
	}
	if o.Logger != nil {
		c.log = *o.Logger
	}
	s := newStream(rwc, o.MaxFrameBytes, &c.log)
	c.jc = jsonrpc2.NewConn(ctx, s, dispatcher{c}, jsonrpc2.SetLogger(printfLogger{&c.log}))
	go c.notifLoop()
	if c.gate != nil {
		c.gate.add(c)
	}
	if onConn != nil {
		onConn(c)
	}
	close(c.ready)
	return c
}

// Call sends a request and decodes the result into result (which may be
// nil). If ctx is done before the answer, Call sends the notification
// $/cancelRequest {"id": <id>} to the peer and returns ctx.Err(). An error
// answer from the peer comes back as a *jsonrpc2.Error; a closed connection
// as an error wrapping jsonrpc2.ErrClosed.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := jsonrpc2.ID{Num: c.nextID.Add(1)} // from 1: jsonrpc2 treats 0 as "unset"
	w, err := c.jc.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return fmt.Errorf("call %s: %w (%w)", method, ErrNotSent, err)
	}
	err = w.Wait(ctx, result)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Don't make the caller wait on a write to a peer that may be
		// stuck; the cancel is advisory anyway.
		go func() {
			_ = c.jc.Notify(context.Background(), protocol.MethodCancelRequest, cancelParams{ID: id})
		}()
		return ctx.Err()
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je
	}
	if errors.Is(err, jsonrpc2.ErrClosed) {
		if c.goingAway.Load() {
			return fmt.Errorf("call %s: %w (%w)", method, ErrDropped, err)
		}
		return fmt.Errorf("call %s: %w", method, err)
	}
	return fmt.Errorf("decode result of %s: %w", method, err)
}

// Notify sends a notification. It returns once the notification is written.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.jc.Notify(ctx, method, params); err != nil {
		return fmt.Errorf("notify %s: %w", method, err)
	}
	return nil
}

// Close closes the connection: pending Calls fail and the handlers' ctxs are
// cancelled. Closing a closed Conn does nothing.
func (c *Conn) Close() error {
	err := c.jc.Close()
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return nil
	}
	return err
}

// DisconnectNotify returns a channel that is closed when the connection is
// closed, by either end.
func (c *Conn) DisconnectNotify() <-chan struct{} { return c.jc.DisconnectNotify() }

// PeerPID is the pid of the process at the other end, when the connection
// is a unix socket: the process that connected (for a server's Conn) or
// that listened (for a client's), as the kernel recorded it at connect time
// (SO_PEERCRED), in this process's pid namespace. It is 0 when not known: no
// unix socket, not Linux, or a peer in a pid namespace this process cannot
// see. The peer may have exited since, and its pid been reused: check its
// start time (hub/proc) before trusting the number.
func (c *Conn) PeerPID() int { return c.peerPID }

// SetValue stores per-connection user data under key; a nil v deletes it.
func (c *Conn) SetValue(key, v any) {
	c.valuesMu.Lock()
	defer c.valuesMu.Unlock()
	if v == nil {
		delete(c.values, key)
		return
	}
	if c.values == nil {
		c.values = map[any]any{}
	}
	c.values[key] = v
}

// Value returns what SetValue stored under key, or nil.
func (c *Conn) Value(key any) any {
	c.valuesMu.Lock()
	defer c.valuesMu.Unlock()
	return c.values[key]
}

// cancelParams are the params of $/cancelRequest.
type cancelParams struct {
	ID jsonrpc2.ID `json:"id"`
}

// printfLogger adapts zerolog to jsonrpc2's logger, which reports protocol
// errors that close a connection and answers nobody asked for.
type printfLogger struct{ log *zerolog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn().Msg(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
