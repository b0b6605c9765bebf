package mcpserver

import (
	"bufio"
	"context"
	"io"
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

// post sends initBody with hdr and returns the status and the body.
func post(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	return send(t, http.MethodPost, url, hdr)
}

func send(t *testing.T, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(initBody)
	}
	req, err := http.NewRequestWithContext(deadline(t, 10*time.Second), method, url, body)
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
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "" // an SSE stream: don't wait for its end
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHTTPGuards(t *testing.T) {
	isolate(t)
	ts := httpServer(t, &fakeDaemon{handle: canned(struct{}{})})
	self := ts.URL // the origin of a page served by the hub itself
	auth := "Bearer " + testToken
	tests := []struct {
		name string
		hdr  map[string]string
		want int
		body string // a part of the refusal's text
	}{
		{"no token", nil, http.StatusUnauthorized, "no bearer token"},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized, "HUB_HOME/mcp-token"},
		{"token without scheme", map[string]string{"Authorization": testToken}, http.StatusUnauthorized, "no bearer token"},
		{"token prefix", map[string]string{"Authorization": auth[:len(auth)-1]}, http.StatusUnauthorized, "HUB_HOME/mcp-token"},
		{"token and more", map[string]string{"Authorization": auth + "x"}, http.StatusUnauthorized, "HUB_HOME/mcp-token"},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"origin null", map[string]string{"Authorization": auth, "Origin": "null"}, http.StatusForbidden, "cross-origin"},
		{"origin lookalike", map[string]string{"Authorization": auth, "Origin": "http://localhost.evil.example"}, http.StatusForbidden, "cross-origin"},
		// A page on another local port is another origin, and hub sends no
		// CORS headers, so no browser could have read the answer anyway.
		{"other local origin", map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, http.StatusForbidden, "cross-origin"},
		{"cross-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-origin"},
		{"same-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-site"}, http.StatusForbidden, "cross-origin"},
		{"foreign origin without token", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"foreign host", map[string]string{"Authorization": auth, "Host": "evil.example"}, http.StatusForbidden, "invalid Host"},
		{"foreign host and origin", map[string]string{"Authorization": auth, "Host": "evil.example", "Origin": "http://evil.example"}, http.StatusForbidden, "invalid Host"},
		{"ok", map[string]string{"Authorization": auth}, http.StatusOK, ""},
		{"ok same origin", map[string]string{"Authorization": auth, "Origin": self}, http.StatusOK, ""},
		{"ok same-origin fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-origin", "Origin": self}, http.StatusOK, ""},
		{"ok localhost host and origin", map[string]string{"Authorization": auth, "Host": "localhost:1", "Origin": "http://localhost:1"}, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, body := post(t, ts.URL, tc.hdr)
			if got != tc.want || !strings.Contains(body, tc.body) {
				t.Errorf("status %d %q, want %d with %q", got, body, tc.want, tc.body)
			}
		})
	}
	// GET (the SSE stream) is checked for its origin too, though net/http
	// counts it a safe method: refused with the token or without.
	for _, hdr := range []map[string]string{{"Origin": "https://evil.example"}, {"Origin": "https://evil.example", "Authorization": auth},
		{"Sec-Fetch-Site": "cross-site", "Authorization": auth}} {
		if got, body := send(t, http.MethodGet, ts.URL, hdr); got != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
			t.Errorf("GET with %v: status %d %q, want 403", hdr, got, body)
		}
	}
	if got, body := send(t, http.MethodGet, ts.URL, map[string]string{"Origin": self}); got != http.StatusUnauthorized {
		t.Errorf("GET from hub's own origin without token: status %d %q, want 401", got, body)
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

// TestHTTPPriming: every SSE stream of a 2025-11-25 client opens with a
// priming event (an id and no data) that it can resume from with
// Last-Event-ID; an older client gets none (SEP-1699's events came with
// 2025-11-25, and older clients may choke on empty data).
func TestHTTPPriming(t *testing.T) {
	isolate(t)
	ts := httpServer(t, &fakeDaemon{handle: canned(struct{}{})})
	for _, tc := range []struct {
		version string
		priming bool
	}{{"2025-06-18", false}, {"2025-11-25", true}} {
		t.Run(tc.version, func(t *testing.T) {
			body := strings.Replace(initBody, "2025-11-25", tc.version, 1)
			req, err := http.NewRequestWithContext(deadline(t, 10*time.Second), http.MethodPost, ts.URL, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
			}
			first := firstEvent(t, resp.Body)
			primed := first["id"] != "" && first["data"] == ""
			if primed != tc.priming {
				t.Errorf("first event %q: priming %v, want %v", first, primed, tc.priming)
			}
		})
	}
}

// firstEvent reads the fields of the first server-sent event in r.
func firstEvent(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	ev := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			return ev
		}
		k, v, _ := strings.Cut(line, ":")
		ev[k] = strings.TrimPrefix(v, " ")
	}
	t.Fatalf("stream ended inside its first event %q: %v", ev, sc.Err())
	return nil
}
