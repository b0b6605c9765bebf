package main

import (
	"context"
	"fmt"
)

// coldSection: spawning `hub mcp` until it answers initialize, against a
// minimal MCP server on the official TypeScript SDK in Node, the runtime
// most MCP servers ship on.
func coldSection(ctx context.Context, e *env) (*section, error) {
	server, err := nodeMCPServer(e.root)
	if err != nil {
		return nil, err
	}
	hub := &figure{name: "`hub mcp` spawn → `initialize` answered", unit: "ms", target: "≥ 5× faster than Node"}
	node := &figure{name: "reference: Node MCP server (@modelcontextprotocol/sdk) spawn → `initialize` answered", unit: "ms"}
	var ratios []float64
	for i := -1; i < e.runs; i++ {
		// The first pair warms the page cache and is not counted.
		var h, n float64
		if err := pair(i,
			func() error { d, err := stdioInit(e.bin, "mcp"); h = ms(d); return err },
			func() error { d, err := stdioInit("node", server); n = ms(d); return err }); err != nil {
			return nil, err
		}
		if i < 0 {
			continue
		}
		hub.samples = append(hub.samples, h)
		node.samples = append(node.samples, n)
		ratios = append(ratios, n/h)
	}
	r := node.p50() / hub.p50()
	hub.pass = boolp(r >= 5)
	rs := &figure{samples: ratios}
	_, _, _, lo, hi := rs.stats()
	hub.note = fmt.Sprintf("%.1f× faster than the Node reference (run by run: median %.1f×, %.1f–%.1f×)", r, rs.p50(), lo, hi)
	_, _, _, hlo, hhi := hub.stats()
	_, _, _, nlo, nhi := node.stats()
	return &section{title: "4. Cold start", figs: []*figure{hub, node},
		plots: []plot{{file: "cold-start.svg", alt: "hub mcp cold start against a Node MCP server", c: chart{
			Title: "Spawn → initialize answered (median, whiskers min–max)", Unit: "ms",
			Groups: []group{{Label: "cold start", Bars: []bar{
				{Series: "hub mcp", P50: hub.p50(), Lo: hlo, Hi: hhi},
				{Series: "Node + @modelcontextprotocol/sdk", P50: node.p50(), Lo: nlo, Hi: nhi}}}}}}},
		how: `Each run spawns the server, writes one MCP ` + "`initialize`" + ` request on its stdin, and stops the clock when the
answer line arrives; the process is then killed. ` + "`hub mcp`" + ` runs with the daemon already up, as it does once any client
started it: it dials the socket, initializes with the daemon and subscribes before it answers. The reference is
bench/node-mcp/server.mjs, a stdio server on @modelcontextprotocol/sdk (pinned in its package.json) with one tool, run
by the machine's Node; it talks to nothing, so it is the runtime's and the SDK's cost alone. The two alternate which
goes first; one warm-up pair is discarded.`}, nil
}

func ledgerSection(_ context.Context, e *env) (*section, error) {
	figs, err := ledgerFigures(e.runs)
	if err != nil {
		return nil, err
	}
	return &section{title: "7. Ledger", figs: figs,
		how: `Eight processes (copies of this harness) open one hub.db and each books and closes reservations as fast as it
can: create a job with a $0.10 budget, admit it (slot and money in one immediate transaction), set it running,
finish it with a known cost. The limits are set so they never refuse, so the figure is the ledger's own rate, not
contention for slots. The reference is one process doing the same total in the same run. After every run the
invariant is checked on the database, and a breach fails the harness: no broken rule between jobs, slots and
money (` + "`CheckInvariants`" + `); every reservation closed exactly once and charged exactly its job's cost; as many rows as
reservations; the month's totals equal the sum of the charges; nothing still reserved or running. Eight writers on
one SQLite file take turns on its write lock, so they are not expected to beat one.`}, nil
}

func loopSection(_ context.Context, e *env) (*section, error) {
	figs, err := loopFigures(e.runs)
	if err != nil {
		return nil, err
	}
	return &section{title: "8. Built-in worker", figs: figs,
		how: fmt.Sprintf(`**Loop overhead per turn**: the built-in worker (package agent) runs %d turns against the scripted model
server on loopback, each turn one `+"`read_file`"+` of a one-line file, then a final answer. Everything the loop does but
the model call itself (building the request, running the tool, steering and cost reports to the mailbox, context
accounting) is the run's wall time minus the time spent inside the model client, divided by the turns. The
reference is a bare model call (the same client, the same server, a one-line conversation), timed in the same
process. **Prompt fixed size**: the first request of a write job (system prompt, every tool schema with the role
tools, and a one-line task), as the scripted server received it; tokens estimated at 4 bytes each.`, loopTurns)}, nil
}
