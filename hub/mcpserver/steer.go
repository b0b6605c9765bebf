package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

type steerIn struct {
	ID   string `json:"id"`
	Text string `json:"text" jsonschema:"new direction"`
}

func addSteer(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "steer",
		Description: "Redirect a running job; the worker gets it at its next step.",
		Annotations: annotate(protocol.MethodJobSteer),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in steerIn) (*mcp.CallToolResult, *protocol.SteerResult, error) {
		var out protocol.SteerResult
		if err := s.call(ctx, protocol.MethodJobSteer, protocol.SteerParams{ID: in.ID, Text: in.Text}, &out); err != nil {
			return nil, nil, err
		}
		return text("%s: steering queued; it reaches the worker at its next progress report or tool result", out.ID), &out, nil
	})
}
