package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

// summaryLines bounds the summary the supervisor reads by default.
const summaryLines = 10

func addResult(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "result",
		Description: "A job's outcome as a 10-line summary.",
		Annotations: annotate("Job result", protocol.MethodJobResult),
		InputSchema: paramsSchema[protocol.ResultParams](map[string]string{"full": "whole final text", "evidence": "what hub observed, as JSON"}),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in protocol.ResultParams) (*mcp.CallToolResult, *protocol.ResultResult, error) {
		var out protocol.ResultResult
		if err := s.call(ctx, protocol.MethodJobResult, in, &out); err != nil {
			return nil, nil, err
		}
		return text("%s", resultText(in, &out)), &out, nil
	})
}

func resultText(in protocol.ResultParams, r *protocol.ResultResult) string {
	var parts []string
	switch {
	case in.Full && r.Full != "":
		parts = append(parts, r.Full)
	case !in.Evidence || r.Evidence == nil:
		sum := view.FirstLines(r.Summary, summaryLines)
		if sum == "" {
			sum = r.ID + " " + string(r.State) + ": no summary yet"
		}
		parts = append(parts, sum)
	}
	if in.Evidence && r.Evidence != nil {
		// Keep < and > as they are ("test <test@localhost>"): the reader is a model, not a browser.
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r.Evidence); err == nil {
			parts = append(parts, strings.TrimRight(b.String(), "\n"))
		}
	}
	return strings.Join(parts, "\n")
}
