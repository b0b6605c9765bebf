package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func addEngines(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "engines",
		Description: "Engines: capacity, month's spend.",
		Annotations: annotate("", protocol.DaemonSpec.EngineList),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, *protocol.EnginesResult, error) {
		out, err := s.daemon().EngineList(ctx, protocol.Empty{})
		if err != nil {
			return nil, nil, err
		}
		return text("%s", enginesText(out)), out, nil
	})
}

func enginesText(r *protocol.EnginesResult) string {
	var b strings.Builder
	for _, e := range r.Engines {
		if e.Available {
			fmt.Fprintf(&b, "%s ready", e.Name)
			if e.Version != "" {
				fmt.Fprintf(&b, " %s", e.Version)
			}
			if e.Capabilities.Pays != "" {
				fmt.Fprintf(&b, " · %s", e.Capabilities.Pays)
			}
			if len(e.Capabilities.Isolation) > 0 {
				fmt.Fprintf(&b, " · %s", protocol.JoinIsolation(e.Capabilities.Isolation, ","))
			}
		} else {
			fmt.Fprintf(&b, "%s unavailable", e.Name)
			if e.Reason != "" {
				fmt.Fprintf(&b, ": %s", view.OneLine(e.Reason, 120))
			}
		}
		if e.Capacity != "" {
			fmt.Fprintf(&b, " · capacity: %s", e.Capacity)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s: spent $%.2f, reserved $%.2f of $%.2f · running %d/%d · queued %d",
		r.Month, r.SpentUSD, r.ReservedUSD, r.MonthlyCapUSD, r.Running, r.MaxRunning, r.Queued)
	return b.String()
}
