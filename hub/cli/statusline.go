package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

func newStatuslineCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "statusline",
		Short: "One line for Claude Code's status line: every job of HUB_HOME, aggregated",
		Long: "Reads the store directly (no daemon needed) and prints one line.\n" +
			"Wire it in ~/.claude/settings.json: {\"statusLine\":{\"type\":\"command\",\"command\":\"hub statusline\",\"refreshInterval\":2}}",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Claude Code sends session JSON on stdin; it is not needed.
			sum, err := statusLine(cmd.Context())
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(sum)
			}
			ios.printf("%s\n", sum.Line())
			return nil
		},
	}
}

// jobsSummary is every job of HUB_HOME at a glance: what `hub statusline`
// prints, as a line or (--json) as this.
type jobsSummary struct {
	NeedsInput []string `json:"needs_input"` // jobs waiting for an answer
	Running    int      `json:"running"`
	Queued     int      `json:"queued"`
	Ended      int      `json:"ended"`  // in the last ten minutes
	Failed     int      `json:"failed"` // of those, ended without succeeding
	// MonthUSD is the month's spend with what is reserved; nil with no store.
	MonthUSD *float64 `json:"month_usd,omitempty"`
	month    micros.Micros
}

// statusLine aggregates every job: what runs, what waits for an answer, what
// ended in the last ten minutes, and the month's spend.
func statusLine(ctx context.Context) (jobsSummary, error) {
	sum := jobsSummary{NeedsInput: []string{}}
	paths, err := config.Resolve()
	if err != nil {
		return sum, err
	}
	if _, err := os.Stat(paths.DB()); err != nil {
		return sum, nil
	}
	st, err := store.Open(paths.DB())
	if err != nil {
		return sum, err
	}
	defer st.Close()
	jobs, err := st.ListJobs(ctx, nil, "", 200)
	if err != nil {
		return sum, err
	}
	now := time.Now().UTC()
	for _, j := range jobs {
		switch {
		case j.State == protocol.StateNeedsInput:
			sum.NeedsInput = append(sum.NeedsInput, j.ID)
		case j.State == protocol.StateQueued:
			sum.Queued++
		case j.State.Active():
			sum.Running++
		case now.Sub(j.EndedAt) < 10*time.Minute:
			sum.Ended++
			if j.State != protocol.StateSucceeded {
				sum.Failed++
			}
		}
	}
	tot, err := st.MonthTotals(ctx, now.Format("2006-01"))
	if err != nil {
		return sum, err
	}
	sum.month = tot.ChargedMicros + tot.ReservedMicros
	usd := sum.month.USD()
	sum.MonthUSD = &usd
	return sum, nil
}

// Line is the summary as Claude Code's status line shows it.
func (s jobsSummary) Line() string {
	var parts []string
	if n := len(s.NeedsInput); n > 0 {
		parts = append(parts, fmt.Sprintf("⚠ %d needs input (%s)", n, strings.Join(s.NeedsInput, ", ")))
	}
	if s.Running > 0 {
		parts = append(parts, fmt.Sprintf("⏳ %d running", s.Running))
	}
	if s.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", s.Queued))
	}
	if s.Ended > 0 {
		e := fmt.Sprintf("✓ %d ended", s.Ended)
		if s.Failed > 0 {
			e += fmt.Sprintf(" (%d failed)", s.Failed)
		}
		parts = append(parts, e)
	}
	if len(parts) == 0 {
		parts = append(parts, "idle")
	}
	if s.MonthUSD != nil {
		parts = append(parts, s.month.String()+" this month")
	}
	return "hub: " + strings.Join(parts, " · ")
}
