package mcpserver

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpSessionTimeout closes HTTP sessions idle this long.
const httpSessionTimeout = 30 * time.Minute

// tokenHint says where the token is; it ends every refusal of a wrong token.
const tokenHint = "send Authorization: Bearer <token> (the token is in HUB_HOME/mcp-token)"

// HTTPHandler serves stateful streamable HTTP MCP for s, guarded by the
// SDK's and net/http's stock checks, outermost first:
//
//   - http.CrossOriginProtection: a browser's cross-origin request
//     (Sec-Fetch-Site, or an Origin that is not the Host) gets 403, whatever
//     its method: GET too, though net/http counts it safe.
//   - auth.RequireBearerToken: "Authorization: Bearer <token>" with hub's
//     token (compared in constant time), or 401.
//   - the SDK's DNS-rebinding protection: on a loopback listener a Host
//     that is not localhost, 127.0.0.1 or [::1] gets 403.
//
// Streams are resumable: an event store keeps each session's recent events,
// so a 2025-11-25 client gets a priming event first on every SSE stream and
// can reconnect with Last-Event-ID.
func HTTPHandler(s *Server, token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{
			SessionTimeout: httpSessionTimeout,
			Logger:         s.log,
			EventStore:     mcp.NewMemoryEventStore(nil),
		})
	authed := auth.RequireBearerToken(verifyToken(token), &auth.RequireBearerTokenOptions{
		AllowMissingExpiration: true, // hub's token lives as long as its file
	})(h)
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// MCP asks for the Origin to be checked on every request; net/http's
		// check passes the methods it counts safe, GET (the SSE stream)
		// among them, so each request is checked as a POST would be.
		asked := *r
		asked.Method = http.MethodPost
		if err := cop.Check(&asked); err != nil {
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// verifyToken accepts exactly token (none when it is empty), compared in
// constant time.
func verifyToken(token string) auth.TokenVerifier {
	want := []byte(token)
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, tokenHint)
		}
		return &auth.TokenInfo{}, nil
	}
}
