// Package protocol defines hub's JSON-RPC 2.0 protocol, once, in Go: the method
// names, their parameters and results, the notifications, the job states and
// the error codes. Every front end (the MCP server, the CLI, the editor) and
// every back end (the daemon, the shim) speaks it. The editor's TypeScript
// types, docs/protocol.md and the typed servers, dispatchers and clients of
// dispatch_gen.go are generated from this package's Specs and types.
//
// Messages travel with LSP framing (Content-Length headers). Field names are
// snake_case, one name per concept (docs/protocol.md, "Names"). Money
// crosses the wire as US dollars (float) for display; inside hub it is
// integer micro-dollars (internal/micros).
//
// This package must never import anything of hub's but the router's plain
// types: it sits at the bottom of the import graph.
package protocol

// Version is the protocol version reported by initialize.
//
// It follows semantic versioning: a client speaks to any daemon with the same
// major and a minor at least the one it was built for (0.x: the same minor).
const Version = "0.2.0"
