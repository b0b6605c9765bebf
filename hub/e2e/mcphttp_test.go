package e2e

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPHTTP: `hub mcp --http` on loopback serves a real streamable client
// that brings the bearer token, and refuses one without it or from a foreign origin.
func TestMCPHTTP(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, w.bin, "mcp", "--http", "127.0.0.1:0")
	cmd.Env = w.env.Vars
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`MCP on (http://127\.0\.0\.1:\d+/)`)
	var url string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("hub mcp --http never said where it listens")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	tok, err := os.ReadFile(w.paths.MCPToken())
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(w.paths.MCPToken()); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	token := strings.TrimSpace(string(tok))

	for _, tc := range []struct {
		name   string
		auth   string
		origin string
		host   string
		want   int
	}{
		{"no token", "", "", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", "", "", http.StatusUnauthorized},
		{"foreign origin", "Bearer " + token, "https://evil.example", "", http.StatusForbidden},
		{"foreign host (DNS rebinding)", "Bearer " + token, "", "evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "engines", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("engines over HTTP: %v %+v", err, res)
	}
	if !strings.Contains(contentText(res), "exec") {
		t.Errorf("engines text: %s", contentText(res))
	}
}
