package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func addStop(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "stop",
		Description: "Stop a job; its work is kept.",
		Annotations: annotate("", protocol.DaemonSpec.JobStop),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.IDParams) (*mcp.CallToolResult, *protocol.JobStatus, error) {
		out, err := s.daemon().JobStop(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", view.Line(*out)), out, nil
	})
}
