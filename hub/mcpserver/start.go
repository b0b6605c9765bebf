package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

// startIn is one job, as the supervisor describes it. Descriptions are kept
// to a few words: every byte is paid for in each tools/list.
type startIn struct {
	Task             string   `json:"task" jsonschema:"self-contained instructions"`
	Repo             string   `json:"repo,omitempty" jsonschema:"git repo path"`
	Cwd              string   `json:"cwd,omitempty" jsonschema:"read job dir"`
	Base             string   `json:"base,omitempty" jsonschema:"default HEAD"`
	Kind             string   `json:"kind,omitempty" jsonschema:"write (default)|read"`
	Files            []string `json:"files,omitempty" jsonschema:"where to look first"`
	Engine           string   `json:"engine,omitempty" jsonschema:"default auto"`
	Exec             string   `json:"exec,omitempty" jsonschema:"command, for engine exec"`
	Profile          string   `json:"profile,omitempty"`
	Model            string   `json:"model,omitempty"`
	Effort           string   `json:"effort,omitempty"`
	MaxUSD           *float64 `json:"max_usd,omitempty" jsonschema:"budget; 0: no spend"`
	MaxTurns         int      `json:"max_turns,omitempty"`
	TimeoutS         int      `json:"timeout_s,omitempty" jsonschema:"default 1800"`
	Isolation        string   `json:"isolation,omitempty" jsonschema:"worktree|sandbox|isolated|untrusted"`
	Verify           string   `json:"verify,omitempty" jsonschema:"check on the result"`
	DefinitionOfDone string   `json:"definition_of_done,omitempty"`
	AskTimeoutS      int      `json:"ask_timeout_s,omitempty" jsonschema:"question wait (600)"`
	Setup            string   `json:"setup,omitempty" jsonschema:"runs before worker"`
}

func (in startIn) params() protocol.StartParams {
	return protocol.StartParams{
		Task:             in.Task,
		Repo:             in.Repo,
		Cwd:              in.Cwd,
		Base:             in.Base,
		Kind:             in.Kind,
		Files:            in.Files,
		Engine:           in.Engine,
		Exec:             in.Exec,
		Profile:          in.Profile,
		Model:            in.Model,
		Effort:           in.Effort,
		MaxUSD:           in.MaxUSD,
		MaxTurns:         in.MaxTurns,
		TimeoutS:         in.TimeoutS,
		Isolation:        in.Isolation,
		Verify:           in.Verify,
		DefinitionOfDone: in.DefinitionOfDone,
		AskTimeoutS:      in.AskTimeoutS,
		Setup:            in.Setup,
	}
}

func addStart(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "start",
		Description: "Start one job on its own branch; returns its id at once.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in startIn) (*mcp.CallToolResult, *protocol.StartResult, error) {
		var out protocol.StartResult
		if err := s.call(ctx, protocol.MethodJobStart, in.params(), &out); err != nil {
			return nil, nil, err
		}
		return text("%s", startText(&out)), &out, nil
	})
}

// startText is "abc12345 queued · exec · branch hub/abc12345", then the notes.
func startText(r *protocol.StartResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s · %s", r.ID, r.State, r.Engine)
	if r.Branch != "" {
		fmt.Fprintf(&b, " · branch %s", r.Branch)
	}
	if r.Isolation != "" && r.Isolation != protocol.IsolationWorktree {
		fmt.Fprintf(&b, " · %s", r.Isolation)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n  note: %s", n)
	}
	return b.String()
}
