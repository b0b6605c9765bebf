package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

type replyIn struct {
	ID         string `json:"id"`
	Text       string `json:"text" jsonschema:"the answer"`
	QuestionID string `json:"question_id,omitempty" jsonschema:"default: pending"`
}

func addReply(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "reply",
		Description: "Answer the question of a needs_input job.",
		Annotations: annotate(protocol.MethodJobReply),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in replyIn) (*mcp.CallToolResult, *protocol.ReplyResult, error) {
		var out protocol.ReplyResult
		p := protocol.ReplyParams{ID: in.ID, QuestionID: in.QuestionID, Text: in.Text}
		if err := s.call(ctx, protocol.MethodJobReply, p, &out); err != nil {
			return nil, nil, err
		}
		verb := "delivered"
		if !out.Delivered {
			verb = "recorded, not yet delivered"
		}
		return text("%s: answer to %s %s; wait again with since=cursor", out.ID, out.QuestionID, verb), &out, nil
	})
}
