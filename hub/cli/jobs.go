package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

type startOptions struct {
	protocol.StartParams
	maxUSD                                  float64
	timeout, ask, stall, setup, verifyLimit time.Duration
	files                                   []string
}

func newStartCmd(ios *IO) *cobra.Command {
	o := &startOptions{}
	cmd := &cobra.Command{
		Use:   "start --repo DIR --task TEXT [flags]",
		Short: "Start a job; prints its id at once",
		Args:  exactArgs(0, "no arguments (use --task)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("max-usd") {
				o.MaxUSD = &o.maxUSD
			}
			o.TimeoutS, o.AskTimeoutS, o.StallTimeoutS = seconds(o.timeout), seconds(o.ask), seconds(o.stall)
			o.SetupTimeoutS, o.VerifyTimeoutS = seconds(o.setup), seconds(o.verifyLimit)
			o.Files = o.files
			return runStart(cmd, ios, o.StartParams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "git checkout the job works on (default: the current directory's)")
	f.StringVar(&o.Cwd, "cwd", "", "directory a read job runs in when it has no repo")
	f.StringVar(&o.Task, "task", "", "what the worker should do")
	f.StringVar((*string)(&o.Kind), "kind", "", "write (default: a branch hub/<id>) or read (an answer, no branch)")
	f.StringVar(&o.Engine, "engine", "", "engine to run (default auto)")
	f.StringVar(&o.Exec, "exec", "", "shell command the exec engine runs as the worker")
	f.StringVar(&o.Verify, "verify", "", "shell command run on the head commit in a clean checkout")
	f.StringVar(&o.Base, "base", "", "revision to start from (default HEAD)")
	f.Float64Var(&o.maxUSD, "max-usd", 0, "budget reserved before work (default from config)")
	spanVar(f, &o.timeout, "timeout", 0, "hard run timeout, e.g. 30m (default 30m)")
	f.StringVar((*string)(&o.Isolation), "isolation", "", "worktree (default), sandbox, isolated or untrusted")
	f.StringVar(&o.DefinitionOfDone, "done", "", "definition of done")
	f.StringVar(&o.Model, "model", "", "model for engines that take one")
	f.StringVar(&o.Profile, "profile", "", "model profile")
	f.StringVar(&o.Effort, "effort", "", "effort hint for the engine")
	f.IntVar(&o.MaxTurns, "max-turns", 0, "turn limit for agent engines")
	spanVar(f, &o.ask, "ask-timeout", 0, "how long a question waits for a reply, e.g. 10m (default 10m)")
	spanVar(f, &o.stall, "stall-timeout", 0, "how long a worker may be silent before it counts as stalled (default 10m)")
	spanVar(f, &o.verifyLimit, "verify-timeout", 0, "how long verify may run (default 10m)")
	f.StringSliceVar(&o.files, "file", nil, "file the worker should look at first (repeatable)")
	f.StringVar(&o.Setup, "setup", "", "shell command run in the job's checkout after its dependencies, before the worker (default: .hub.json's)")
	f.StringVar(&o.Deps, "deps", "", "auto (default: from the lockfiles), off, or a command that installs the dependencies")
	spanVar(f, &o.setup, "setup-timeout", 0, "how long the install and the setup command may each take (default 15m)")
	return cmd
}

// absPaths makes repo and cwd absolute against the caller's directory.
func absPaths(p *protocol.StartParams) error {
	if p.Repo == "" && p.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		p.Repo = wd
	}
	for _, s := range []*string{&p.Repo, &p.Cwd} {
		if *s != "" && !filepath.IsAbs(*s) {
			a, err := filepath.Abs(*s)
			if err != nil {
				return err
			}
			*s = a
		}
	}
	return nil
}

func runStart(cmd *cobra.Command, ios *IO, p protocol.StartParams) error {
	if err := absPaths(&p); err != nil {
		return err
	}
	res, err := ios.daemon().JobStart(cmd.Context(), p)
	return answer(ios, res, err, func(res *protocol.StartResult) {
		ios.printf("%s\n", res.ID)
		where := res.Branch
		if where == "" {
			where = "no branch (read)"
		}
		fmt.Fprintf(ios.ErrOut, "%s %s · %s · %s · %s\n", res.ID, res.State, res.Engine, where, res.Isolation)
		for _, n := range res.Notes {
			fmt.Fprintf(ios.ErrOut, "note: %s\n", asFlags(cmd.Root(), n))
		}
	})
}

func newStartManyCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "start-many FILE",
		Short: "Start the jobs of a JSON file ({\"jobs\":[…]} or […]; - for stdin)",
		Args:  exactArgs(1, "a file of jobs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var b []byte
			var err error
			if args[0] == "-" {
				b, err = readAll(ios.In)
			} else {
				b, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			p, err := parseJobs(args[0], b)
			if err != nil {
				return err
			}
			for i := range p.Jobs {
				if err := absPaths(&p.Jobs[i]); err != nil {
					return err
				}
			}
			res, err := ios.daemon().StartMany(cmd.Context(), p)
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(res)
			}
			failed := 0
			for i, r := range res.Results {
				if r.Error != nil {
					failed++
					ios.printf("#%d refused: %s", i+1, r.Error.Message)
					if r.Error.Hint != "" {
						ios.printf(" (%s)", r.Error.Hint)
					}
					ios.printf("\n")
					continue
				}
				ios.printf("%s %s · %s\n", r.ID, r.State, r.Engine)
				for _, n := range r.Notes {
					fmt.Fprintf(ios.ErrOut, "note (%s): %s\n", r.ID, asFlags(cmd.Root(), n))
				}
			}
			if failed > 0 {
				return withCode(ExitError, fmt.Errorf("%d of %d jobs refused", failed, len(res.Results)))
			}
			return nil
		},
	}
}

type waitOptions struct {
	any     bool
	timeout time.Duration
	since   int64
}

func newWaitCmd(ios *IO) *cobra.Command {
	o := &waitOptions{}
	cmd := &cobra.Command{
		Use:   "wait ID...",
		Short: "Wait until the jobs end or ask a question",
		Args:  minArgs(1, "one or more job ids"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := protocol.WaitParams{IDs: args, Any: o.any, TimeoutS: o.timeout.Seconds(), Since: o.since}
			res, err := ios.daemon().JobWait(cmd.Context(), p)
			if err != nil {
				return err
			}
			if err := ios.show(res, func() {
				for _, st := range res.Jobs {
					ios.printf("%s\n", view.Line(st))
				}
				for _, id := range res.Unknown {
					ios.printf("%s unknown\n", id)
				}
				for _, st := range res.Jobs {
					if st.State == protocol.StateNeedsInput {
						fmt.Fprintf(ios.ErrOut, "hint: answer with `hub reply %s TEXT`, then wait again\n", st.ID)
					}
				}
			}); err != nil {
				return err
			}
			return waitExit(*res)
		},
	}
	cmd.Flags().BoolVar(&o.any, "any", false, "return when the first job is ready")
	spanVar(cmd.Flags(), &o.timeout, "timeout", 5*time.Minute, "give up after this long")
	cmd.Flags().Int64Var(&o.since, "since", 0, "cursor from an earlier wait: only newer questions count")
	return cmd
}

// waitExit is wait's exit code: 4 when it gave up first, 6 when a job
// asks a question (it goes nowhere until answered), 3 when one ended
// without succeeding, 0 when every job succeeded (or, with --any, the one
// that ended did).
func waitExit(res protocol.WaitResult) error {
	if !res.Done {
		return withCode(ExitPending, nil)
	}
	if len(res.Unknown) > 0 {
		return withCode(ExitNotFound, nil)
	}
	code := ExitOK
	for _, st := range res.Jobs {
		if c := stateExit(st.State); c == ExitNeedsInput || c == ExitJobFail && code != ExitNeedsInput {
			code = c
		}
	}
	if code == ExitOK {
		return nil
	}
	return withCode(code, nil)
}

// stateExit is the exit code a command that reports a job's outcome ends
// with: 0 succeeded, 3 ended otherwise, 6 waits for an answer, 4 not ended.
func stateExit(s protocol.State) int {
	switch {
	case s == protocol.StateSucceeded:
		return ExitOK
	case s.Terminal():
		return ExitJobFail
	case s == protocol.StateNeedsInput:
		return ExitNeedsInput
	}
	return ExitPending
}

func newStatusCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "status ID",
		Short: "Show a job in one line",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := ios.daemon().JobStatus(cmd.Context(), protocol.IDParams{ID: args[0]})
			return answer(ios, st, err, func(st *protocol.JobStatus) {
				ios.printf("%s\n", view.Line(*st))
				if st.Question != nil {
					ios.printf("question %s: %s\n", st.Question.ID, st.Question.Text)
				}
			})
		},
	}
}

func newResultCmd(ios *IO) *cobra.Command {
	var p protocol.ResultParams
	cmd := &cobra.Command{
		Use:   "result ID",
		Short: "Show a job's result: the summary, --full text or --evidence JSON",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.ID = args[0]
			res, err := ios.daemon().JobResult(cmd.Context(), p)
			if err != nil {
				return err
			}
			switch {
			case p.Evidence && res.Evidence == nil:
				code := stateExit(res.State)
				if code == ExitOK || code == ExitJobFail {
					code = ExitError
				}
				return withCode(code, fmt.Errorf("job %s has no evidence yet: it is %s", res.ID, res.State))
			case p.Evidence:
				if err := ios.printJSON(res.Evidence); err != nil {
					return err
				}
			case ios.JSON:
				if err := ios.printJSON(res); err != nil {
					return err
				}
			case p.Full:
				ios.printf("%s\n", strings.TrimRight(res.Full, "\n"))
			default:
				ios.printf("%s\n", res.Summary)
			}
			if c := stateExit(res.State); c != ExitOK {
				return withCode(c, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&p.Full, "full", false, "the full text")
	cmd.Flags().BoolVar(&p.Evidence, "evidence", false, "the evidence JSON")
	return cmd
}

func newReplyCmd(ios *IO) *cobra.Command {
	var qid string
	cmd := &cobra.Command{
		Use:   "reply ID MESSAGE",
		Short: "Answer a worker's pending question",
		Args:  exactArgs(2, "a job id and the answer"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().JobReply(cmd.Context(), protocol.ReplyParams{ID: args[0], QuestionID: qid, Text: args[1]})
			return answer(ios, res, err, func(res *protocol.ReplyResult) {
				ios.printf("answered %s of %s\n", res.QuestionID, res.ID)
			})
		},
	}
	cmd.Flags().StringVar(&qid, "question", "", "question id (default: the pending one)")
	return cmd
}

func newSteerCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "steer ID MESSAGE",
		Short: "Redirect a running worker",
		Args:  exactArgs(2, "a job id and the message"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().JobSteer(cmd.Context(), protocol.SteerParams{ID: args[0], Text: args[1]})
			return answer(ios, res, err, func(res *protocol.SteerResult) {
				ios.printf("queued for %s; it reaches the worker at its next progress report\n", res.ID)
			})
		},
	}
}

func newStopCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "stop ID",
		Short: "Stop a job; its work so far is committed",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := ios.daemon().JobStop(cmd.Context(), protocol.IDParams{ID: args[0]})
			return answer(ios, st, err, func(st *protocol.JobStatus) {
				ios.printf("%s\n", view.Line(*st))
			})
		},
	}
}

func newCleanupCmd(ios *IO) *cobra.Command {
	var p protocol.CleanupParams
	cmd := &cobra.Command{
		Use:   "cleanup ID",
		Short: "Remove an ended job's worktree (the branch stays unless --delete-branch)",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.ID = args[0]
			res, err := ios.daemon().JobCleanup(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.CleanupResult) {
				ios.printf("%s\n", cleanupLine(*res))
			})
		},
	}
	cmd.Flags().BoolVar(&p.DeleteBranch, "delete-branch", false, "also delete the branch hub/<id>")
	cmd.Flags().BoolVar(&p.Force, "force", false, "remove a worktree that is off its branch, and with --delete-branch delete work merged nowhere")
	return cmd
}

func newJobsCmd(ios *IO) *cobra.Command {
	var p protocol.ListParams
	var states []string
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs, newest first",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range states {
				if !slices.Contains(protocol.States, protocol.State(s)) {
					return &usageError{fmt.Errorf("--state %q is not a state: use %s", s, strings.Join(strs(protocol.States), ", "))}
				}
				p.States = append(p.States, protocol.State(s))
			}
			res, err := ios.daemon().JobList(cmd.Context(), p)
			return answer(ios, res, err, func(res *protocol.ListResult) {
				for _, st := range res.Jobs {
					ios.printf("%s  %s\n", view.Line(st), st.Task)
				}
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only jobs in these states")
	cmd.Flags().IntVar(&p.Limit, "limit", 50, "at most this many")
	return cmd
}

func newEnginesCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "engines",
		Short: "List engines, what they can enforce, and this month's spend",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := ios.daemon().EngineList(cmd.Context(), protocol.Empty{})
			return answer(ios, res, err, func(res *protocol.EnginesResult) {
				for _, e := range res.Engines {
					avail := "available"
					if e.Version != "" {
						avail += " (" + e.Version + ")"
					}
					if !e.Available {
						avail = "unavailable: " + e.Reason
					}
					ios.printf("%-10s %s · isolation %s · read-only %v · pays %s\n", e.Name, avail,
						protocol.JoinIsolation(e.Capabilities.Isolation, ","), e.Capabilities.ReadOnly, e.Capabilities.Pays)
					if e.Capacity != "" {
						ios.printf("%-10s capacity: %s\n", "", e.Capacity)
					}
					for _, level := range protocol.IsolationLevels {
						if why := e.Capabilities.IsolationWhyNot[level]; why != "" {
							ios.printf("%-10s not %s: %s\n", "", level, why)
						}
					}
				}
				for i, l := range res.Limits {
					head := ""
					if i == 0 {
						head = "limits"
					}
					ios.printf("%-10s %s\n", head, l)
				}
				ios.printf("%s: $%.2f spent, $%.2f reserved of $%.2f · %d/%d running · %d queued\n",
					res.Month, res.SpentUSD, res.ReservedUSD, res.MonthlyCapUSD, res.Running, res.MaxRunning, res.Queued)
			})
		},
	}
}

func newVersionCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hub's version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ios.JSON {
				return ios.printJSON(map[string]string{"version": Version, "protocol": protocol.Version})
			}
			ios.printf("hub %s (protocol %s)\n", Version, protocol.Version)
			return nil
		},
	}
}

// cleanupLine says what cleanup did, as a sentence.
func cleanupLine(res protocol.CleanupResult) string {
	var did []string
	if res.WorktreeRemoved {
		did = append(did, "removed its worktree")
	} else {
		did = append(did, "it had no worktree left")
	}
	switch {
	case res.BranchDeleted:
		did = append(did, "deleted branch "+res.Branch)
	case res.Branch != "":
		did = append(did, "kept branch "+res.Branch+" (`hub cleanup "+res.ID+" --delete-branch` deletes it)")
	}
	return res.ID + ": " + strings.Join(did, "; ")
}
