package rpc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/strictjson"
)

// Errorf builds a *jsonrpc2.Error with the given code, a message formatted
// from format and args, and Data = protocol.ErrorData{Hint: hint}.
func Errorf(code int64, hint string, format string, args ...any) *jsonrpc2.Error {
	e := &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
	e.SetError(protocol.ErrorData{Hint: hint})
	return e
}

// MethodNotFound is the error a handler returns for a method it does not
// serve.
func MethodNotFound(method string) *jsonrpc2.Error {
	return Errorf(protocol.CodeMethodNotFound,
		"check the method name; if it is right, the client and the daemon are different hub versions (restart the daemon)",
		"method %q not found", method)
}

// HintOf extracts the hint an error carries: the data.hint of one that
// came over the wire (a *jsonrpc2.Error), else what the first error in its
// chain with a Hint method says. It returns "" for nil and for errors
// without a hint.
func HintOf(err error) string {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return DataOf(err).Hint
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// DataOf is the protocol.ErrorData of an error that came over the wire
// (a *jsonrpc2.Error in err's chain): its hint and the field at fault. It
// is zero for other errors and for data that is not ErrorData.
func DataOf(err error) protocol.ErrorData {
	var d protocol.ErrorData
	var je *jsonrpc2.Error
	if errors.As(err, &je) && je.Data != nil {
		if json.Unmarshal(*je.Data, &d) != nil {
			return protocol.ErrorData{}
		}
	}
	return d
}

// busyError answers a request that finds MaxConcurrent requests running and
// MaxPending waiting.
func busyError() *jsonrpc2.Error {
	return Errorf(protocol.CodeUnavailable,
		"wait for some of your in-flight requests to finish, then send it again",
		"server busy; retry")
}

// cancelledError answers a request cancelled by $/cancelRequest or by the
// connection closing.
func cancelledError() *jsonrpc2.Error {
	return Errorf(protocol.CodeRequestCancelled,
		"send the request again if you still need its result",
		"request cancelled")
}

// ErrNotSent marks a Call whose request never left: the connection was
// closed or the write failed. Such a call is safe to retry elsewhere.
var ErrNotSent = errors.New("request not sent")

// DecodeParams reads a request's params into v strictly: a key v does not
// take is refused with InvalidParams, data.field naming it and the hint
// the closest key; other decoding errors are InvalidParams too. Absent or
// null params leave v as it is.
func DecodeParams(req *jsonrpc2.Request, v any) error {
	if req.Params == nil || string(*req.Params) == "null" {
		return nil
	}
	err := strictjson.Decode(*req.Params, v)
	if err == nil {
		return nil
	}
	var uk *strictjson.UnknownKeyError
	if errors.As(err, &uk) {
		hint := fmt.Sprintf("drop %q: %s takes only the parameters docs/protocol.md lists", uk.Key, req.Method)
		if uk.Suggest != "" {
			hint = fmt.Sprintf("rename %q to %q: %s takes only the parameters docs/protocol.md lists", uk.Key, uk.Suggest, req.Method)
		}
		e := Errorf(protocol.CodeInvalidParams, hint, "bad params for %s: %v", req.Method, err)
		e.SetError(protocol.ErrorData{Hint: hint, Field: uk.KeyPath()})
		return e
	}
	return Errorf(protocol.CodeInvalidParams, "send the parameters documented in docs/protocol.md", "bad params for %s: %v", req.Method, err)
}
