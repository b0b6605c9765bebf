package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

func addReply(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "reply",
		Description: "Answer a needs_input job's question.",
		Annotations: annotate("", protocol.DaemonSpec.JobReply),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.ReplyParams) (*mcp.CallToolResult, *protocol.ReplyResult, error) {
		out, err := s.daemon().JobReply(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		verb := "delivered"
		if !out.Delivered {
			verb = "recorded, not yet delivered"
		}
		return text("%s: answer to %s %s; wait again with since=cursor", out.ID, out.QuestionID, verb), out, nil
	})
}
