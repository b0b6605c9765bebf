package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/sandbox"
)

// newSandboxExecCmd is the sandbox's helper: hub re-executes itself as
// `hub sandbox-exec PLAN -- COMMAND...` to put the process in its job's
// limits (cgroups, rlimits) and restrict it (Landlock: the file system, or
// only the isolated job's TCP ports when COMMAND is bubblewrap), then run
// the command in its place.
func newSandboxExecCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:                "sandbox-exec PLAN -- COMMAND [ARG...]",
		Short:              "Join a job's limits and restrict this process, then run a command (started by hub)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 3 || args[1] != "--" {
				return &usageError{errSandboxExecUsage}
			}
			return sandbox.Exec(args[0], args[2:])
		},
	}
}

var errSandboxExecUsage = errors.New("usage: hub sandbox-exec PLAN -- COMMAND [ARG...] (hub runs this itself)")
