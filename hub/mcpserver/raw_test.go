package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawWire is a newline-delimited JSON-RPC stream to a served Server, the
// way a stdio client speaks.
type rawWire struct {
	t     *testing.T
	w     io.WriteCloser
	lines chan string
}

func serveRaw(t *testing.T, s *Server) *rawWire {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.MCP().Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw})
	}()
	w := &rawWire{t: t, w: cw, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		cancel()
		cw.Close()
		cr.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return w
}

// roundTrip sends one message and returns the decoded answer.
func (w *rawWire) roundTrip(msg string) map[string]any {
	w.t.Helper()
	if _, err := io.WriteString(w.w, msg+"\n"); err != nil {
		w.t.Fatal(err)
	}
	select {
	case line, ok := <-w.lines:
		if !ok {
			w.t.Fatalf("stream closed after %s", msg)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			w.t.Fatalf("answer %q: %v", line, err)
		}
		return m
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no answer to %s", msg)
		return nil
	}
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestUnknownMethods speaks raw NDJSON as Claude Code does: it probes
// server/discover first (a string id, the draft protocol in _meta), must get
// -32601, and then initializes; other unknown methods get -32601 too.
func TestUnknownMethods(t *testing.T) {
	isolate(t)
	w := serveRaw(t, New(&fakeDaemon{handle: canned(struct{}{})}, Options{}))

	probe := `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.328"}}}}`
	got := w.roundTrip(probe)
	if got["id"] != "server-discover-probe-1" || errorCode(got) != -32601 {
		t.Fatalf("server/discover probe answered %v, want -32601", got)
	}
	if got := w.roundTrip(`{"jsonrpc":"2.0","id":"d2","method":"server/discover","params":{}}`); errorCode(got) != -32601 {
		t.Errorf("bare server/discover answered %v, want -32601", got)
	}

	init := w.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"roots":{},"elicitation":{}},"clientInfo":{"name":"claude-code","version":"2.1.328"}}}`)
	res, _ := init["result"].(map[string]any)
	if res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize answered %v", init)
	}
	if _, err := io.WriteString(w.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"server/discover", "foo/bar", "hub/start"} {
		got := w.roundTrip(`{"jsonrpc":"2.0","id":"x","method":"` + m + `","params":{}}`)
		if errorCode(got) != -32601 {
			t.Errorf("%s answered %v, want -32601", m, got)
		}
	}
	// A late cancel for a finished call (OpenCode sends them) is ignored,
	// and the session still answers.
	if _, err := io.WriteString(w.w, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	list := w.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`)
	res, _ = list["result"].(map[string]any)
	if tools, _ := res["tools"].([]any); len(tools) != 13 {
		t.Errorf("tools/list answered %v", list)
	}
}

// TestDefaultClient checks that the SDK's own client, which asks for the
// draft protocol first, falls back to 2025-11-25 and works.
func TestDefaultClient(t *testing.T) {
	isolate(t)
	cs := connect(t, New(&fakeDaemon{handle: canned(struct{}{})}, Options{}), "", nil)
	if diff := cmp.Diff("2025-11-25", cs.InitializeResult().ProtocolVersion); diff != "" {
		t.Errorf("negotiated (-want +got):\n%s", diff)
	}
}
