package trace

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hub-agents/hub/hub/protocol"
)

// Table writes res as a table, one entry a row (step, kind, name indented
// by depth, start offset, duration, tokens, cost, summary), and a line of
// sums. summary bounds each row's summary in characters. The columns
// before the summary are ASCII, so they line up.
func Table(w io.Writer, res protocol.TraceResult, summary int) error {
	if len(res.Entries) == 0 {
		_, err := fmt.Fprintf(w, "%s %s: no trace entries%s\n", res.ID, res.State, pageNote(res))
		return err
	}
	origin := res.Entries[0].Start
	if res.Started != nil {
		origin = *res.Started
	}
	depth := depths(res.Entries)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tKIND\tNAME\tSTART\tTOOK\tTOKENS IN/OUT\tCOST\tSUMMARY")
	for _, e := range res.Entries {
		tokens, cost := "", ""
		if e.Kind == protocol.TraceModel {
			tokens = fmt.Sprintf("%d/%d", e.TokensIn, e.TokensOut)
			cost = fmt.Sprintf("$%.4f", e.USD)
			if e.CostUnknown {
				cost = "?"
			}
		}
		took := Duration(e.DurationUS)
		if e.GapUS > 0 {
			took += " (gap " + Duration(e.GapUS) + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s%s\t+%s\t%s\t%s\t%s\t%s\n", e.Step, e.Kind, strings.Repeat("  ", depth[e.ID]), Short(e.Name, 40),
			Duration(e.Start.Sub(origin).Microseconds()), took, tokens, cost, Short(Summary(e), summary))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(l, " \n")+strings.Repeat("\n", strings.Count(l, "\n"))); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, Sums(res)+pageNote(res))
	return err
}

// Summary is an entry's arguments and result in one line, a failure marked.
func Summary(e protocol.TraceEntry) string {
	s := e.Args
	if e.Result != "" {
		if s != "" {
			s += " ⇒ "
		}
		s += e.Result
	}
	if e.ExitCode != nil {
		s = fmt.Sprintf("exit %d · %s", *e.ExitCode, s)
	}
	if e.Failed {
		s = "FAILED · " + s
	}
	return strings.TrimSuffix(s, " · ")
}

// Sums is the trace's totals in one line: the running time and what the
// phases cover, and the page's model calls, tool calls and cost.
func Sums(res protocol.TraceResult) string {
	var models, tools, cmds int
	var usd float64
	var in, out int64
	for _, e := range res.Entries {
		switch e.Kind {
		case protocol.TraceModel:
			models++
			usd += e.USD
			in, out = in+e.TokensIn, out+e.TokensOut
		case protocol.TraceTool:
			tools++
		case protocol.TraceCommand:
			cmds++
		}
	}
	s := fmt.Sprintf("%s (%d→%d tokens, $%.4f), %s, %s", count(models, "model call"), in, out, usd, count(tools, "tool call"), count(cmds, "command"))
	if res.Started != nil {
		s = fmt.Sprintf("running %s, phases cover %s (gap %s) · ", Duration(res.RunningUS),
			Duration(res.RunningUS-res.PhaseGapUS), Duration(res.PhaseGapUS)) + s
	}
	return s
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func pageNote(res protocol.TraceResult) string {
	if res.Next == 0 {
		return ""
	}
	return fmt.Sprintf(" · steps %d–%d of %d; next page from step %d", res.Next-len(res.Entries), res.Next-1, res.Total, res.Next)
}
