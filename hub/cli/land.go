package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func newLandCmd(ios *IO) *cobra.Command {
	var p protocol.LandParams
	var squash, rebase bool
	var timeout time.Duration
	var runID string
	cmd := &cobra.Command{
		Use:   "land ID... [--into BRANCH] | land --run RUN",
		Short: "Land ended jobs on a branch, each checked on the merged commit before the branch moves",
		Long: `Land ended jobs on a branch, each checked on the merged commit before the branch moves.

A landing runs as work of the daemon's with its own record: interrupting this
command does not stop it. --detach starts it and prints its run id at once;
--run RUN waits for that run and prints its outcome.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runID != "" {
				if len(args) > 0 {
					return &usageError{fmt.Errorf("--run waits for a landing already started: pass no job ids with it")}
				}
				return landWait(cmd, ios, runID)
			}
			if len(args) == 0 {
				return needs(cmd, "one or more job ids")
			}
			p.IDs = args
			switch {
			case squash && rebase:
				return &usageError{fmt.Errorf("pass --squash or --rebase, not both")}
			case squash:
				p.Mode = protocol.LandSquash
			case rebase:
				p.Mode = protocol.LandRebase
			}
			p.VerifyTimeoutS = seconds(timeout)
			res, err := ios.daemon().JobLand(cmd.Context(), p)
			if err != nil {
				return err
			}
			if p.Detach {
				if ios.JSON {
					return ios.printJSON(res)
				}
				ios.printf("%s\n", res.Run)
				return nil
			}
			return printLand(ios, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Into, "into", "", "the branch to land on (default: the branch the jobs started from)")
	f.StringVar(&p.Order, "order", "", "given (default: as listed) or auto (fewest predicted conflicts first)")
	f.BoolVar(&squash, "squash", false, "one commit per job on the branch instead of a merge commit")
	f.BoolVar(&rebase, "rebase", false, "each job's commits replayed on the branch instead of a merge commit")
	f.StringVar(&p.Verify, "verify", "", "shell command run on each merged commit after the job's own verify")
	spanVar(f, &timeout, "verify-timeout", 0, "how long each check may run (default: the job's verify timeout, else 10m)")
	f.BoolVar(&p.Resolve, "resolve", false, "start a follow-up job to resolve each conflict")
	f.BoolVar(&p.DryRun, "dry-run", false, "check what would merge, in which order; move nothing and run no check")
	f.BoolVar(&p.Detach, "detach", false, "start the landing and print its run id at once (hub land --run RUN waits for it)")
	f.StringVar(&runID, "run", "", "wait for landing run RUN (from --detach) and print its outcome")
	cmd.MarkFlagsMutuallyExclusive("detach", "run")
	cmd.MarkFlagsMutuallyExclusive("dry-run", "run")
	return cmd
}

// landWait waits for landing run id to end (again and again: each wait
// is bounded) and prints its outcome as land does.
func landWait(cmd *cobra.Command, ios *IO, id string) error {
	for {
		rec, err := ios.daemon().LandWait(cmd.Context(), protocol.LandWaitParams{Run: id})
		if err != nil {
			return err
		}
		if rec.State == protocol.LandRunRunning {
			continue
		}
		if ios.JSON {
			if err := ios.printJSON(rec); err != nil {
				return err
			}
			if rec.Result != nil {
				return landExit(*rec.Result)
			}
			return withCode(ExitJobFail, nil)
		}
		if rec.Result != nil {
			if rec.Error != "" {
				ios.printf("landing %s %s\n", rec.ID, rec.Error)
			}
			return printLand(ios, rec.Result)
		}
		return withCode(ExitJobFail, fmt.Errorf("landing %s %s: %s", rec.ID, rec.State, rec.Error))
	}
}

// printLand prints a landing's outcome, a line per job then the whole, and
// exits as landExit says.
func printLand(ios *IO, res *protocol.LandResult) error {
	if err := ios.show(res, func() {
		for _, it := range res.Jobs {
			ios.printf("%s\n", view.LandItemLine(it))
		}
		ios.printf("%s\n", res.Line)
	}); err != nil {
		return err
	}
	return landExit(*res)
}

// landExit is land's exit code: 0 when every job landed, was already on
// the branch or (dry run) would land; 3 when one did not (a conflict, a
// red check, a job skipped after a stop), as a job that ends without
// succeeding is for wait.
func landExit(res protocol.LandResult) error {
	for _, it := range res.Jobs {
		switch it.Outcome {
		case protocol.LandLanded, protocol.LandAlready, protocol.LandWould:
		default:
			return withCode(ExitJobFail, nil)
		}
	}
	return nil
}

func newReviewCmd(ios *IO) *cobra.Command {
	var p protocol.ReviewParams
	cmd := &cobra.Command{
		Use:   "review [ID...] [--all-ended]",
		Short: "Show a batch's review packet: a line per job, with conflicts, risks and what to do next",
		RunE: func(cmd *cobra.Command, args []string) error {
			p.IDs = args
			if len(args) == 0 && !p.AllEnded {
				return needs(cmd, "job ids or --all-ended")
			}
			if p.Repo != "" {
				top, err := repoTop(p.Repo)
				if err != nil {
					return &usageError{err}
				}
				p.Repo = top
			}
			res, err := ios.daemon().JobReview(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.ReviewResult) {
				ios.printf("%s\n", res.Text)
			})
		},
	}
	cmd.Flags().BoolVar(&p.AllEnded, "all-ended", false, "every ended job with work on its branch that has not landed")
	cmd.Flags().StringVar(&p.Repo, "repo", "", "with --all-ended: only the jobs of this repository")
	return cmd
}

// repoTop is the top of the checkout dir is in, as hub records a job's
// repository (absolute, symlinks resolved), so that --repo . from a
// subfolder names the same jobs.
func repoTop(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	r, err := gitx.Open(abs)
	if err != nil {
		return "", fmt.Errorf("--repo %s: %w", dir, err)
	}
	return r.Top, nil
}
