package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/money"
	"github.com/hub-agents/hub/hub/protocol"
)

func newLedgerCmd(ios *IO) *cobra.Command {
	var p protocol.LedgerParams
	cmd := &cobra.Command{
		Use:   "ledger [--month YYYY-MM] [--open] [--job ID]",
		Short: "List the month's reservations, what each was charged, and the month against the cap",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.Month != "" {
				if p.Job != "" {
					return &usageError{fmt.Errorf("--month and --job do not go together: a job's reservation is in the month it was admitted")}
				}
				m, err := money.ParseMonth(p.Month)
				if err != nil {
					return &usageError{fmt.Errorf("bad --month: %v", err)}
				}
				p.Month = m
			}
			res, err := ios.daemon().LedgerList(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.LedgerResult) {
				ios.printf("%s", money.LedgerText(*res))
			})
		},
	}
	cmd.Flags().StringVar(&p.Month, "month", "", "month as YYYY-MM (default: this month, UTC)")
	cmd.Flags().BoolVar(&p.Open, "open", false, "only reservations still open")
	cmd.Flags().StringVar(&p.Job, "job", "", "only this job's reservation")
	return cmd
}

func newROICmd(ios *IO) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "roi [--since 30d]",
		Short: "What each engine gave for its spend: verified successes per dollar, failures, times",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := money.ParseSince(since, time.Now().UTC())
			if err != nil {
				return &usageError{fmt.Errorf("bad --since: %v", err)}
			}
			res, err := ios.daemon().ROIReport(cmd.Context(), protocol.ROIParams{Since: from})
			return answer(ios, res, err, func(res *protocol.ROIResult) {
				ios.printf("%s", money.ROIText(*res))
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "30d", "jobs that ended since: a span (30d, 12h, 90m) or a date (2026-11-01, UTC)")
	return cmd
}
