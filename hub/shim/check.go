package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// Checker runs commands on commits of one job's repository exactly as the
// job's verify does: a clean checkout of its own with the job's
// .worktreeinclude files, dependencies and setup, behind the job's sandbox
// and limits at the isolated levels. The job's verify (on its head) and hub
// land's check (on the job's work integrated with a target's tip, after the
// job ended: Check) both run through it.
type Checker struct{ c *core }

// A CheckFailure says why a check did not pass: State is what the job ends
// as for it (failed; cancelled when it was stopped), Category the step
// that failed (protocol.CategorySetup or CategoryVerify; empty when the
// check was stopped or could not be made at all).
type CheckFailure struct {
	State    protocol.State
	Category string
	Reason   string
}

func (f *CheckFailure) Error() string { return f.Reason }

// Run runs command on commit in a clean detached checkout of its own,
// made ready as the worker's was, with its own timeout: the job's verify
// on its head, or landing's check of an integrated commit. It returns the
// check's record and, when the check did not pass, a *CheckFailure.
func (k Checker) Run(ctx context.Context, head, command string, timeout time.Duration) (*protocol.Verify, error) {
	s := k.c
	j := s.job
	v := &protocol.Verify{Command: command, Commit: head, ExitCode: -1}
	// A clean checkout of the commit, private (nothing of it is registered
	// in the user's repository), removed after.
	want := job.VerifyCheckout(s.o.Paths, j.ID, s.repo)
	_ = want.Remove(ctx)
	vc, err := gitx.MakeCheckout(ctx, s.repo, gitx.CheckoutOptions{Dir: want.Dir, Index: want.Index, Base: head, PrivateGitDir: want.GitDir})
	if err != nil {
		v.OutputTail = err.Error()
		return v, &CheckFailure{State: protocol.StateFailed, Reason: "could not make a clean checkout for verify: " + err.Error()}
	}
	defer func() { _ = vc.Remove(context.WithoutCancel(ctx)) }()
	// verify sees the user's gitignored files too, as the worker did
	// (tracked in head or not: a tracked one is never overwritten).
	plan, err := gitx.PlanInclude(ctx, s.repo, head)
	if err == nil {
		err = s.include(ctx, vc, plan, false)
	}
	if err != nil {
		v.OutputTail = err.Error()
		return v, &CheckFailure{State: protocol.StateFailed, Reason: "could not copy the files .worktreeinclude lists for verify: " + err.Error()}
	}
	// The same environment as the worker's: the dependencies head pins
	// (the worker's own lockfile, if it changed one), the setup command.
	err = s.setUp(ctx, vc, head, true)
	v.Deps = s.verifyDeps
	if err != nil {
		f := &CheckFailure{State: protocol.StateFailed, Category: protocol.CategorySetup, Reason: err.Error()}
		var sf *setupFailure
		if errors.As(err, &sf) && sf.out != "" {
			v.OutputTail = sf.out
		} else {
			v.OutputTail = err.Error()
		}
		var df *deps.Failure
		if errors.As(err, &df) && df.Step.Stopped != "" {
			f = &CheckFailure{State: protocol.StateCancelled, Reason: df.Step.Stopped}
		}
		return v, f
	}
	dir := vc.Dir
	env := workerEnv(s.o.HubBinary, append(s.ownEnv(ctx), "HUB_JOB="+j.ID, "HUB_VERIFY=1", "HUB_HOME="+s.o.Paths.Home)...)
	argv := []string{"sh", "-c", command}
	if engine.Sandboxed(s.params.Isolation) {
		// The worker wrote what verify runs: at the isolated levels it runs
		// behind the same fence as the worker (no network at untrusted).
		scratch := s.o.Paths.VerifyHome(j.ID)
		_ = os.RemoveAll(scratch)
		if err := os.MkdirAll(scratch, 0o700); err == nil {
			argv, err = engine.SandboxCommand(engine.Spec{JobID: j.ID, Dir: dir, Checkout: vc, Params: s.params, Scratch: scratch, Cache: s.cacheDir(),
				HubBinary: s.o.HubBinary, Env: env, Limits: s.limitPlan(), Ports: s.portRange()}, argv, s.o.HubBinary)
		}
		if err != nil {
			v.OutputTail = err.Error()
			return v, &CheckFailure{State: protocol.StateFailed, Reason: "could not sandbox verify: " + err.Error()}
		}
		defer os.RemoveAll(scratch)
	}

	stop, vcancel := s.watchStop(ctx)
	defer vcancel()
	res := engine.RunCommand(ctx, engine.Command{Argv: argv, Dir: dir, Env: env, Timeout: timeout, Stop: stop, Grace: s.o.StopGrace,
		OutputMax: 4096, Marker: "HUB_JOB=" + j.ID, Subreaper: s.subreaper, Exclude: s.background})
	vcancel()
	if res.Err != nil {
		v.OutputTail = res.Err.Error()
		return v, &CheckFailure{State: protocol.StateFailed, Reason: "verify did not start: " + res.Err.Error()}
	}
	s.noteLeftovers(ctx, "verify", res.Leftovers)
	s.checkLimits(ctx)
	s.signalHit(ctx, res.Signal)
	v.DurationMS = res.Duration.Milliseconds()
	v.ExitCode, v.TimedOut = res.ExitCode, res.TimedOut
	signal, cancelled := res.Signal, res.Stopped
	if res.Cancelled != nil {
		cancelled = "the job's shim was told to stop (SIGTERM)"
	}
	if v.TimedOut {
		v.ExitCode = 124
	}
	if cancelled != "" || v.TimedOut {
		signal = ""
	}
	v.OutputTail = s.red.String(res.Output)
	code := v.ExitCode
	s.observed = append(s.observed, protocol.ObservedCommand{Command: v.Command, Role: "verify", ExitCode: &code, DurationMS: v.DurationMS})
	s.record(ctx, protocol.EventVerify, fmt.Sprintf("exit %d", v.ExitCode), v)
	failed := func(reason string) (*protocol.Verify, error) {
		return v, &CheckFailure{State: protocol.StateFailed, Category: protocol.CategoryVerify, Reason: reason}
	}
	switch {
	case cancelled != "":
		return v, &CheckFailure{State: protocol.StateCancelled, Reason: cancelled}
	case v.TimedOut:
		return failed(fmt.Sprintf("verify timed out after %s", timeout))
	case signal != "":
		return failed(fmt.Sprintf("verify failed: `%s` was killed by a signal (%s)", view.FirstLine(v.Command, 80), signal))
	case v.ExitCode != 0:
		return failed(fmt.Sprintf("verify failed: `%s` exited %d", view.FirstLine(v.Command, 80), v.ExitCode))
	}
	return v, nil
}

// Check runs command on commit, a commit of ended job id's repository (its
// work integrated with a target's tip, for hub land), through the job's
// Checker, bounded by timeout. stop, when it gets a reason, stops the
// check. The outcome is the check's; err says why it could not be run or
// passed (nil: it ran and exited 0). Nothing of the job's record changes:
// what the check observes goes to o.Log.
func Check(ctx context.Context, o Options, st *store.Store, id, commit, command string, timeout time.Duration, stop <-chan string) (*protocol.Verify, error) {
	if o.StopGrace == 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.HubBinary == "" {
		o.HubBinary, _ = os.Executable()
	}
	j, err := st.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if !j.State.Terminal() {
		return nil, fmt.Errorf("job %s is %s; only an ended job's work is checked for landing", j.ID, j.State)
	}
	if err := os.MkdirAll(o.Paths.JobDir(j.ID), 0o700); err != nil {
		return nil, err
	}
	c := &core{o: o, st: st, job: j, stopCh: make(chan string, 1), red: secrets(), self: os.Getpid()}
	c.events = func(_ context.Context, kind protocol.EventKind, text string, _ any) {
		o.Log.Info().Str("kind", string(kind)).Msg(text)
	}
	if c.params, err = store.DecodeSpec(j.Spec); err != nil {
		return nil, err
	}
	if c.repo, err = gitx.Open(j.Repo); err != nil {
		return nil, err
	}
	defer func() { c.ports.release() }()
	if stop != nil {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case r := <-stop:
				c.requestStop(r)
			case <-cctx.Done():
			}
		}()
	}
	// The job's limits hold for its landing's check too.
	c.startLimits(ctx, j.ID+"_land")
	v, err := Checker{c}.Run(ctx, commit, command, timeout)
	c.checkLimits(ctx)
	c.stopLimits()
	end := ending{}
	var f *CheckFailure
	if errors.As(err, &f) {
		end.state, end.err = f.State, f.Reason
	}
	c.limitEnding(&end)
	c.waitKeeps()
	switch {
	case end.err != "":
		return v, errors.New(end.err)
	case v == nil:
		return nil, errors.New("the check did not run")
	}
	return v, nil
}
