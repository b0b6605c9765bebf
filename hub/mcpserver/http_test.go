package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

const testToken = "s3cret-token"

func httpServer(t *testing.T, d Daemon) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(HTTPHandler(New(d, Options{}), testToken)) // listens on 127.0.0.1
	t.Cleanup(ts.Close)
	return ts
}

// initBody is a valid initialize request, so that only the guard decides.
const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func post(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(deadline(t, 10*time.Second), http.MethodPost, url, strings.NewReader(initBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPGuards(t *testing.T) {
	isolate(t)
	ts := httpServer(t, &fakeDaemon{handle: canned(struct{}{})})
	auth := "Bearer " + testToken
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"token without scheme", map[string]string{"Authorization": testToken}, http.StatusUnauthorized},
		{"token prefix", map[string]string{"Authorization": auth[:len(auth)-1]}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"origin null", map[string]string{"Authorization": auth, "Origin": "null"}, http.StatusForbidden},
		{"origin lookalike", map[string]string{"Authorization": auth, "Origin": "http://localhost.evil.example"}, http.StatusForbidden},
		{"foreign origin without token", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"foreign host", map[string]string{"Authorization": auth, "Host": "evil.example"}, http.StatusForbidden},
		{"ok", map[string]string{"Authorization": auth}, http.StatusOK},
		{"ok local origin", map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, http.StatusOK},
		{"ok loopback origin", map[string]string{"Authorization": auth, "Origin": "https://127.0.0.1"}, http.StatusOK},
		{"ok v6 origin", map[string]string{"Authorization": auth, "Origin": "http://[::1]:8080"}, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(t, ts.URL, tc.hdr); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLocalOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"http://localhost": true, "https://localhost:1": true, "http://127.0.0.1:7410": true, "http://[::1]": true,
		"http://[::1]:80/": true, "ftp://localhost": false, "http://127.0.0.2": false, "http://localhost:x": false,
		"http://user@localhost": false, "http://localhost/path": false, "null": false, "localhost": false,
		"http://0.0.0.0": false, "http://[::ffff:127.0.0.1]": false,
	} {
		if got := localOrigin(o); got != want {
			t.Errorf("localOrigin(%q) = %v, want %v", o, got, want)
		}
	}
}

// bearer adds the token to every request.
type bearer struct{ rt http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return b.rt.RoundTrip(r)
}

// TestHTTPClient drives a real streamable client through the handler: a
// tool call and a wait with progress.
func TestHTTPClient(t *testing.T) {
	isolate(t)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			bw := newBlockingWait(protocol.WaitResult{Done: true, Cursor: 4})
			status := protocol.JobStatus{ID: "abc12345", State: protocol.StateRunning, Engine: "exec", Progress: "step 1", Cursor: 2}
			d := &fakeDaemon{handle: func(ctx context.Context, method string, p any) (any, error) {
				if method == protocol.MethodJobStatus {
					return status, nil
				}
				return bw.fd.handle(ctx, method, p)
			}}
			srv := New(d, Options{})
			ts := httptest.NewServer(HTTPHandler(srv, testToken))
			t.Cleanup(ts.Close)
			ctx := deadline(t, 20*time.Second)
			progress := make(chan string, 16)
			c := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					progress <- r.Params.Message
				},
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL,
				HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Errorf("negotiated %s, want %s", got, v)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"id": "abc12345"}})
			if err != nil || res.IsError {
				t.Fatalf("status: %v %+v", err, res)
			}
			if got, want := contentText(res), "abc12345 running · exec · 0ms · $? · step 1"; got != want {
				t.Errorf("status text %q, want %q", got, want)
			}

			answer := callAsync(ctx, cs, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ids": []string{"abc12345"}},
				Meta: mcp.Meta{"progressToken": "h1"}})
			recv(t, ctx, bw.entered, "daemon job/wait")
			status.Progress, status.Cursor = "step 2", 3
			srv.Notify(changed(status))
			if m := recv(t, ctx, progress, "progress over HTTP"); m != "0/1 ended · abc12345 running: step 2" {
				t.Errorf("progress %q", m)
			}
			close(bw.release)
			a := recv(t, ctx, answer, "wait answer")
			if a.err != nil || a.res.IsError {
				t.Fatalf("wait: %v %+v", a.err, a.res)
			}
		})
	}
}
