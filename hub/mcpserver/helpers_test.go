package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// versions are the protocol versions real agents speak.
var versions = []string{"2025-06-18", "2025-11-25"}

// isolate points HOME and HUB_HOME at fresh temporary directories.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("HUB_HOME", t.TempDir())
}

// fakeCall is one call the fake daemon saw: the Go value it was given.
type fakeCall struct {
	Method string
	Params any
}

// fakeDaemon records calls and answers them with handle. The result is
// passed through JSON, as over the wire.
type fakeDaemon struct {
	handle func(ctx context.Context, method string, params any) (any, error)

	callsMu sync.Mutex
	calls   []fakeCall
}

func (f *fakeDaemon) Call(ctx context.Context, method string, params, result any) error {
	f.callsMu.Lock()
	f.calls = append(f.calls, fakeCall{method, params})
	f.callsMu.Unlock()
	res, err := f.handle(ctx, method, params)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, result)
}

func (f *fakeDaemon) Calls() []fakeCall {
	f.callsMu.Lock()
	defer f.callsMu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

// canned answers every method with the same value.
func canned(v any) func(context.Context, string, any) (any, error) {
	return func(context.Context, string, any) (any, error) { return v, nil }
}

// deadline is a context that ends with the test or after d.
func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// connect runs s on in-memory transports and returns a client session that
// asked for version ("" = the SDK's default).
func connect(t *testing.T, s *Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := t.Context()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decode re-decodes the structured content into v.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// recv waits for one value, failing the test at the deadline.
func recv[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("no %s before the deadline", what)
		panic("unreachable")
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}

func splitWords(s string) []string { return strings.Fields(s) }

// remarshal copies from into to through JSON.
func remarshal(t *testing.T, from, to any) {
	t.Helper()
	if err := json.Unmarshal(mustJSON(from), to); err != nil {
		t.Fatal(err)
	}
}

// errorWith is a daemon error answer as rpc.Conn.Call returns it.
func errorWith(code int64, msg string, data protocol.ErrorData) error {
	e := &jsonrpc2.Error{Code: code, Message: msg}
	e.SetError(data)
	return e
}

var errClosed = fmt.Errorf("call job/status: %w", jsonrpc2.ErrClosed)
