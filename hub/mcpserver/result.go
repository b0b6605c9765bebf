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

// resultIn is job/result's params, and ids for several jobs at once: their
// review packet (job/review), one line each, instead of a summary each.
type resultIn struct {
	ID       string   `json:"id,omitempty"`
	IDs      []string `json:"ids,omitempty" jsonschema:"several: a review packet"`
	Full     bool     `json:"full,omitempty"`
	Evidence bool     `json:"evidence,omitempty" jsonschema:"what hub observed, as JSON"`
}

// resultOut is the structured output: job/result's answer, or with ids
// job/review's. Only one is set, so it encodes as that one.
type resultOut struct {
	*protocol.ResultResult
	*protocol.ReviewResult
}

func addResult(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "result",
		Description: "A job's outcome in 10 lines.",
		Annotations: annotate("", protocol.MethodJobResult, protocol.MethodJobReview),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in resultIn) (*mcp.CallToolResult, *resultOut, error) {
		switch {
		case len(in.IDs) > 0 && (in.ID != "" || in.Full || in.Evidence):
			return nil, nil, &toolErr{"pass id (with full or evidence) for one job, or ids for a review packet of several, not both."}
		case len(in.IDs) > 0:
			var out protocol.ReviewResult
			if err := s.call(ctx, protocol.MethodJobReview, protocol.ReviewParams{IDs: in.IDs}, &out); err != nil {
				return nil, nil, err
			}
			return text("%s", out.Text), &resultOut{ReviewResult: &out}, nil
		case in.ID == "":
			return nil, nil, &toolErr{"pass id, or ids for several jobs."}
		}
		p := protocol.ResultParams{ID: in.ID, Full: in.Full, Evidence: in.Evidence}
		var out protocol.ResultResult
		if err := s.call(ctx, protocol.MethodJobResult, p, &out); err != nil {
			return nil, nil, err
		}
		return text("%s", resultText(p, &out)), &resultOut{ResultResult: &out}, nil
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
