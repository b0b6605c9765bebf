package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func newStepCmd(ios *IO) *cobra.Command {
	var (
		p       protocol.StepParams
		maxUSD  float64
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "step CLAIM",
		Short: "An account of a step you did, from the repository's state, checked against your claim",
		Long: `step has a cheap model narrate a step of work from the repository as it is — the
files and commits since --since (default HEAD: the uncommitted work), the diff, and
the outcome of --check run on the work tree in a checkout of hub's — and says where
CLAIM and the state disagree. hub's own check outranks the model. The narration is
a read job of its own, booked in the ledger (at most $0.05 unless --max-usd).

Exit 3 when the claim and the state disagree or the narration failed, 4 when
--timeout came first (hub result ID has the account later).`,
		Args: exactArgs(1, "the claim: what the step did"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Claim = args[0]
			if cmd.Flags().Changed("max-usd") {
				p.MaxUSD = &maxUSD
			}
			p.TimeoutS = int(timeout.Seconds())
			if p.Repo == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				p.Repo = wd
			}
			if abs, err := filepath.Abs(p.Repo); err == nil {
				p.Repo = abs
			}
			res, err := ios.daemon().Step(cmd.Context(), p)
			if err != nil {
				return err
			}
			if err := ios.show(res, func() {
				ios.printf("%s\n(job %s, %s)\n", strings.TrimRight(res.Text, "\n"), res.ID, view.Cost(res.Cost.USD, res.Cost.Known))
			}); err != nil {
				return err
			}
			switch {
			case !res.State.Terminal():
				return withCode(ExitPending, errors.New("the narration has not ended yet: hub result "+res.ID+" has it later"))
			case res.State != protocol.StateSucceeded:
				return withCode(ExitJobFail, errors.New("the step could not be narrated"))
			case res.Disagree:
				return withCode(ExitJobFail, errors.New("the claim and the state disagree"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Title, "title", "", "the step in a few words (default: the claim's first sentence)")
	f.StringVar(&p.Repo, "repo", "", "the repository (default: the current directory)")
	f.StringVar(&p.Since, "since", "", "the commit the step started from (default HEAD: the uncommitted work only)")
	f.StringVar(&p.Check, "check", "", "a command hub runs on the work tree as it is, e.g. the tests")
	f.StringVar(&p.Profile, "profile", "", "the model profile that narrates (default: the cheapest priced one with its key)")
	f.Float64Var(&maxUSD, "max-usd", 0, "the most the narration may cost (default 0.05)")
	spanVar(f, &timeout, "timeout", 0, "how long to wait for the account (default 10m)")
	return cmd
}
