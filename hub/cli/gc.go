package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/money"
	"github.com/hub-agents/hub/hub/protocol"
)

func newDUCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "du",
		Short: "Disk use per job (worktree, logs, engine folder), largest first, and HUB_HOME's totals",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().DU(cmd.Context(), protocol.DUParams{})
			return answer(ios, res, err, func(res *protocol.DUResult) {
				printDU(ios, *res)
			})
		},
	}
}

func printDU(ios *IO, res protocol.DUResult) {
	tw := tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tWORKTREE\tLOGS\tENGINE\tTOTAL")
	row := func(id, state string, u protocol.DUUsage) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, state, humanSize(u.WorktreeBytes),
			humanSize(u.LogsBytes), humanSize(u.EngineBytes), humanSize(u.TotalBytes))
	}
	for _, j := range res.Jobs {
		row(j.ID, string(j.State), j.DUUsage)
	}
	row(fmt.Sprintf("%d jobs", len(res.Jobs)), "", res.JobsTotal)
	tw.Flush()
	if len(res.Envs) > 0 {
		ios.printf("\n")
		tw = tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ENV CACHE\tTREE\tFILES\tSIZE\tLAST USED\tREPO")
		for _, e := range res.Envs {
			fmt.Fprintf(tw, "%s\t%s (%s, %s)\t%d\t%s\t%s ago\t%s\n", e.Key[:min(12, len(e.Key))], strings.Join(e.Dirs, ", "), e.Manager, e.Lockfile,
				e.Files, humanSize(e.Bytes), humanAge(time.Since(e.LastUsed)), e.Repo)
		}
		tw.Flush()
	}
	ios.printf("HUB_HOME %s: %s · db %s · logs %s · jobs %s · env cache %s\n", res.Home, humanSize(res.HomeBytes),
		humanSize(res.DBBytes), humanSize(res.LogsBytes), humanSize(res.JobsTotal.TotalBytes), humanSize(res.EnvsBytes))
}

type gcOptions struct {
	olderThan string
	protocol.GCParams
}

func newGCCmd(ios *IO) *cobra.Command {
	o := &gcOptions{}
	cmd := &cobra.Command{
		Use:   "gc [--older-than AGE] [--apply] [--force]",
		Short: "Remove what old ended jobs left (worktrees, merged branches, engine folders, logs); a dry run unless --apply",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("older-than") {
				d, err := parseAge(o.olderThan)
				if err != nil {
					return &usageError{err}
				}
				secs := int64(d / time.Second)
				o.OlderThanS = &secs
			}
			return runGC(cmd, ios, o.GCParams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.olderThan, "older-than", "", "collect jobs that ended at least this long ago: 30d, 12h, 0 for every ended job (default: the job_retention_days setting, 30d)")
	f.BoolVar(&o.Apply, "apply", false, "remove; without it gc only says what it would remove")
	f.BoolVar(&o.Force, "force", false, "also delete branches whose work is on no other branch (never a worktree with uncommitted changes)")
	return cmd
}

func runGC(cmd *cobra.Command, ios *IO, p protocol.GCParams) error {
	res, err := ios.daemon().GC(cmd.Context(), p)
	if err != nil {
		return err
	}
	if err := ios.show(res, func() {
		printGC(ios, *res)
	}); err != nil {
		return err
	}
	if res.Failed > 0 {
		return withCode(ExitError, fmt.Errorf("%d removals failed; what failed is still there", res.Failed))
	}
	return nil
}

func printGC(ios *IO, res protocol.GCResult) {
	verb := func(action string) string {
		if !res.Applied {
			return action
		}
		switch action {
		case protocol.GCRemove:
			return "removed"
		case protocol.GCKeep:
			return "kept"
		case protocol.GCSkip:
			return "skipped"
		}
		return action
	}
	count := map[string]int{}
	for _, j := range res.Jobs {
		count[j.Action]++
		line := fmt.Sprintf("%s  %-11s %s", j.ID, j.State, verb(j.Action))
		if j.Reason != "" && len(j.Items) == 0 { // else its items say why
			line += ": " + j.Reason
		}
		ios.printf("%s\n", line)
		for _, it := range j.Items {
			what := it.Path
			if it.Branch != "" {
				what = it.Branch
			}
			size := ""
			if it.Path != "" {
				size = humanSize(it.Bytes)
			}
			ios.printf("%s\n", gcItemLine("    ", fmt.Sprintf(" %-11s %9s  %s", it.Kind, size, what), verb, it))
		}
	}
	for _, it := range res.Envs {
		ios.printf("%s\n", gcItemLine("env cache ", fmt.Sprintf(" %9s  %s", humanSize(it.Bytes), it.Path), verb, it))
	}
	for _, it := range res.Logs {
		ios.printf("%s\n", gcItemLine("old log   ", fmt.Sprintf(" %9s  %s", humanSize(it.Bytes), it.Path), verb, it))
	}
	age := humanAge(time.Duration(res.OlderThanS) * time.Second)
	jobs := func(n int) string {
		if n == 1 {
			return "1 job"
		}
		return fmt.Sprintf("%d jobs", n)
	}
	clean := fmt.Sprintf("%s ended earlier with nothing left", jobs(res.Clean))
	if res.Applied {
		ios.printf("freed %s from %s (ended over %s ago); kept %d, skipped %d; %s; records and journals stay\n",
			humanSize(res.FreedBytes), jobs(count[protocol.GCRemove]), age, count[protocol.GCKeep], count[protocol.GCSkip], clean)
		return
	}
	ios.printf("dry run: would free %s from %s (ended over %s ago); keep %d, skip %d; %s; hub gc --apply removes what says remove\n",
		humanSize(res.FreedBytes), jobs(count[protocol.GCRemove]), age, count[protocol.GCKeep], count[protocol.GCSkip], clean)
}

// gcItemLine is an item's line: lead, its action, what, then the error
// or the reason.
func gcItemLine(lead, what string, verb func(string) string, it protocol.GCItem) string {
	action := verb(it.Action)
	if it.Error != "" {
		action = "FAILED"
	}
	line := fmt.Sprintf("%s%-7s%s", lead, action, what)
	switch {
	case it.Error != "":
		line += ": " + it.Error
	case it.Reason != "":
		line += ": " + it.Reason
	}
	return line
}

// parseAge reads --older-than: whole days (30d) or a Go duration (12h, 90m, 0).
func parseAge(s string) (time.Duration, error) {
	d, err := money.ParseSpan(s)
	if err != nil {
		return 0, fmt.Errorf("--older-than %q: use whole days (30d) or a duration (12h, 90m); 0 means every ended job", s)
	}
	return d, nil
}

// humanAge is a duration in whole days when it is whole days.
func humanAge(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// humanSize is a byte count for people: 512 B, 1.5 KiB, 12 MiB.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 {
		return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
}
