package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

// startDocs are the start tool's argument descriptions, by name. The
// arguments themselves are protocol.StartParams's, so the tool takes every
// field job/start does; only the words are chosen here, kept to a few
// (every byte is paid for in each tools/list), and none for a name that
// says it all.
var startDocs = map[string]string{
	"kind":      "write|read",
	"exec":      "command, engine exec",
	"max_usd":   "budget; 0: no spend",
	"isolation": "worktree|sandbox|isolated|untrusted",
	"verify":    "check command",
	"deps":      "auto|off|command",
}

// startSchema is StartParams's schema with startDocs's descriptions, less
// limits: a job's limits are the user's to set (hub's config), not a
// supervising model's, and every byte of tools/list is paid for.
func startSchema() *jsonschema.Schema {
	sch := paramsSchema[protocol.StartParams](startDocs)
	delete(sch.Properties, "limits")
	return sch
}

// paramsSchema is the input schema of a tool that takes a protocol method's
// params type P itself, so it takes every field the method does and none is
// copied by hand: P's schema, with docs's descriptions (by argument name).
func paramsSchema[P any](docs map[string]string) *jsonschema.Schema {
	sch := inputSchema[P]()
	for name, doc := range docs {
		p, ok := sch.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpserver: %T has no argument %s", *new(P), name))
		}
		p.Description = doc
	}
	return sch
}

func addStart(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "start",
		Description: "Start a job on its own branch.",
		Annotations: annotate("", protocol.DaemonSpec.JobStart),
		InputSchema: startSchema(),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.StartParams) (*mcp.CallToolResult, *protocol.StartResult, error) {
		out, err := s.daemon().JobStart(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", startText(out)), out, nil
	})
}

// startText is "abc12345 queued · exec · branch hub/abc12345", then the notes.
func startText(r *protocol.StartResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s · %s", r.ID, r.State, r.Engine)
	if r.Branch != "" {
		fmt.Fprintf(&b, " · branch %s", r.Branch)
	}
	if r.Isolation != "" && r.Isolation != protocol.IsolationWorktree {
		fmt.Fprintf(&b, " · %s", r.Isolation)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n  note: %s", n)
	}
	return b.String()
}
