package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/trace"
	"github.com/hub-agents/hub/hub/view"
)

// summaryLines bounds the summary the supervisor reads by default.
const summaryLines = 10

// resultIn is job/result's params, and ids for several jobs at once: their
// review packet (job/review), one line each, instead of a summary each; or
// trace, the job's trace (job/trace) as a table from that step on, a page
// at a time. Its descriptions are short: tools/list has a byte budget.
type resultIn struct {
	ID       string   `json:"id,omitempty"`
	IDs      []string `json:"ids,omitempty" jsonschema:"review packet"`
	Full     bool     `json:"full,omitempty"`
	Evidence bool     `json:"evidence,omitempty" jsonschema:"hub's evidence JSON"`
	Trace    int      `json:"trace,omitempty"`
}

// tracePage is how many trace steps one result call returns, and
// traceSummary how many characters of each step's summary.
const (
	tracePage    = 40
	traceSummary = 60
)

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
		Annotations: annotate("", protocol.DaemonSpec.JobResult, protocol.DaemonSpec.JobReview),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in resultIn) (*mcp.CallToolResult, *resultOut, error) {
		switch {
		case in.Trace < 0:
			return nil, nil, &toolErr{"trace is the step to start from: 1 for the start of the trace."}
		case in.Trace > 0 && (len(in.IDs) > 0 || in.Full || in.Evidence):
			return nil, nil, &toolErr{"pass id and trace alone for a job's trace; full, evidence and ids are for its result."}
		case in.Trace > 0 && in.ID != "":
			return s.traceResult(ctx, in.ID, in.Trace)
		case len(in.IDs) > 0 && (in.ID != "" || in.Full || in.Evidence):
			return nil, nil, &toolErr{"pass id (with full or evidence) for one job, or ids for a review packet of several, not both."}
		case len(in.IDs) > 0:
			out, err := s.daemon().JobReview(ctx, protocol.ReviewParams{IDs: in.IDs})
			if err != nil {
				return nil, nil, err
			}
			return text("%s", out.Text), &resultOut{ReviewResult: out}, nil
		case in.ID == "":
			return nil, nil, &toolErr{"pass id, or ids for several jobs."}
		}
		p := protocol.ResultParams{ID: in.ID, Full: in.Full, Evidence: in.Evidence}
		out, err := s.daemon().JobResult(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", resultText(p, out)), &resultOut{ResultResult: out}, nil
	})
}

// traceResult is a page of a job's trace as a compact table, and where the
// next page starts. Text only: the table is what is cheap to read.
func (s *Server) traceResult(ctx context.Context, id string, from int) (*mcp.CallToolResult, *resultOut, error) {
	tr, err := s.daemon().JobTrace(ctx, protocol.TraceParams{ID: id, From: from, Limit: tracePage})
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	if err := trace.Table(&b, *tr, traceSummary); err != nil {
		return nil, nil, err
	}
	if tr.Next > 0 {
		fmt.Fprintf(&b, "more: trace=%d\n", tr.Next)
	}
	return text("%s", strings.TrimRight(b.String(), "\n")), nil, nil
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
