package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

// stepIn is what a supervisor passes to step: job/step's params less the
// knobs it leaves to their defaults (the profile, the bound, the wait), so
// the tool costs few bytes in every tools/list.
type stepIn struct {
	Claim string `json:"claim"`
	Repo  string `json:"repo"`
	Since string `json:"since,omitempty"`
	Check string `json:"check,omitempty"`
}

var stepDocs = map[string]string{"claim": "what you did", "check": "test command"}

func addStep(s *Server) {
	sch := inputSchema[stepIn]()
	for name, doc := range stepDocs {
		sch.Properties[name].Description = doc
	}
	addTool(s, &mcp.Tool{
		Name:        "step",
		Description: "Check your own step against the repo.",
		Annotations: annotate("", protocol.DaemonSpec.Step),
		InputSchema: sch,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in stepIn) (*mcp.CallToolResult, *protocol.StepResult, error) {
		p := protocol.StepParams{Claim: in.Claim, Repo: in.Repo, Since: in.Since, Check: in.Check}
		out, err := s.daemon().Step(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		return text("%s\n(job %s, %s)", out.Text, out.ID, view.Cost(out.Cost.USD, out.Cost.Known)), out, nil
	})
}
