package cli

import (
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
)

func newRouteCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "route",
		Short: "How engine auto picks an engine: explain a decision, calibrate from history",
	}
	cmd.AddCommand(newRouteExplainCmd(ios), newRouteCalibrateCmd(ios))
	return cmd
}

func newRouteExplainCmd(ios *IO) *cobra.Command {
	o := &startOptions{}
	cmd := &cobra.Command{
		Use:   "explain [--task TEXT] [--kind write|read] [--isolation LEVEL] [--max-usd N] [flags]",
		Short: "Show which engine a start would get, every engine's score broken into terms, and why the others were rejected",
		Args:  exactArgs(0, "no arguments (use the flags)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("max-usd") {
				o.MaxUSD = &o.maxUSD
			}
			p := o.StartParams
			if p.Repo == "" && p.Cwd == "" {
				// A job with neither is taken to have a repo; no need to be in one.
				p.Repo = "."
			}
			if err := absPaths(&p); err != nil {
				return err
			}
			res, err := ios.daemon().RouteExplain(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.RouteExplainResult) {
				ios.printf("%s", res.Text)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "the task (the router does not read it yet; accepted so a start command line can be reused)")
	f.StringVar((*string)(&o.Kind), "kind", "", "write (default) or read")
	f.StringVar((*string)(&o.Isolation), "isolation", "", "worktree (default), sandbox, isolated or untrusted")
	f.Float64Var(&o.maxUSD, "max-usd", 0, "budget the job would reserve (default from config)")
	f.StringVar(&o.Engine, "engine", "", "explain a named engine instead of auto")
	f.StringVar(&o.Effort, "effort", "", "effort hint: low, medium or high")
	f.StringVar(&o.Profile, "profile", "", "model profile")
	f.StringVar(&o.Model, "model", "", "model for engines that take one")
	f.StringVar(&o.Exec, "exec", "", "shell command, for the exec engine")
	f.StringVar(&o.Repo, "repo", "", "git checkout the job would work on")
	f.StringVar(&o.Cwd, "cwd", "", "directory a read job without a repo would run in (needs a read-only engine)")
	return cmd
}

func newRouteCalibrateCmd(ios *IO) *cobra.Command {
	var p protocol.RouteCalibrateParams
	cmd := &cobra.Command{
		Use:   "calibrate [--since-days N] [--dry-run]",
		Short: "Fit success, time and cost per engine and job kind from hub's history into routing.json, and show what changed",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().RouteCalibrate(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.RouteCalibrateResult) {
				ios.printf("%s", res.Text)
			})
		},
	}
	cmd.Flags().IntVar(&p.SinceDays, "since-days", 0, "history window in days (default 90)")
	cmd.Flags().BoolVar(&p.DryRun, "dry-run", false, "show the changes without writing routing.json")
	return cmd
}
