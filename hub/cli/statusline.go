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
			line, err := statusLine(cmd.Context())
			if err != nil {
				return err
			}
			ios.printf("%s\n", line)
			return nil
		},
	}
}

// statusLine aggregates every job: what runs, what waits for an answer, what
// ended in the last ten minutes, and the month's spend.
func statusLine(ctx context.Context) (string, error) {
	paths, err := config.Resolve()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(paths.DB()); err != nil {
		return "hub: idle", nil
	}
	st, err := store.Open(paths.DB())
	if err != nil {
		return "", err
	}
	defer st.Close()
	jobs, err := st.ListJobs(ctx, nil, "", 200)
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	var running, queued, ended, failed int
	var asks []string
	for _, j := range jobs {
		switch {
		case j.State == protocol.StateNeedsInput:
			asks = append(asks, j.ID)
		case j.State == protocol.StateQueued:
			queued++
		case j.State.Active():
			running++
		case now.Sub(j.EndedAt) < 10*time.Minute:
			ended++
			if j.State != protocol.StateSucceeded {
				failed++
			}
		}
	}
	tot, err := st.MonthTotals(ctx, now.Format("2006-01"))
	if err != nil {
		return "", err
	}
	var parts []string
	if len(asks) > 0 {
		parts = append(parts, fmt.Sprintf("⚠ %d needs input (%s)", len(asks), strings.Join(asks, ", ")))
	}
	if running > 0 {
		parts = append(parts, fmt.Sprintf("⏳ %d running", running))
	}
	if queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", queued))
	}
	if ended > 0 {
		s := fmt.Sprintf("✓ %d ended", ended)
		if failed > 0 {
			s += fmt.Sprintf(" (%d failed)", failed)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		parts = append(parts, "idle")
	}
	parts = append(parts, (tot.ChargedMicros+tot.ReservedMicros).String()+" this month")
	return "hub: " + strings.Join(parts, " · "), nil
}
