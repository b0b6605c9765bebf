// Package rpc is hub's JSON-RPC 2.0 transport on sourcegraph/jsonrpc2 with
// LSP framing: bounded concurrent requests, ordered notifications,
// $/cancelRequest, frame-size limits, and unix sockets whose ownership is
// checked.
//
// It owns the wire: framing, message validation, per-connection
// concurrency, cancellation and the socket files. It knows nothing of hub's
// methods; those belong to the handlers its callers pass in. It never writes
// to stdout.
package rpc
