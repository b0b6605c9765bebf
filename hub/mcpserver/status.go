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
		Annotations: annotate("", protocol.MethodJobStatus),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.IDParams) (*mcp.CallToolResult, *protocol.JobStatus, error) {
		var out protocol.JobStatus
		if err := s.call(ctx, protocol.MethodJobStatus, in, &out); err != nil {
			return nil, nil, err
		}
		return text("%s", view.Line(out)), &out, nil
	})
}
