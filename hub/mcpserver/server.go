package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// Daemon is the connection to hub serve. Call is safe for concurrent use.
// An error answer from the daemon is a *jsonrpc2.Error whose Data holds a
// protocol.ErrorData.
type Daemon interface {
	Call(ctx context.Context, method string, params, result any) error
}

// Options configure a Server. Zero fields mean the defaults.
type Options struct {
	// Version is reported to MCP clients.
	Version string
	// Logger gets the SDK's and the server's logs; nil discards them. It
	// must never write to stdout.
	Logger *slog.Logger
}

// Server is the MCP server. One Server serves any number of MCP sessions
// (stdio and HTTP) against one daemon connection.
type Server struct {
	d   Daemon
	mcp *mcp.Server
	log *slog.Logger

	// progressMin is the least time between two progress notifications
	// about changes; progressBeat the time after which a wait with no
	// change sends a heartbeat.
	progressMin  time.Duration
	progressBeat time.Duration

	// watchersMu guards the waits that want job/changed notifications.
	watchersMu sync.Mutex
	watchers   map[*watcher]struct{}
}

// instructions teach the supervisor the delegation loop.
const instructions = `hub delegates bounded coding tasks to workers, each on its own branch hub/<id>. ` +
	`Delegate precisely: a self-contained task, a verify command, a definition of done. ` +
	`Call start (start_many for several), then one wait for all ids. ` +
	`A needs_input job asks a question: reply, then wait again with since=cursor. ` +
	`wait blocks up to timeout_s (300); a client that cuts calls short (Codex: 60 s) passes less, then waits again. ` +
	`Read result (ids: a line per job; trace=1: its steps). ` +
	`"conflicts with hub/x": land one, then the other. ` +
	`land the good ones (each verified first; order auto: conflicts last), then cleanup. ` +
	`step checks your own work (since a commit) against your claim.`

// New returns a Server that forwards its tools to d.
func New(d Daemon, o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{
		d:            d,
		log:          log,
		progressMin:  2 * time.Second,
		progressBeat: 10 * time.Second,
		watchers:     map[*watcher]struct{}{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "hub", Version: version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       log,
	})
	s.mcp.AddReceivingMiddleware(refuseDiscover)
	s.addTools()
	return s
}

// methodDiscover is SEP-2575's probe for the draft stateless protocol
// (2026-07-28), which Claude Code sends before initialize.
const methodDiscover = "server/discover"

// refuseDiscover answers server/discover with -32601, as a server without
// the draft protocol would, so every client takes the initialize handshake
// (2025-06-18 / 2025-11-25), the one real agents are tested on. Without it
// the SDK answers a well-formed probe, and a client that then initializes
// anyway gets "duplicate initialize".
func refuseDiscover(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodDiscover {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
		}
		return next(ctx, method, req)
	}
}

// MCP returns the SDK server, to Run on a transport or to Connect.
func (s *Server) MCP() *mcp.Server { return s.mcp }

func (s *Server) addTools() {
	addStart(s)
	addStartMany(s)
	addWait(s)
	addStatus(s)
	addResult(s)
	addReply(s)
	addSteer(s)
	addStop(s)
	addLand(s)
	addCleanup(s)
	addEngines(s)
	addProfiles(s)
	addStep(s)
}

// addTool registers a typed tool without publishing an output schema.
//
// The output is still typed and still sent as StructuredContent, but the
// inferred schemas (evidence, job statuses) would make tools/list almost
// three times larger, and the clients that matter don't show output
// schemas to the model anyway. A nil *Out sends no StructuredContent.
//
// The input schema is inputSchema's unless t has its own; unknown arguments
// are refused by checkArgs.
func addTool[In, Out any](s *Server, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, *Out, error)) {
	if t.InputSchema == nil {
		t.InputSchema = inputSchema[In]()
	}
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		if err := checkArgs[In](t.Name, req.Params.Arguments); err != nil {
			return nil, nil, err
		}
		res, out, err := h(ctx, req, in)
		if err != nil || out == nil {
			return res, nil, err // a typed nil would be sent as null
		}
		return res, out, nil
	})
}

// daemon is the daemon's typed client for the tools: its calls are call's.
func (s *Server) daemon() protocol.DaemonClient { return protocol.DaemonClient{C: callFunc(s.call)} }

// callFunc makes a call: a function as a protocol.Caller.
type callFunc func(ctx context.Context, method string, params, result any) error

func (f callFunc) Call(ctx context.Context, method string, params, result any) error {
	return f(ctx, method, params, result)
}

// call forwards one daemon method and turns a failure into a tool error.
func (s *Server) call(ctx context.Context, method string, params, result any) error {
	err := s.d.Call(ctx, method, params, result)
	if err == nil {
		return nil
	}
	s.log.Debug("daemon call failed", "method", method, "err", err)
	return toolError(err)
}

// toolErr is a failure the model reads in the tool result (IsError), never
// a protocol error: it is not a *jsonrpc.Error of the SDK, so AddTool wraps
// it.
type toolErr struct{ msg string }

func (e *toolErr) Error() string { return e.msg }

// toolError says what went wrong and what to do: the daemon's message, the
// field at fault and the hint from its protocol.ErrorData.
func toolError(err error) error {
	var je *jsonrpc2.Error
	if !errors.As(err, &je) {
		switch {
		case errors.Is(err, context.Canceled):
			return &toolErr{"cancelled"}
		case errors.Is(err, context.DeadlineExceeded):
			return &toolErr{"timed out talking to the hub daemon; try again"}
		}
		return &toolErr{fmt.Sprintf("hub daemon unreachable (%v); restart the hub MCP server (or run `hub serve`)", err)}
	}
	data := rpc.DataOf(je)
	return &toolErr{failure(je.Message, data.Field, data.Hint)}
}

// failure is "<message> (field f). <Hint>." The field is left out when the
// message already names it.
func failure(msg, field, hint string) string {
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	if field != "" && !strings.Contains(msg, field) {
		msg += " (field " + field + ")"
	}
	msg = sentence(msg)
	if hint != "" {
		msg += " " + sentence(upperFirst(hint))
	}
	return msg
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") {
		return s
	}
	return s + "."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// text is a tool result whose Content is the short human text; AddTool adds
// the structured output.
func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// annotate gives a tool its title, the name clients show people (Claude
// Code reads only the annotations' title; clients that follow the spec fall
// back to it when the tool has no title of its own; "" for none: the
// supervisor's tools go without, their one-word names being what a person
// reads anyway, since every byte of tools/list is paid for in the
// supervisor's context), and derives the hints
// from the Specs of the methods it calls (protocol.DaemonSpec's and
// ShimSpec's, named as the typed clients name the calls): read-only and
// idempotent when all of them are, destructive when any is.
func annotate(title string, specs ...protocol.Spec) *mcp.ToolAnnotations {
	ro, idem, destructive := true, true, false
	for _, sp := range specs {
		ro, idem, destructive = ro && sp.ReadOnly, idem && sp.Idempotent, destructive || sp.Destructive
	}
	a := &mcp.ToolAnnotations{Title: title, ReadOnlyHint: ro, IdempotentHint: idem}
	if !ro {
		a.DestructiveHint = &destructive // MCP reads an absent hint as destructive
	}
	return a
}
