package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/demo"
	"github.com/hub-agents/hub/hub/engine/builtin"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
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

	p := protocol.StartParams{Task: demo.Task, Repo: dir, Engine: builtin.Name, Profile: profileName,
		Verify: demo.Verify, DefinitionOfDone: demo.DefinitionOfDone}
	var started protocol.StartResult
	if err := ios.call(ctx, protocol.MethodJobStart, p, &started); err != nil {
		return err
	}
	text.printf("started %s on branch %s (engine %s, profile %s)\n", started.ID, started.Branch, started.Engine, profileName)
	t0 := time.Now()
	if err := watch(ctx, text, []string{started.ID}); err != nil {
		return err
	}
	var res protocol.ResultResult
	if err := ios.call(ctx, protocol.MethodJobResult, protocol.ResultParams{ID: started.ID}, &res); err != nil {
		return err
	}
	text.printf("\n%s\n\n", res.Summary)
	text.printf("delegated, verified and committed in %s. Look at the work:\n  git -C %s log --oneline main..%s\n  hub result %s --evidence\n",
		time.Since(t0).Round(time.Millisecond), dir, started.Branch, started.ID)
	if ios.JSON {
		if err := ios.printJSON(demoResult{Repo: dir, Result: res}); err != nil {
			return err
		}
	}
	if res.State != protocol.StateSucceeded {
		return withCode(ExitJobFail, fmt.Errorf("the demo job ended %s", res.State))
	}
	return nil
}

// demoResult is what `hub demo --json` prints.
type demoResult struct {
	Repo   string                `json:"repo"`   // the sample repository
	Result protocol.ResultResult `json:"result"` // the job's result, as `hub result --json` gives it
}
