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
	cmd := &cobra.Command{
		Use:   "land ID... [--into BRANCH]",
		Short: "Land ended jobs on a branch, each checked on the merged commit before the branch moves",
		Args:  minArgs(1, "one or more job ids"),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			if ios.JSON {
				if err := ios.printJSON(res); err != nil {
					return err
				}
			} else {
				for _, it := range res.Jobs {
					ios.printf("%s\n", view.LandItemLine(it))
				}
				ios.printf("%s\n", res.Line)
			}
			return landExit(*res)
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
	return cmd
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
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(res)
			}
			ios.printf("%s\n", res.Text)
			return nil
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
