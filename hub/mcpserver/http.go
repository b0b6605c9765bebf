package mcpserver

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpSessionTimeout closes HTTP sessions idle this long.
const httpSessionTimeout = 30 * time.Minute

// HTTPHandler serves stateful streamable HTTP MCP for s. A request needs
// "Authorization: Bearer <token>" (401 otherwise); a present Origin must be
// http(s) on localhost, 127.0.0.1 or [::1] (403 otherwise); and the SDK
// refuses a non-loopback Host on a loopback listener (403, DNS rebinding).
func HTTPHandler(s *Server, token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: httpSessionTimeout, Logger: s.log})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !localOrigin(o) {
			http.Error(w, "Forbidden: origin "+o+" is not local", http.StatusForbidden)
			return
		}
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hub"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <token> (the token is in HUB_HOME/mcp-token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// localOrigin reports whether o is http(s)://localhost|127.0.0.1|[::1] with
// an optional port and nothing else.
func localOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if p := u.Port(); p != "" && strings.Trim(p, "0123456789") != "" {
		return false
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}
