package protocol

// Error codes, beyond JSON-RPC's own (-32700 parse error, -32600 invalid
// request, -32601 method not found, -32602 invalid params, -32603 internal).
// Every error carries ErrorData with a hint that says what to do.
const (
	CodeParseError       int64 = -32700
	CodeInvalidRequest   int64 = -32600
	CodeMethodNotFound   int64 = -32601
	CodeInvalidParams    int64 = -32602
	CodeInternal         int64 = -32603
	CodeRequestCancelled int64 = -32800 // LSP: the request was cancelled by $/cancelRequest

	CodeNotFound    int64 = -32004 // unknown job, question or engine
	CodeWrongState  int64 = -32009 // the job is not in a state that allows this
	CodeRefused     int64 = -32010 // the request is valid but cannot be granted (cap, isolation, engine)
	CodeUnavailable int64 = -32011 // a part hub needs is not there (shim gone, git missing)
	CodeConflict    int64 = -32012 // a merge would conflict; ErrorData.Files lists the paths
	// CodeShuttingDown: the daemon is shutting down and did nothing with
	// this request; send it again on a new connection (a client that starts
	// daemons starts the next one).
	CodeShuttingDown int64 = -32013
)

// ErrorData is the data member of every error hub returns.
type ErrorData struct {
	// Hint is one sentence that says what to do about the error.
	Hint string `json:"hint,omitempty"`
	// Field names the parameter at fault, when there is one.
	Field string `json:"field,omitempty"`
	// Files lists the paths at fault (a merge's conflicts).
	Files []string `json:"files,omitempty"`
}
