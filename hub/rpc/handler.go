package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// dispatcher is the jsonrpc2.Handler of a Conn. jsonrpc2 calls Handle inline
// in its read loop, so Handle never waits for a handler: requests go to
// goroutines behind the semaphore, notifications to the per-connection
// queue. It only writes inline (answers it can give at once), which applies
// back-pressure to a peer that floods without reading.
type dispatcher struct{ c *Conn }

// errCancelledByPeer is the cause of a request ctx cancelled by
// $/cancelRequest.
var errCancelledByPeer = errors.New("rpc: request cancelled by the peer ($/cancelRequest)")

func (d dispatcher) Handle(ctx context.Context, jc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c := d.c
	<-c.ready
	switch {
	case req.Method == protocol.NotifyGoingAway:
		// Inline, before the read loop sees the close that follows: a Call
		// that then fails knows its request was not acted on.
		c.goingAway.Store(true)
	case req.Method == protocol.MethodCancelRequest:
		c.cancelRequest(req)
		if !req.Notif { // it should be a notification; answer anyway
			_ = jc.Reply(ctx, req.ID, nil)
		}
	case req.Notif:
		c.enqueueNotif(ctx, req)
	default:
		c.startRequest(ctx, req)
	}
}

// cancelRequest cancels the request named by $/cancelRequest's params. An id
// that is not in flight (already answered, or never sent) is ignored, as LSP
// says.
func (c *Conn) cancelRequest(req *jsonrpc2.Request) {
	id, ok := parseCancelID(req.Params)
	if !ok {
		c.log.Warn().Msg("rpc: $/cancelRequest without a usable id")
		return
	}
	c.reqMu.Lock()
	cancel := c.inflight[id]
	c.reqMu.Unlock()
	if cancel != nil {
		cancel(errCancelledByPeer)
	}
}

// parseCancelID reads {"id": N} with N a number or a string, the way
// jsonrpc2 reads request ids.
func parseCancelID(params *json.RawMessage) (jsonrpc2.ID, bool) {
	if params == nil {
		return jsonrpc2.ID{}, false
	}
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(*params, &p) != nil {
		return jsonrpc2.ID{}, false
	}
	raw := bytes.TrimSpace(p.ID)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.ID{Str: s, IsString: true}, true
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.ID{Num: n}, true
}

// startRequest registers req as in flight and runs it, at once if a slot is
// free, else after waiting for one; or answers busy.
func (c *Conn) startRequest(connCtx context.Context, req *jsonrpc2.Request) {
	if c.gate != nil {
		if !c.gate.enter() {
			c.reply(req, nil, c.gate.refusal())
			return
		}
	}
	rctx, cancel := context.WithCancelCause(connCtx)
	c.reqMu.Lock()
	if _, dup := c.inflight[req.ID]; dup {
		c.reqMu.Unlock()
		cancel(nil)
		c.reply(req, nil, Errorf(protocol.CodeInvalidRequest,
			"give every request an id that no other in-flight request of this connection uses",
			"request id %s is already in flight", req.ID))
		c.leaveGate()
		return
	}
	running := false
	select {
	case c.sem <- struct{}{}:
		running = true
	default:
		if c.waiting >= c.maxPending {
			c.reqMu.Unlock()
			cancel(nil)
			c.log.Warn().Str("method", req.Method).Msg("rpc: too many requests waiting; answered busy")
			c.reply(req, nil, busyError())
			c.leaveGate()
			return
		}
		c.waiting++
	}
	c.inflight[req.ID] = cancel
	c.reqMu.Unlock()
	go c.runRequest(rctx, cancel, req, running)
}

func (c *Conn) runRequest(ctx context.Context, cancel context.CancelCauseFunc, req *jsonrpc2.Request, running bool) {
	if !running {
		select {
		case c.sem <- struct{}{}:
			running = true
		case <-ctx.Done():
		}
		c.reqMu.Lock()
		c.waiting--
		c.reqMu.Unlock()
		if running && ctx.Err() != nil { // both were ready
			<-c.sem
			running = false
		}
	}
	var result any
	var err error
	if running {
		result, err = c.invoke(ctx, req)
		<-c.sem
	} else {
		err = ctx.Err()
	}
	if err != nil && ctx.Err() != nil {
		err = cancelledError()
	}
	// Forget the id before answering: the peer may reuse it as soon as it
	// has the answer.
	c.reqMu.Lock()
	delete(c.inflight, req.ID)
	c.reqMu.Unlock()
	cancel(nil)
	c.reply(req, result, err)
	c.leaveGate()
}

// leaveGate tells the gate a request it admitted was answered.
func (c *Conn) leaveGate() {
	if c.gate != nil {
		c.gate.leave()
	}
}

// invoke runs the handler, turning a panic into an error.
func (c *Conn) invoke(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	if c.h == nil {
		if req.Notif {
			return nil, nil
		}
		return nil, MethodNotFound(req.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error().Str("method", req.Method).Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("rpc: handler panicked")
			result, err = nil, Errorf(protocol.CodeInternal, "this is a bug in hub; the daemon log has the stack trace",
				"internal error: the handler of %s panicked: %v", req.Method, p)
		}
	}()
	return c.h(ctx, c, req)
}

// reply answers req with result or err. A result too large for a frame is
// answered with an error instead, so the caller does not wait forever.
func (c *Conn) reply(req *jsonrpc2.Request, result any, err error) {
	resp := &jsonrpc2.Response{ID: req.ID}
	if err == nil {
		if merr := resp.SetResult(result); merr != nil {
			err = fmt.Errorf("encode the result of %s: %w", req.Method, merr)
		}
	}
	if err != nil {
		resp.Result = nil
		resp.Error = c.wireError(req, err)
	}
	serr := c.jc.SendResponse(context.Background(), resp)
	var tooLarge *frameTooLargeError
	if errors.As(serr, &tooLarge) {
		c.log.Error().Str("method", req.Method).Err(serr).Msg("rpc: answer too large")
		resp.Result = nil
		resp.Error = Errorf(protocol.CodeInternal, "ask for less at a time (a smaller page, or fewer items)",
			"the answer of %d bytes exceeds the frame limit of %d bytes", tooLarge.size, tooLarge.limit)
		serr = c.jc.SendResponse(context.Background(), resp)
	}
	if serr != nil && !errors.Is(serr, jsonrpc2.ErrClosed) {
		c.log.Debug().Str("method", req.Method).Err(serr).Msg("rpc: sending the answer failed")
	}
}

// wireError turns a handler's error into what goes on the wire.
func (c *Conn) wireError(req *jsonrpc2.Request, err error) *jsonrpc2.Error {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je
	}
	c.log.Error().Str("method", req.Method).Err(err).Msg("rpc: request failed")
	return Errorf(protocol.CodeInternal, "this is an unexpected failure in hub; the daemon log may say more", "%v", err)
}

// enqueueNotif queues a notification for the worker.
func (c *Conn) enqueueNotif(ctx context.Context, req *jsonrpc2.Request) {
	c.notifMu.Lock()
	if len(c.notifQ) >= notifQueueLimit {
		c.notifMu.Unlock()
		c.log.Error().Int("queued", notifQueueLimit).Msg("rpc: the peer is flooding notifications; closing the connection")
		go c.Close() // not inline: jsonrpc2's close must not wait on its own read loop
		return
	}
	c.notifQ = append(c.notifQ, queuedNotif{ctx: ctx, req: req})
	c.notifMu.Unlock()
	select {
	case c.notifWake <- struct{}{}:
	default:
	}
}

// notifLoop handles the queued notifications one at a time, in arrival
// order. A notification that arrived before the peer hung up is still
// handled: a peer that sends one last notification and closes at once (a
// shim at its end) must be heard. The loop ends once the connection is
// closed and the queue is empty.
func (c *Conn) notifLoop() {
	done := c.jc.DisconnectNotify()
	for {
		c.notifMu.Lock()
		for len(c.notifQ) == 0 {
			c.notifQ = nil
			c.notifMu.Unlock()
			select {
			case <-c.notifWake:
			case <-done:
				c.notifMu.Lock()
				empty := len(c.notifQ) == 0
				c.notifMu.Unlock()
				if empty {
					return
				}
			}
			c.notifMu.Lock()
		}
		n := c.notifQ[0]
		c.notifQ[0] = queuedNotif{}
		c.notifQ = c.notifQ[1:]
		c.notifMu.Unlock()

		if _, err := c.invoke(n.ctx, n.req); err != nil {
			c.log.Warn().Str("method", n.req.Method).Err(err).Msg("rpc: notification handler failed")
		}
	}
}
