package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

type startManyIn struct {
	Jobs []protocol.StartParams `json:"jobs" jsonschema:"same fields as start"`
}

// startManyOut is protocol.StartManyResult with every field optional: an
// item is a started job or an error. (The protocol type embeds
// *StartResult, whose fields the inferred schema would require even on an
// error item.) It encodes to the same JSON.
type startManyOut struct {
	Results []startManyItem `json:"results"`
}

type startManyItem struct {
	ID        string              `json:"id,omitempty"`
	State     protocol.State      `json:"state,omitempty"`
	Engine    string              `json:"engine,omitempty"`
	Branch    string              `json:"branch,omitempty"`
	Base      string              `json:"base,omitempty"`
	Isolation protocol.Isolation  `json:"isolation,omitempty"`
	Notes     []string            `json:"notes,omitempty"`
	Error     *protocol.ItemError `json:"error,omitempty"`
}

func addStartMany(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "start_many",
		Description: "Start independent jobs at once.",
		Annotations: annotate("", protocol.DaemonSpec.StartMany),
		InputSchema: startManySchema(),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in startManyIn) (*mcp.CallToolResult, *startManyOut, error) {
		p := protocol.StartManyParams{Jobs: in.Jobs}
		res, err := s.daemon().StartMany(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		out := &startManyOut{Results: make([]startManyItem, len(res.Results))}
		var b strings.Builder
		for i, r := range res.Results {
			it := startManyItem{Error: r.Error}
			if r.StartResult != nil {
				it.ID, it.State, it.Engine, it.Branch = r.ID, r.State, r.Engine, r.Branch
				it.Base, it.Isolation, it.Notes = r.Base, r.Isolation, r.Notes
			}
			out.Results[i] = it
			if i > 0 {
				b.WriteString("\n")
			}
			switch {
			case r.Error != nil:
				fmt.Fprintf(&b, "#%d refused: %s", i+1, itemErrorText(r.Error))
			case r.StartResult != nil:
				b.WriteString(startText(r.StartResult))
			default:
				fmt.Fprintf(&b, "#%d: no answer from the daemon", i+1)
			}
		}
		return text("%s", b.String()), out, nil
	})
}

func itemErrorText(e *protocol.ItemError) string {
	return failure(e.Message, e.Field, e.Hint)
}
