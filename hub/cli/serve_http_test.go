package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/mcpserver"
)

// TestMCPHTTPServerTimeouts: hub mcp --http's server closes idle
// connections and bounds headers, and never cuts a long response.
func TestMCPHTTPServerTimeouts(t *testing.T) {
	hs := newMCPHTTPServer(http.NotFoundHandler())
	if hs.IdleTimeout <= 0 || hs.IdleTimeout > 5*time.Minute {
		t.Errorf("IdleTimeout = %s, want one of at most 5m", hs.IdleTimeout)
	}
	if hs.ReadHeaderTimeout <= 0 {
		t.Errorf("ReadHeaderTimeout = %s, want one", hs.ReadHeaderTimeout)
	}
	if hs.ReadTimeout != 0 || hs.WriteTimeout != 0 {
		t.Errorf("ReadTimeout = %s, WriteTimeout = %s; want none (a write deadline cuts a tool call's stream)", hs.ReadTimeout, hs.WriteTimeout)
	}
}

const (
	httpTestToken = "s3cret-token"
	// httpTestIdle is the idle timeout the tests shorten the server's to.
	httpTestIdle = 250 * time.Millisecond
)

// serveMCPHTTP serves the real handler of hub mcp --http, over a server
// without a daemon, on a loopback port, with its idle timeout shortened
// to httpTestIdle. It returns the server and the address.
func serveMCPHTTP(t *testing.T) (*mcpserver.Server, string) {
	t.Helper()
	srv := mcpserver.New(noDaemon{}, mcpserver.Options{})
	hs := newMCPHTTPServer(mcpserver.HTTPHandler(srv, httpTestToken))
	// Shortened, never added: a server without one must fail here.
	if hs.IdleTimeout > httpTestIdle {
		hs.IdleTimeout = httpTestIdle
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

// noDaemon fails every call; these tests call no tool.
type noDaemon struct{}

func (noDaemon) Call(context.Context, string, any, any) error {
	return errors.New("no daemon in this test")
}

func dialMCP(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// TestMCPHTTPIdleAfter401: after a 401 for a wrong token, a keep-alive
// connection left idle is closed once idle for the idle timeout.
func TestMCPHTTPIdleAfter401(t *testing.T) {
	_, addr := serveMCPHTTP(t)
	c, br := dialMCP(t, addr)
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer wrong-token\r\nAccept: text/event-stream\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || resp.Close {
		t.Fatalf("wrong token: status %d (close %v) %q, want 401 on a kept-alive connection", resp.StatusCode, resp.Close, body)
	}
	wait := httpTestIdle + 5*time.Second
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	n, err := br.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection after a 401: read %d bytes, %v; want it closed (EOF) within %s", n, err, wait)
	}
	if d := time.Since(wrote); d < httpTestIdle {
		t.Errorf("closed %s after the request, before the idle timeout (%s)", d, httpTestIdle)
	}
}

// TestMCPHTTPStreamOutlivesIdle: an SSE stream (a session's GET) that
// says nothing for several idle timeouts is not cut, and what the server
// sends on it afterwards arrives.
func TestMCPHTTPStreamOutlivesIdle(t *testing.T) {
	srv, addr := serveMCPHTTP(t)
	const version = "2025-11-25"
	hdr := map[string]string{"Authorization": "Bearer " + httpTestToken, "Accept": "application/json, text/event-stream"}

	// The handshake, on a connection of its own.
	c, br := dialMCP(t, addr)
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, body := mcpRoundTrip(t, c, br, http.MethodPost, addr, hdr,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" || !strings.Contains(body, `"protocolVersion"`) {
		t.Fatalf("initialize: status %d, session %q, %q", resp.StatusCode, session, body)
	}
	hdr["Mcp-Session-Id"] = session
	hdr["Mcp-Protocol-Version"] = version
	if resp, body := mcpRoundTrip(t, c, br, http.MethodPost, addr, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: status %d %q", resp.StatusCode, body)
	}

	// The session's stream.
	s, sr := dialMCP(t, addr)
	if err := s.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	hdr["Accept"] = "text/event-stream"
	req := mcpRequest(t, http.MethodGet, addr, hdr, "")
	if err := req.Write(s); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(sr, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The body is read raw, chunks and all, from sr: a timeout would stick
	// to resp.Body.
	var got strings.Builder
	quiet := 4 * httpTestIdle
	if err := s.SetReadDeadline(time.Now().Add(quiet)); err != nil {
		t.Fatal(err)
	}
	if err := readStreamUntil(sr, &got, ""); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stream, quiet for %s (idle timeout %s), ended: %v after %q", quiet, httpTestIdle, err, got.String())
	}
	// A change of tools is announced on the stream.
	mcp.AddTool(srv.MCP(), &mcp.Tool{Name: "late_tool", Description: "added late"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	if err := s.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := readStreamUntil(sr, &got, "notifications/tools/list_changed"); err != nil {
		t.Fatalf("after %s quiet, the stream: %v after %q; want notifications/tools/list_changed", quiet, err, got.String())
	}
}

func mcpRequest(t *testing.T, method, addr string, hdr map[string]string, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// mcpRoundTrip sends a request on c and reads its whole answer from br.
func mcpRoundTrip(t *testing.T, c net.Conn, br *bufio.Reader, method, addr string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req := mcpRequest(t, method, addr, hdr, body)
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// readStreamUntil appends what r gives to got until got holds want (never, when
// want is empty) or r fails.
func readStreamUntil(r io.Reader, got *strings.Builder, want string) error {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if want != "" && strings.Contains(got.String(), want) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
