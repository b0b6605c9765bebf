// Package cli is hub's command line: cobra commands whose output goes
// through one IO value (text for people, --json for machines), whose errors
// go to stderr with a hint, and whose exit codes are mapped in one place. It
// holds no business logic: it calls the daemon, and prints what package view
// renders.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// Version is hub's version, set at build time with -ldflags "-X ...cli.Version=...".
var Version = "0.1.0-dev"

// Exit codes, documented in docs/cli.md.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // the command failed (refused start, daemon error, …)
	ExitUsage    = 2 // bad flags or arguments
	ExitJobFail  = 3 // a job ended without succeeding
	ExitTimeout  = 4 // wait returned before the jobs ended; ask got no answer in time
	ExitNotFound = 5 // unknown job id
)

// exitError carries an exit code up to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// IO is where commands read and write, and how they reach the daemon.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	JSON   bool
	// Daemon connects to the daemon; h receives its notifications. Nil is
	// HUB_HOME's daemon, started when none answers. A test passes one that
	// reaches a daemon of its own (the in-process world), so a command's
	// logic runs without the hub binary.
	Daemon func(ctx context.Context, h rpc.Handler) (Daemon, error)
}

// Daemon is a connection to the daemon, as the commands use it.
type Daemon interface {
	protocol.Caller
	Close() error
	DisconnectNotify() <-chan struct{}
}

// connect reaches the daemon through ios.Daemon.
func (s *IO) connect(ctx context.Context, h rpc.Handler) (Daemon, error) {
	if s.Daemon != nil {
		return s.Daemon(ctx, h)
	}
	c, err := connect(ctx, h)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// call connects, makes one call and closes.
func (s *IO) call(ctx context.Context, method string, params, result any) error {
	c, err := s.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, result)
}

// printJSON writes v as indented JSON.
func (s *IO) printJSON(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (s *IO) printf(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }

// Main runs the CLI and returns the exit code.
func Main(args []string) int {
	ios := &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, ios, args)
}

// Run runs one command line with ios and returns its exit code.
func Run(ctx context.Context, ios *IO, args []string) int {
	root := NewRoot(ios)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	return report(ios, err)
}

// report prints err with its hint and maps it to an exit code.
func report(ios *IO, err error) int {
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
		if err == nil {
			return code
		}
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		if je.Code == protocol.CodeNotFound {
			code = ExitNotFound
		}
		fmt.Fprintf(ios.ErrOut, "hub: %s\n", je.Message)
		if h := rpc.HintOf(err); h != "" {
			fmt.Fprintf(ios.ErrOut, "hint: %s\n", h)
		}
		return code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		code = ExitUsage
	}
	fmt.Fprintf(ios.ErrOut, "hub: %v\n", err)
	// An error that knows what to do about it says so.
	if h := rpc.HintOf(err); h != "" {
		fmt.Fprintf(ios.ErrOut, "hint: %s\n", h)
	}
	return code
}

type usageError struct{ error }

// NewRoot builds the command tree.
func NewRoot(ios *IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "hub",
		Short:         "hub delegates bounded coding tasks to worker agents, each in its own git worktree",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%v (see hub %s --help)", err, c.Name())}
	})
	root.PersistentFlags().BoolVar(&ios.JSON, "json", false, "print JSON for machines")
	root.AddCommand(
		newStartCmd(ios), newStartManyCmd(ios), newWaitCmd(ios), newStatusCmd(ios), newResultCmd(ios),
		newReplyCmd(ios), newSteerCmd(ios), newStopCmd(ios), newCleanupCmd(ios), newJobsCmd(ios),
		newEnginesCmd(ios), newRouteCmd(ios), newWatchCmd(ios), newEventsCmd(ios), newServeCmd(ios), newMCPCmd(ios), newShimCmd(ios), newSandboxExecCmd(ios),
		newAskCmd(ios), newProgressCmd(ios), newStatuslineCmd(ios), newDemoCmd(ios), newVersionCmd(ios), newShutdownCmd(ios),
		newProfileCmd(ios), newProviderCmd(ios), newWorkerMCPCmd(ios), newInstallCmd(ios), newUninstallCmd(ios), newDoctorCmd(ios),
	)
	root.AddCommand(newLedgerCmd(ios))
	root.AddCommand(newROICmd(ios))
	root.AddCommand(newDUCmd(ios), newGCCmd(ios))
	return root
}

// connect reaches the daemon, starting it when none answers.
func connect(ctx context.Context, h rpc.Handler) (*client.Client, error) {
	paths, err := config.Resolve()
	if err != nil {
		return nil, err
	}
	// A daemon this command starts takes its environment for good: a bad
	// setting there is refused here, naming the variable, before anything starts.
	mine, err := config.CheckEnv(config.FromCommand)
	if err != nil {
		return nil, err
	}
	c, err := client.Connect(ctx, paths, client.Options{AutoStart: true, ClientName: "hub-cli", Handler: h})
	if err != nil {
		return nil, err
	}
	if c.Info.ServerVersion != Version && !warnedVersion {
		warnedVersion = true
		fmt.Fprintf(os.Stderr, "hub: the daemon runs version %s and this is %s; `hub shutdown` lets the next command start a current one (jobs keep running)\n",
			c.Info.ServerVersion, Version)
	}
	if d := settingsDiffer(mine, c.Info.Settings); d != "" && !warnedSettings {
		warnedSettings = true
		fmt.Fprintf(os.Stderr, "hub: the daemon (pid %d) keeps the settings of the environment it was started with, and %s; "+
			"`hub shutdown` lets the next command start one with yours (jobs keep running), or put them in %s, which is read on every request\n",
			c.Info.PID, d, filepath.Join(config.ConfigDir(), "config.json"))
	}
	return c, nil
}

var warnedVersion, warnedSettings bool

// settingsDiffer says how this command's HUB_* settings differ from the
// daemon's, or "" when they agree.
func settingsDiffer(mine, daemon map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if daemon[k] != mine[k] {
			was := "unset"
			if v, ok := daemon[k]; ok {
				was = strconv.Quote(v)
			}
			diffs = append(diffs, fmt.Sprintf("%s is %q here but %s there", k, mine[k], was))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(daemon)) {
		if _, ok := mine[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is unset here but %q there", k, daemon[k]))
		}
	}
	return strings.Join(diffs, ", ")
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("%s needs %s (see hub %s --help)", cmd.Name(), what, cmd.Name())}
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return &usageError{fmt.Errorf("%s needs %s (see hub %s --help)", cmd.Name(), what, cmd.Name())}
		}
		return nil
	}
}
