package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/trace"
)

// traceSummary bounds a row's summary in the table (--json has it whole).
const traceSummary = 80

// newTraceCmd prints a job's trace: hub's phases and, inside the run, the
// engine's model calls, tool calls and commands, with their timings,
// tokens and cost.
func newTraceCmd(ios *IO) *cobra.Command {
	var p protocol.TraceParams
	cmd := &cobra.Command{
		Use:   "trace ID",
		Short: "Print a job's trace: each phase, model call and tool call with its time, tokens and cost (--json: the list)",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.ID = args[0]
			if p.From < 0 || p.Limit < 0 {
				return &usageError{fmt.Errorf("--from and --limit take 1 or more (leave them out for the whole trace)")}
			}
			res, err := ios.daemon().JobTrace(cmd.Context(), p)
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(res)
			}
			return trace.Table(ios.Out, *res, traceSummary)
		},
	}
	cmd.Flags().IntVar(&p.From, "from", 0, "start at this step (default 1)")
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "print at most this many steps (default all)")
	return cmd
}
