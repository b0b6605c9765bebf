package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

func addCleanup(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "cleanup",
		Description: "Remove an ended job's worktree.",
		Annotations: annotate("", protocol.DaemonSpec.JobCleanup),
		InputSchema: paramsSchema[protocol.CleanupParams](map[string]string{"force": "off-branch or unmerged too"}),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.CleanupParams) (*mcp.CallToolResult, *protocol.CleanupResult, error) {
		out, err := s.daemon().JobCleanup(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", cleanupText(out)), out, nil
	})
}

func cleanupText(r *protocol.CleanupResult) string {
	var parts []string
	if r.WorktreeRemoved {
		parts = append(parts, "worktree removed")
	} else {
		parts = append(parts, "no worktree to remove")
	}
	switch {
	case r.Branch == "":
	case r.BranchDeleted:
		parts = append(parts, "branch "+r.Branch+" deleted")
	default:
		parts = append(parts, "branch "+r.Branch+" kept")
	}
	return fmt.Sprintf("%s: %s", r.ID, strings.Join(parts, " · "))
}
