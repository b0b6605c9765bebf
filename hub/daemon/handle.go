package daemon

import (
	"context"
	"errors"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

type storeQuestion = store.Question

// handle dispatches one message to the DaemonServer method protocol's
// generated dispatcher names. Each method lives in its own file.
func (s *Server) handle(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
	if err := refuseSandboxed(c); err != nil {
		return nil, err
	}
	res, served, err := protocol.DispatchDaemon(withCaller(ctx, c), s, req.Method, func(p any) error { return decode(req, p) })
	if !served {
		return nil, rpc.MethodNotFound(req.Method)
	}
	return res, err
}

// Shutdown stops the daemon; running jobs keep running in their shims.
func (s *Server) Shutdown(context.Context, protocol.Empty) (*protocol.Empty, error) {
	s.o.Log.Info().Msg("shutdown requested")
	go s.beginShutdown()
	return &protocol.Empty{}, nil
}

// ShimChanged is a shim telling the daemon it wrote to the store: the news is fanned out.
func (s *Server) ShimChanged(context.Context, protocol.ShimChangedParams) (*protocol.Empty, error) {
	s.poke()
	return &protocol.Empty{}, nil
}

// The daemon serves every request its Specs route to it.
var _ protocol.DaemonServer = (*Server)(nil)

// decode reads a request's params into v strictly: a key v does not take
// (a misspelling, a parameter of another method) is refused, naming it in
// the error's field, rather than dropped.
func decode(req *jsonrpc2.Request, v any) error { return rpc.DecodeParams(req, v) }

// notFound maps a store lookup error to a protocol error.
func notFound(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return rpc.Errorf(protocol.CodeNotFound, "use an id a start returned; the job list has them all", "unknown job id %q", id)
	}
	return internal(err)
}

func internal(err error) error {
	return rpc.Errorf(protocol.CodeInternal, "see the daemon log in HUB_HOME/logs/daemon.log", "%v", err)
}

func wrongState(hint, format string, args ...any) error {
	return rpc.Errorf(protocol.CodeWrongState, hint, format, args...)
}

func invalid(field, hint, format string, args ...any) error {
	e := rpc.Errorf(protocol.CodeInvalidParams, hint, format, args...)
	if field != "" {
		d := protocol.ErrorData{Hint: hint, Field: field}
		e.SetError(d)
	}
	return e
}
