package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/demo"
	"github.com/hub-agents/hub/hub/engine/builtin"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

var errDaemonGone = errors.New("the hub daemon went away; run the command again (it restarts the daemon)")

func newDemoCmd(ios *IO) *cobra.Command {
	var dir, profileName string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run one delegation end to end on a sample repo (no key, no network)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), ios, dir, profileName)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "where to make the sample repo (default: a new temp dir)")
	cmd.Flags().StringVar(&profileName, "profile", profile.Demo, "the model profile the worker uses (default: the embedded scripted model; no key, no network)")
	return cmd
}

func runDemo(ctx context.Context, ios *IO, dir, profileName string) error {
	// With --json, what a person reads goes to stderr and stdout has one
	// JSON object: the sample repo and the job's result.
	text := ios
	if ios.JSON {
		c := *ios
		c.Out, c.JSON = ios.ErrOut, false
		text = &c
	}
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hub-demo-"); err != nil {
			return err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return &usageError{fmt.Errorf("%s is already a git repo; pass an empty --dir", dir)}
	}
	for name, body := range demo.Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			return err
		}
	}
	if _, err := gitx.Git(ctx, dir, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	if _, _, err := gitx.CommitAll(ctx, dir, "A greeting with a typo", gitx.Identity{Name: "demo", Email: "demo@localhost"}); err != nil {
		return err
	}
	text.printf("sample repo: %s (greet.sh prints \"Helo\"; test.sh wants \"Hello\")\n", dir)

	// Three jobs at once: the built-in worker fixes the greeting; two plain
	// commands beside it, one of which changes the same line.
	jobs := []protocol.StartParams{{Task: demo.Task, Repo: dir, Engine: builtin.Name, Profile: profileName,
		Verify: demo.Verify, DefinitionOfDone: demo.DefinitionOfDone}}
	for _, peer := range demo.Peers {
		jobs = append(jobs, protocol.StartParams{Task: peer.Task, Repo: dir, Engine: "exec", Exec: peer.Exec, Verify: peer.Verify})
	}
	many, err := ios.daemon().StartMany(ctx, protocol.StartManyParams{Jobs: jobs})
	if err != nil {
		return err
	}
	var ids []string
	for i, it := range many.Results {
		if it.Error != nil {
			return fmt.Errorf("the demo could not start %q: %s", jobs[i].Task, it.Error.Message)
		}
		ids = append(ids, it.ID)
		text.printf("started %s on %s (engine %s): %s\n", it.ID, it.Branch, it.Engine, jobs[i].Task)
	}
	fix := ids[0]
	t0 := time.Now()
	if err := watch(ctx, text, ids); err != nil {
		return err
	}
	res, err := ios.daemon().JobResult(ctx, protocol.ResultParams{ID: fix})
	if err != nil {
		return err
	}
	text.printf("\n%s\n\n", res.Summary)

	// What hub foresaw: the two jobs that changed the same line.
	conflicts := demoForecast(ctx, ios, ids)
	for _, line := range conflicts {
		text.printf("forecast: %s\n", line)
	}
	review, err := ios.daemon().JobReview(ctx, protocol.ReviewParams{IDs: ids})
	if err != nil {
		return err
	}
	text.printf("\nreview:\n  %s\n\n", strings.ReplaceAll(review.Text, "\n", "\n  "))
	// Land them on main in the order given: each merged onto main's tip and
	// checked there before main moves; the conflicting one stops alone.
	landed, err := ios.daemon().JobLand(ctx, protocol.LandParams{IDs: ids, Into: "main"})
	if err != nil {
		return err
	}
	text.printf("land:\n")
	for _, it := range landed.Jobs {
		text.printf("  %s\n", view.LandItemLine(it))
	}
	text.printf("  %s\n\n", landed.Line)
	text.printf("three jobs delegated, checked and landed in %s. Look at the work:\n  git -C %s log --oneline --graph main\n  hub result %s --evidence\n",
		time.Since(t0).Round(time.Millisecond), dir, fix)
	if ios.JSON {
		if err := ios.printJSON(demoResult{Repo: dir, Result: *res, Review: *review, Land: *landed}); err != nil {
			return err
		}
	}
	if res.State != protocol.StateSucceeded {
		return withCode(ExitJobFail, fmt.Errorf("the demo job ended %s", res.State))
	}
	return nil
}

// demoForecast waits (a few seconds at most) until hub has forecast every
// demo job and each conflict is seen from both sides, and returns the
// conflict lines, each pair once.
func demoForecast(ctx context.Context, ios *IO, ids []string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var lines []string
		pairs := map[[2]string]int{}
		all := true
		for _, id := range ids {
			st, err := ios.daemon().JobStatus(ctx, protocol.IDParams{ID: id})
			if err != nil || st.Forecast == nil {
				all = false
				continue
			}
			for _, c := range st.Forecast.Conflicts {
				key := [2]string{min(id, c.With), max(id, c.With)}
				if pairs[key]++; pairs[key] == 1 {
					lines = append(lines, id+" "+c.Line)
				}
			}
		}
		mutual := len(pairs) > 0
		for _, n := range pairs {
			mutual = mutual && n == 2
		}
		if (all && mutual) || time.Now().After(deadline) || ctx.Err() != nil {
			return lines
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// demoResult is what `hub demo --json` prints.
type demoResult struct {
	Repo   string                `json:"repo"`   // the sample repository
	Result protocol.ResultResult `json:"result"` // the built-in worker's job's result, as `hub result --json` gives it
	Review protocol.ReviewResult `json:"review"` // the three jobs' review packet
	Land   protocol.LandResult   `json:"land"`   // what landing them did
}
