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
	"regexp"
	"runtime/debug"
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

// Version is hub's version, one for every way it is built: the module
// version `go install …@vX` records, or the one `go build` (and make build,
// which calls it) derives from the checkout's commit and tag — v0.0.0-
// <time>-<commit>, +dirty with uncommitted changes. A build that records
// none (a test binary) is "devel". A release may still set it with
// -ldflags "-X …cli.Version=…".
var Version = buildVersion()

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "devel"
}

// Exit codes, documented in docs/cli.md.
const (
	ExitOK         = 0 // success
	ExitError      = 1 // the command failed (refused start, daemon error, …)
	ExitUsage      = 2 // bad flags, arguments or parameters (an empty task, an unknown engine)
	ExitJobFail    = 3 // a job ended without succeeding
	ExitPending    = 4 // a job has not ended: wait timed out, result of a running job; ask got no answer in time
	ExitNotFound   = 5 // unknown job id
	ExitNeedsInput = 6 // a job waits for an answer (wait, result): hub reply, then wait again
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

// daemon is the daemon's typed client whose every call connects, makes the
// call and closes (call).
func (s *IO) daemon() protocol.DaemonClient { return protocol.DaemonClient{C: callFunc(s.call)} }

// callFunc makes a call: a function as a protocol.Caller.
type callFunc func(ctx context.Context, method string, params, result any) error

func (f callFunc) Call(ctx context.Context, method string, params, result any) error {
	return f(ctx, method, params, result)
}

// printJSON writes v as indented JSON.
func (s *IO) printJSON(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (s *IO) printf(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }

// answer shows what a daemon call answered: its error as it is; with
// --json the result; else the result as text prints it.
func answer[T any](ios *IO, res *T, err error, text func(*T)) error {
	if err != nil {
		return err
	}
	return ios.show(res, func() { text(res) })
}

// show prints v as JSON with --json, else as text prints it.
func (s *IO) show(v any, text func()) error {
	if s.JSON {
		return s.printJSON(v)
	}
	text()
	return nil
}

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
	return report(root, ios, err)
}

// report prints err with its hint, in the shell's words, and maps it to an
// exit code.
func report(root *cobra.Command, ios *IO, err error) int {
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
		if err == nil {
			return code
		}
	}
	msg, hint := err.Error(), rpc.HintOf(err)
	var je *jsonrpc2.Error
	var ue *usageError
	switch {
	case errors.As(err, &je):
		msg = je.Message
		switch je.Code {
		case protocol.CodeNotFound:
			code = ExitNotFound
			if strings.HasPrefix(msg, "unknown job id") {
				hint = "list jobs with `hub jobs` and use one of their ids"
			}
		case protocol.CodeInvalidParams:
			code = ExitUsage
		}
	case errors.As(err, &ue):
		code = ExitUsage
	}
	fmt.Fprintf(ios.ErrOut, "hub: %s\n", asFlags(root, msg))
	if hint != "" {
		fmt.Fprintf(ios.ErrOut, "hint: %s\n", asFlags(root, hint))
	}
	return code
}

// fieldName is a request field as a message or hint names it: `max_usd`.
var fieldName = regexp.MustCompile("`([a-z][a-z_]*)`")

// asFlags says a request field a message names the way a shell user gives
// it: `exec` is `--exec`, `max_usd` is `--max-usd` — where a command has that
// flag.
func asFlags(root *cobra.Command, s string) string {
	return fieldName.ReplaceAllStringFunc(s, func(m string) string {
		if f := flagOf(m[1 : len(m)-1]); hasFlag(root, f) {
			return "`--" + f + "`"
		}
		return m
	})
}

// flagOf is the flag that sets a request field: its name with dashes, a
// seconds suffix dropped (timeout_s is --timeout, which takes a duration),
// but for the few named for the shell.
func flagOf(field string) string {
	switch field {
	case "definition_of_done":
		return "done"
	case "files":
		return "file"
	case "question_id":
		return "question"
	}
	return strings.ReplaceAll(strings.TrimSuffix(field, "_s"), "_", "-")
}

// hasFlag reports whether any command of the tree has flag name.
func hasFlag(c *cobra.Command, name string) bool {
	if c.Flags().Lookup(name) != nil {
		return true
	}
	for _, sub := range c.Commands() {
		if hasFlag(sub, name) {
			return true
		}
	}
	return false
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
		return &usageError{fmt.Errorf("%v (see %s --help)", err, c.CommandPath())}
	})
	root.PersistentFlags().BoolVar(&ios.JSON, "json", false, "print JSON for machines")
	var level string
	root.PersistentFlags().StringVar(&level, "log-level", "", "debug, info, warn or error (default: HUB_LOG_LEVEL, else info); a daemon this command starts keeps it")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return setLogLevel(level) }
	root.Version = Version
	root.SetVersionTemplate("hub {{.Version}} (protocol " + protocol.Version + ")\n")
	groups := []struct {
		id, title string
		cmds      []*cobra.Command
	}{
		{"jobs", "Jobs:", []*cobra.Command{newStartCmd(ios), newStartManyCmd(ios), newWaitCmd(ios), newStatusCmd(ios), newResultCmd(ios), newReviewCmd(ios), newLandCmd(ios),
			newReplyCmd(ios), newSteerCmd(ios), newStopCmd(ios), newStepCmd(ios), newCleanupCmd(ios), newJobsCmd(ios), newWatchCmd(ios), newEventsCmd(ios), newTraceCmd(ios)}},
		{"money", "Engines, routing and money:", []*cobra.Command{newEnginesCmd(ios), newRouteCmd(ios), newLedgerCmd(ios), newROICmd(ios)}},
		{"setup", "Setting up:", []*cobra.Command{newDemoCmd(ios), newProfileCmd(ios), newProviderCmd(ios),
			newInstallCmd(ios), newUninstallCmd(ios), newDoctorCmd(ios)}},
		{"hub", "The daemon and its files:", []*cobra.Command{newServeCmd(ios), newShutdownCmd(ios), newMCPCmd(ios), newStatuslineCmd(ios),
			newDUCmd(ios), newGCCmd(ios), newVersionCmd(ios)}},
		{"worker", "Inside a job (for its worker):", []*cobra.Command{newAskCmd(ios), newProgressCmd(ios),
			newShimCmd(ios), newSandboxExecCmd(ios), newWorkerMCPCmd(ios)}},
	}
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	root.SetHelpCommandGroupID("hub")
	root.SetCompletionCommandGroupID("setup")
	complete(root)
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
			return needs(cmd, what)
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return needs(cmd, what)
		}
		return nil
	}
}

// needs is the usage error of a command given the wrong arguments: what it
// needs, and where its help is.
func needs(cmd *cobra.Command, what string) error {
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	return &usageError{fmt.Errorf("%s needs %s (see %s --help)", name, what, cmd.CommandPath())}
}
