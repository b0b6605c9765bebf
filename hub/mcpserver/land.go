package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

// landIn is job/land's params as the tool takes them: squash for mode (as
// the CLI's --squash), and no verify_timeout_s (the job's own bounds each
// check), each byte of the schema being paid for on every turn.
type landIn struct {
	IDs     []string `json:"ids"`
	Into    string   `json:"into,omitempty"`
	Order   string   `json:"order,omitempty" jsonschema:"given|auto"`
	Squash  bool     `json:"squash,omitempty"`
	Verify  string   `json:"verify,omitempty" jsonschema:"batch check"`
	Resolve bool     `json:"resolve,omitempty" jsonschema:"job per conflict"`
	DryRun  bool     `json:"dry_run,omitempty"`
}

func addLand(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "land",
		Description: "Merge ended jobs into their base branch, verified first.",
		Annotations: annotate("", protocol.DaemonSpec.JobLand),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in landIn) (*mcp.CallToolResult, *protocol.LandResult, error) {
		p := protocol.LandParams{IDs: in.IDs, Into: in.Into, Order: in.Order, Verify: in.Verify, Resolve: in.Resolve, DryRun: in.DryRun}
		if in.Squash {
			p.Mode = protocol.LandSquash
		}
		out, err := s.daemon().JobLand(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", landText(out)), out, nil
	})
}

// landText is the outcome in one line, then a line per job.
func landText(r *protocol.LandResult) string {
	lines := []string{r.Line}
	for _, it := range r.Jobs {
		lines = append(lines, view.LandItemLine(it))
	}
	return strings.Join(lines, "\n")
}
