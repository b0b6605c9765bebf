package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// waitFor bounds every wait in these tests.
const waitFor = 10 * time.Second

func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "rpc-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// mux routes methods to funcs; an unknown method gets MethodNotFound.
type mux map[string]Handler

func (m mux) handle(ctx context.Context, c *Conn, req *jsonrpc2.Request) (any, error) {
	if f := m[req.Method]; f != nil {
		return f(ctx, c, req)
	}
	if req.Notif {
		return nil, nil
	}
	return nil, MethodNotFound(req.Method)
}

// echo returns its params.
func echo(_ context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
	if req.Params == nil {
		return nil, nil
	}
	return req.Params, nil
}

// serve starts a server on a fresh socket and returns its path. The server
// stops at the end of the test.
func serve(t *testing.T, h Handler, opts *Options) string {
	t.Helper()
	path := sockPath(t)
	serveAt(t, path, h, opts, nil)
	return path
}

// sockPath is a socket path in a fresh directory.
func sockPath(t *testing.T) string { return filepath.Join(t.TempDir(), "hub.sock") }

func serveAt(t *testing.T, path string, h Handler, opts *Options, onConn func(*Conn)) {
	t.Helper()
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, opts, onConn) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("Serve did not return after cancel")
		}
	})
}

// dial connects a Conn with handler h (nil for a pure client).
func dial(t *testing.T, path string, h Handler) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	nc, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(context.Background(), nc, h, nil)
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// rawConn is a client that writes bytes and reads frames itself, to test
// the wire.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	nc, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (rc *rawConn) write(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.nc, s); err != nil {
		rc.t.Fatal(err)
	}
}

// send writes body in a standard frame.
func (rc *rawConn) send(body string) {
	rc.t.Helper()
	rc.write(frame(body))
}

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// wireMsg is any message as it appears on the wire.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

type wireError struct {
	Code    int64               `json:"code"`
	Message string              `json:"message"`
	Data    *protocol.ErrorData `json:"data,omitempty"`
}

// read reads one frame, failing the test on EOF or timeout.
func (rc *rawConn) read() wireMsg {
	rc.t.Helper()
	m, err := rc.tryRead()
	if err != nil {
		rc.t.Fatalf("read frame: %v", err)
	}
	return m
}

func (rc *rawConn) tryRead() (wireMsg, error) {
	rc.nc.SetReadDeadline(time.Now().Add(waitFor))
	n := -1
	for {
		line, err := rc.r.ReadString('\n')
		if err != nil {
			return wireMsg{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		if name == "Content-Length" {
			if n, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
				return wireMsg{}, fmt.Errorf("bad header %q", line)
			}
		}
	}
	if n < 0 {
		return wireMsg{}, fmt.Errorf("no Content-Length")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		return wireMsg{}, err
	}
	var m wireMsg
	if err := json.Unmarshal(body, &m); err != nil {
		return wireMsg{}, fmt.Errorf("bad body %q: %v", body, err)
	}
	if m.JSONRPC != "2.0" {
		return wireMsg{}, fmt.Errorf("body %q lacks jsonrpc 2.0", body)
	}
	return m, nil
}

// expectClosed waits for the server to close the connection: EOF, or a
// reset (the kernel resets when the server closes with unread bytes).
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	rc.nc.SetReadDeadline(time.Now().Add(waitFor))
	buf := make([]byte, 512)
	n, err := rc.r.Read(buf)
	if err == nil {
		rc.t.Fatalf("got %q, want the connection closed", buf[:n])
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		rc.t.Fatal("the server did not close the connection")
	}
}
