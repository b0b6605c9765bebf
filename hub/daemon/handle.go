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

// handle dispatches one message. Each method lives in its own file.
func (s *Server) handle(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
	if err := refuseSandboxed(c); err != nil {
		return nil, err
	}
	switch req.Method {
	case protocol.MethodInitialize:
		return s.initialize(ctx, req)
	case protocol.MethodJobStart:
		return call(ctx, req, s.start)
	case protocol.MethodStartMany:
		return call(ctx, req, s.startMany)
	case protocol.MethodJobWait:
		return call(ctx, req, s.wait)
	case protocol.MethodJobStatus:
		return call(ctx, req, s.jobStatus)
	case protocol.MethodJobList:
		return call(ctx, req, s.list)
	case protocol.MethodJobResult:
		return call(ctx, req, s.result)
	case protocol.MethodJobReply:
		return call(withCaller(ctx, c), req, s.reply)
	case protocol.MethodJobSteer:
		return call(withCaller(ctx, c), req, s.steer)
	case protocol.MethodJobStop:
		return call(withCaller(ctx, c), req, s.stop)
	case protocol.MethodJobCleanup:
		return call(ctx, req, s.cleanup)
	case protocol.MethodJobEvents:
		return call(ctx, req, s.events)
	case protocol.MethodEngineList:
		return s.engines(ctx)
	case protocol.MethodRouteExplain:
		return call(ctx, req, s.routeExplain)
	case protocol.MethodRouteCalibrate:
		return call(ctx, req, s.routeCalibrate)
	case protocol.MethodSubscribe:
		var p protocol.SubscribeParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return s.subscribe(ctx, c, p)
	case protocol.MethodProfileList:
		return call(ctx, req, s.profileList)
	case protocol.MethodProfileSet:
		return call(ctx, req, s.profileSet)
	case protocol.MethodProfileRemove:
		return call(ctx, req, s.profileRemove)
	case protocol.MethodProfileDefault:
		return call(ctx, req, s.profileDefault)
	case protocol.MethodProviderStatus:
		return call(ctx, req, s.providerStatus)
	case protocol.MethodLedgerList:
		return call(ctx, req, s.ledger)
	case protocol.MethodROIReport:
		return call(ctx, req, s.roi)
	case protocol.MethodDU:
		return call(ctx, req, s.du)
	case protocol.MethodGC:
		return call(ctx, req, s.gc)
	case protocol.MethodJobFiles:
		return call(ctx, req, s.files)
	case protocol.MethodJobFile:
		return call(ctx, req, s.file)
	case protocol.MethodJobMerge:
		return call(ctx, req, s.merge)
	case protocol.MethodSummary:
		return call(ctx, req, s.summary)
	case protocol.MethodShutdown:
		s.o.Log.Info().Msg("shutdown requested")
		go s.beginShutdown()
		return struct{}{}, nil
	case protocol.NotifyShimChanged:
		s.poke()
		return nil, nil
	}
	return nil, rpc.MethodNotFound(req.Method)
}

// call decodes the params into P and runs fn.
func call[P any, R any](ctx context.Context, req *jsonrpc2.Request, fn func(context.Context, P) (R, error)) (any, error) {
	var p P
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	return fn(ctx, p)
}

// decode reads a request's params into v strictly: a key v does not take
// (a misspelling, a parameter of another method) is refused, naming it in
// the error's field, rather than dropped.
func decode(req *jsonrpc2.Request, v any) error { return rpc.DecodeParams(req, v) }

// notFound maps a store lookup error to a protocol error.
func notFound(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return rpc.Errorf(protocol.CodeNotFound, "list jobs with `hub jobs` (or the status tool) and use one of their ids", "unknown job id %q", id)
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
