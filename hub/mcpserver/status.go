package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func addStatus(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "status",
		Description: "One job in one line.",
		Annotations: annotate("", protocol.DaemonSpec.JobStatus),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.IDParams) (*mcp.CallToolResult, *protocol.JobStatus, error) {
		out, err := s.daemon().JobStatus(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", view.Line(*out)), out, nil
	})
}
