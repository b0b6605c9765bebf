package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

func addSteer(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "steer",
		Description: "Redirect a running job's worker.",
		Annotations: annotate("", protocol.DaemonSpec.JobSteer),
		InputSchema: paramsSchema[protocol.SteerParams](nil),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.SteerParams) (*mcp.CallToolResult, *protocol.SteerResult, error) {
		out, err := s.daemon().JobSteer(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return text("%s: steering queued; it reaches the worker at its next progress report or tool result", out.ID), out, nil
	})
}
