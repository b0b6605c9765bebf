package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/hub/protocol"
)

// The worker MCP server (`hub worker-mcp`) is what an agent CLI working a
// job (Claude Code, Codex, OpenCode) gets as its line to the supervisor: the
// same ask, progress and blocker the built-in worker has, bound to one job
// through the job's shim. Steering queued for the job rides on the result
// of whichever of its tools the worker calls next.

// Shim is the job's mailbox socket. Call is safe for concurrent use.
type Shim interface {
	Call(ctx context.Context, method string, params, result any) error
}

// NewWorker returns the worker MCP server for job, speaking to its shim.
func NewWorker(shim Shim, job string, o Options) *mcp.Server {
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hub-worker", Version: version}, &mcp.ServerOptions{
		Instructions: "You work a job for a supervisor through hub. Report milestones with report_progress; ask_supervisor when a decision is not yours; " +
			"report_blocker when you cannot go on. Messages marked STEERING come from your supervisor and override earlier guidance.",
		Logger: o.Logger,
	})
	s.AddReceivingMiddleware(refuseDiscover)
	w := &worker{shim: shim, job: job}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "ask_supervisor",
		Description: "Ask your supervisor a question whose answer is not yours to decide; waits for the reply.",
		Annotations: annotate("Ask supervisor", protocol.ShimSpec.WorkerAsk),
	}, w.ask)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "report_progress",
		Description: "Tell your supervisor, in one short line, what milestone you reached; returns any new direction from them.",
		Annotations: annotate("Report progress", protocol.ShimSpec.WorkerProgress),
	}, w.progress)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "report_blocker",
		Description: "Tell your supervisor you cannot go on without them (missing access, contradictory requirements); waits for the reply.",
		Annotations: annotate("Report blocker", protocol.ShimSpec.WorkerAsk),
	}, w.blocker)
	return s
}

type worker struct {
	shim Shim
	job  string
}

type askIn struct {
	Question string `json:"question" jsonschema:"the question, self-contained"`
	Context  string `json:"context,omitempty" jsonschema:"what you found that makes it a question"`
}

type progressIn struct {
	Note string `json:"note" jsonschema:"one short line"`
}

type blockerIn struct {
	Blocker string `json:"blocker" jsonschema:"what stops you"`
	Needed  string `json:"needed,omitempty" jsonschema:"what you need to go on"`
}

func (w *worker) ask(ctx context.Context, _ *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Question) == "" {
		return nil, nil, &toolErr{"question is empty; ask a question in words"}
	}
	return w.put(ctx, "question", in.Question, in.Context,
		"No answer came in time. ")
}

func (w *worker) blocker(ctx context.Context, _ *mcp.CallToolRequest, in blockerIn) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Blocker) == "" {
		return nil, nil, &toolErr{"blocker is empty; say what stops you"}
	}
	return w.put(ctx, "blocker", in.Blocker, in.Needed,
		"No answer came in time: stop working, and end with a summary that names this blocker and what you did. ")
}

// put asks the supervisor and waits for the answer (or the ask timeout).
func (w *worker) put(ctx context.Context, kind, text, context, noAnswer string) (*mcp.CallToolResult, any, error) {
	res, err := protocol.ShimClient{C: w.shim}.WorkerAsk(ctx, protocol.AskParams{Job: w.job, Question: text, Context: context, Kind: kind})
	if err != nil {
		return nil, nil, shimErr(err)
	}
	var out string
	if res.TimedOut {
		out = noAnswer + res.Instruction
	} else {
		out = "Supervisor's answer: " + res.Answer
	}
	return text_(out + w.steering(ctx, "")), nil, nil
}

func (w *worker) progress(ctx context.Context, _ *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
	res, err := protocol.ShimClient{C: w.shim}.WorkerProgress(ctx, protocol.ProgressParams{Job: w.job, Note: in.Note})
	if err != nil {
		return nil, nil, shimErr(err)
	}
	return text_("noted" + agent.SteerText(res.Steer)), nil, nil
}

// steering fetches the steering queued for the job, rendered for a tool result.
func (w *worker) steering(ctx context.Context, note string) string {
	res, err := protocol.ShimClient{C: w.shim}.WorkerProgress(ctx, protocol.ProgressParams{Job: w.job, Note: note})
	if err != nil {
		return ""
	}
	return agent.SteerText(res.Steer)
}

func text_(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// shimErr says the job's shim could not be reached, for the worker to act on.
func shimErr(err error) error {
	return &toolErr{fmt.Sprintf("hub could not reach your job's supervisor line (%v); go on with the most conservative choice and say so in your summary", err)}
}
