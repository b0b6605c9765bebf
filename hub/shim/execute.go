package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/router"
)

// how a run ended, before verify
type ending struct {
	state    protocol.State // the state if nothing else goes wrong: succeeded, failed, cancelled, timed_out
	err      string
	category string // why it did not succeed (protocol.Category*); derived from state when empty
	outcome  engine.Outcome
	ranClean bool // the worker exited 0 on its own
}

func (s *shim) execute(ctx context.Context) {
	j := s.job
	var ok bool
	s.eng, ok = s.o.Engines.Get(j.Engine)
	if !ok {
		_ = s.fail(ctx, fmt.Sprintf("engine %q is not in this hub", j.Engine))
		return
	}
	// Each phase is a trace entry, and starts where the last one ended:
	// together they cover the job from leaving its queue to its end.
	began := time.Now()
	if !j.PreparingAt.IsZero() && j.PreparingAt.Before(began) {
		s.phaseTo(ctx, protocol.PhaseLaunch, j.PreparingAt, began, "", false)
	}
	// The job's limits (at the sandboxed levels) hold from its first command.
	s.startLimits(ctx, j.ID)
	// A job that never ran still ends with its evidence, like any other.
	if err := s.prepare(ctx); err != nil {
		s.finishFrom = s.phase(ctx, protocol.PhasePrepare, began, s.red.String(err.Error()), true)
		end := ending{state: protocol.StateFailed, err: "preparing failed: " + err.Error(), category: protocol.CategoryPrepare, outcome: notRun}
		var sf *setupFailure
		var df *deps.Failure
		switch {
		case errors.As(err, &df) && df.Step.Stopped != "":
			end = ending{state: protocol.StateCancelled, err: df.Step.Stopped, outcome: notRun}
		case errors.As(err, &sf):
			end.err, end.category = err.Error(), protocol.CategorySetup
		}
		s.finish(ctx, end, j.BaseSHA, false, nil)
		return
	}
	prepared := s.phase(ctx, protocol.PhasePrepare, began, s.prepareLine(), false)
	s.finishFrom = prepared
	if err := s.setState(ctx, protocol.StateRunning, ""); err != nil {
		s.finish(ctx, ending{state: protocol.StateFailed, err: err.Error(), outcome: notRun}, j.BaseSHA, false, nil)
		return
	}
	guard := s.refGuard(ctx)
	end := s.run(ctx)
	guard(ctx)
	s.restoreShared(ctx)
	ran := s.phase(ctx, protocol.PhaseRun, prepared, runLine(end), end.state != protocol.StateSucceeded)

	head, salvaged, commitErr := s.commit(ctx, end)
	switch oversize := onlyOversize(commitErr); {
	case oversize != nil:
		// Everything else is committed: the job fails for the files it
		// may not commit, and verify still runs on what is on the branch.
		end.state, end.err, end.category = protocol.StateFailed, s.red.String(oversize.Error()), protocol.CategoryLimit
		end.ranClean = false
		commitErr = nil
	case commitErr != nil:
		end.state, end.err = protocol.StateFailed, job.CommitFailed+" (they stay in the worktree "+j.Worktree+"): "+commitErr.Error()
		end.category = protocol.CategoryCommit
	}
	committed := s.phase(ctx, protocol.PhaseCommit, ran, commitLine(j.BaseSHA, head, salvaged, commitErr), commitErr != nil)
	s.finishFrom = committed

	var verify *protocol.Verify
	if end.ranClean && commitErr == nil && s.params.Verify != "" && j.Kind == protocol.KindWrite {
		verify = s.verify(ctx, head, &end)
		line, failed := "did not run", true
		if verify != nil {
			line, failed = fmt.Sprintf("exit %d: %s", verify.ExitCode, verify.OutputTail), verify.ExitCode != 0
		}
		s.finishFrom = s.phase(ctx, protocol.PhaseVerify, committed, line, failed)
	}
	s.finish(ctx, end, head, salvaged, verify)
}

// onlyOversize is err's *gitx.OversizeError when that is all err says
// (Commit joins what it could not commit), nil otherwise.
func onlyOversize(err error) *gitx.OversizeError {
	var oe *gitx.OversizeError
	if !errors.As(err, &oe) {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !errors.As(e, new(*gitx.OversizeError)) {
				return nil
			}
		}
	}
	return oe
}

// prepareLine says in short what preparing made.
func (s *shim) prepareLine() string {
	if s.checkout == nil {
		return "no checkout: " + s.dir
	}
	line := "checkout " + s.checkout.Dir
	if s.setupTook > 0 {
		line += fmt.Sprintf("; setup %s", s.setupTook.Round(time.Millisecond))
	}
	return line
}

// runLine is how the run ended, in short.
func runLine(end ending) string {
	o := end.outcome
	line := fmt.Sprintf("%s: exit %d", end.state, o.ExitCode)
	if o.Signal != "" {
		line += " (" + o.Signal + ")"
	}
	if end.err != "" {
		line += ": " + end.err
	}
	return line
}

// commitLine is what the commit phase did, in short.
func commitLine(base, head string, salvaged bool, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case head == base:
		return "no new commit"
	case salvaged:
		return "salvage " + shortOrNone(head)
	}
	return "head " + shortOrNone(head)
}

// prepare makes the job's checkout. A write job gets branch hub/<id>; a read
// job with a repo gets a detached checkout that is removed at the end. At
// the isolated levels the checkout is private (a git dir of its own that
// borrows the user's objects read-only); else a linked worktree.
func (s *shim) prepare(ctx context.Context) error {
	j := s.job
	if j.Repo == "" {
		s.dir = s.params.Cwd
		return nil
	}
	repo, err := gitx.Open(j.Repo)
	if err != nil {
		return err
	}
	s.repo = repo
	dirty := make(chan bool, 1)
	go func() {
		d, err := gitx.Dirty(ctx, repo.Top)
		dirty <- err == nil && d
	}()
	// What .worktreeinclude asks for, chosen (and a bad one refused)
	// before anything is made.
	plan, err := gitx.PlanInclude(ctx, repo, j.BaseSHA)
	if err != nil {
		return err
	}
	want := job.Checkout(s.o.Paths, j, repo)
	o := gitx.CheckoutOptions{Dir: want.Dir, Index: want.Index, Branch: j.Branch, Base: j.BaseSHA}
	if job.PrivateGit(j.Isolation) {
		// A private checkout writes nothing of the repository's but the
		// new branch (one atomic ref update): no lock to wait for.
		o.PrivateGitDir = s.o.Paths.JobGitDir(j.ID)
		s.checkout, err = gitx.MakeCheckout(ctx, repo, o)
	} else {
		var unlock func()
		if unlock, err = gitx.LockRepo(ctx, s.o.Paths.LocksDir(), repo); err != nil {
			return err
		}
		s.checkout, err = gitx.MakeCheckout(ctx, repo, o)
		unlock()
	}
	if err != nil {
		return err
	}
	wt := s.checkout.Dir
	s.dir = wt
	// From before the job's first command: what it changes in the
	// repository's shared config and hooks is put back (restoreShared).
	s.watchShared(ctx)
	// Into the checkout's folder, private or linked, before any worker
	// or sandbox starts; then its environment. Either failing leaves
	// nothing made: no worktree, no branch (no work was done on it).
	err = s.include(ctx, s.checkout, plan, true)
	if err == nil {
		err = s.setUp(ctx, s.checkout, j.BaseSHA, false)
	}
	if err != nil {
		removeCheckout(context.WithoutCancel(ctx), s.o.Paths, s.checkout)
		if j.Branch != "" {
			_ = gitx.DeleteBranch(context.WithoutCancel(ctx), repo, j.Branch)
		}
		s.checkout = nil
		return err
	}
	isDirty := <-dirty
	if err := s.st.Update(ctx, j.ID, func(r *store.Job) error {
		r.Worktree = wt
		if isDirty {
			r.Notes = append(r.Notes, job.NoteDirty)
		}
		return nil
	}); err != nil {
		return err
	}
	s.job.Worktree = wt
	if isDirty {
		s.job.Notes = append(s.job.Notes, job.NoteDirty)
	}
	return nil
}

// include copies the gitignored files .worktreeinclude selected (plan)
// into checkout c, and makes every value of an env file among them a key
// the job's redactor removes, before anything of the worker's is read.
// journal records what was copied and skipped, and why.
func (s *shim) include(ctx context.Context, c *gitx.Checkout, plan *gitx.IncludePlan, journal bool) error {
	if plan == nil || (len(plan.Paths) == 0 && len(plan.Skipped) == 0) {
		return nil
	}
	for _, rel := range plan.Paths {
		if redact.EnvFileName(rel) {
			s.red.Add(envFileValues(filepath.Join(plan.Top, filepath.FromSlash(rel)))...)
		}
	}
	t0 := time.Now()
	res, err := c.CopyIncluded(plan)
	if err != nil {
		return err
	}
	if journal {
		skipped := append(slices.Clone(plan.Skipped), res.Skipped...)
		s.record(ctx, protocol.EventNote, s.red.String(includeLine(res.Copied, skipped)), map[string]any{
			"copied": bounded(res.Copied, 200), "copied_count": len(res.Copied),
			"skipped": bounded(skipped, 200), "skipped_count": len(skipped), "copy_ms": time.Since(t0).Milliseconds()})
	}
	return nil
}

// includeLine is the journal's line for what .worktreeinclude copied.
func includeLine(copied []string, skipped []gitx.IncludeSkip) string {
	var b strings.Builder
	switch len(copied) {
	case 0:
		b.WriteString("copied no gitignored files listed in .worktreeinclude")
	case 1:
		b.WriteString("copied 1 gitignored file listed in .worktreeinclude: ")
	default:
		fmt.Fprintf(&b, "copied %d gitignored files listed in .worktreeinclude: ", len(copied))
	}
	b.WriteString(strings.Join(bounded(copied, 10), ", "))
	if len(copied) > 10 {
		fmt.Fprintf(&b, ", … (%d more)", len(copied)-10)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "; skipped %d: ", len(skipped))
		for i, sk := range bounded(skipped, 5) {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s (%s)", sk.Path, sk.Why)
		}
		if len(skipped) > 5 {
			fmt.Fprintf(&b, "; … (%d more)", len(skipped)-5)
		}
	}
	return b.String()
}

func bounded[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// envFileValues returns the values of an env file of the user's checkout:
// a regular file (through symlinks), read whole; none otherwise.
func envFileValues(p string) []string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil
	}
	return redact.ReadEnvFile(real)
}

// route is the router's decision stored with the job (zero when it has
// none, or cannot be read: then there is no fallback).
func (s *shim) route() router.Decision {
	var d router.Decision
	if len(s.job.Route) > 0 {
		if err := json.Unmarshal(s.job.Route, &d); err != nil {
			s.o.Log.Warn().Err(err).Msg("the job's route is unreadable; no fallback")
		}
	}
	return d
}

// fallBack moves the job to the next candidate of its decision that still
// accepts it, after the current engine failed to start or did no work
// (why); it records the move in the decision, the record and the journal.
// It returns false when there is none: an engine the caller named is never
// swapped, and the last candidate has no next.
func (s *shim) fallBack(ctx context.Context, d *router.Decision, why string) bool {
	next := d.Next(s.eng.Name())
	for next != "" {
		if e, ok := s.o.Engines.Get(next); ok && e.Check(s.params) == nil {
			break
		}
		next = d.Next(next)
	}
	if next == "" {
		return false
	}
	from := s.eng.Name()
	d.Fallbacks = append(d.Fallbacks, router.Fallback{Engine: from, Error: why})
	d.Chosen = next
	params := s.params
	params.Engine = next
	route, _ := json.Marshal(d)
	spec, _ := store.EncodeSpec(params)
	if err := s.st.Update(ctx, s.job.ID, func(rec *store.Job) error {
		rec.Engine, rec.Route, rec.Spec = next, route, spec
		return nil
	}); err != nil {
		s.o.Log.Error().Err(err).Str("next", next).Msg("record the fallback")
		return false
	}
	s.eng, _ = s.o.Engines.Get(next)
	s.params = params
	s.job.Engine, s.job.Route, s.job.Spec = next, route, spec
	s.record(ctx, protocol.EventNote, fmt.Sprintf("fallback: engine %s %s; trying %s", from, why, next), nil)
	return true
}

// didNoWork says why a run that ended on its own counts as never having
// started ("" when it did work): it failed before any model answered
// (auth refused, quota exhausted, a CLI that could not get going) and left
// nothing in the worktree. Such a run may fall back; any other may not,
// since the next engine would redo or trample work.
func (s *shim) didNoWork(ctx context.Context, end ending) string {
	o := end.outcome
	if end.state != "" || (o.ExitCode == 0 && o.Signal == "" && o.Err == nil) || o.Tokens != 0 || o.Calls != 0 ||
		s.eng.Capabilities().Pays == protocol.PaysFree {
		return ""
	}
	if s.job.Kind == protocol.KindWrite && s.checkout != nil && !s.checkout.Untouched(ctx, s.job.BaseSHA) {
		return ""
	}
	why := "failed before any model answered"
	for _, q := range o.Quota {
		if q.Exhausted {
			why += fmt.Sprintf(" (quota %s exhausted)", q.Name)
			break
		}
	}
	switch {
	case o.Failure != "":
		why += ": " + s.red.String(o.Failure)
	case o.Err != nil:
		why += ": " + o.Err.Error()
	case o.ExitCode != 0:
		why += fmt.Sprintf(": exit code %d", o.ExitCode)
	}
	return why
}

// notRun is the outcome of a worker that never started: nothing was spent.
var notRun = engine.Outcome{ExitCode: -1, CostKnown: true}

// run starts the engine and supervises it until it ends.
func (s *shim) run(ctx context.Context) ending {
	j := s.job
	logf, err := os.OpenFile(s.o.Paths.WorkerLog(j.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return ending{state: protocol.StateFailed, err: "cannot open the worker log: " + err.Error(), outcome: notRun}
	}
	defer logf.Close()
	out := &lineRedactor{w: logf, r: s.red}
	defer out.Flush()
	select {
	case reason := <-s.stopCh: // stopped while preparing: never start the worker
		return ending{state: protocol.StateCancelled, err: reason, outcome: notRun}
	default:
	}
	// HUB_HOME too, so the worker's `hub status` asks its own daemon (and
	// never starts one on the default HUB_HOME).
	env := workerEnv(s.o.HubBinary, append(s.ownEnv(ctx),
		"HUB_JOB="+j.ID, "HUB_SOCKET="+s.o.Paths.ShimSocket(j.ID), "HUB_TASK="+j.Task, "HUB_HOME="+s.o.Paths.Home)...)
	d := s.route()
	hard := time.NewTimer(time.Duration(s.params.TimeoutS) * time.Second)
	defer hard.Stop()
	for {
		r, err := s.startEngine(ctx, env, out)
		if err != nil {
			if s.fallBack(ctx, &d, fmt.Sprintf("did not start (%v)", err)) {
				continue
			}
			return ending{state: protocol.StateFailed, err: "the engine did not start: " + err.Error(), outcome: notRun}
		}
		end := s.supervise(ctx, r, hard)
		if why := s.didNoWork(ctx, end); why != "" && s.fallBack(ctx, &d, why) {
			continue
		}
		return s.ended(end)
	}
}

// refGuard snapshots the repository's refs before a run; the function it
// returns compares them after and records every ref besides the job's
// branch that moved. A private checkout's worker cannot reach the user's
// refs, so there is nothing to watch.
func (s *shim) refGuard(ctx context.Context) func(context.Context) {
	j := s.job
	if s.checkout == nil || s.checkout.Private {
		return func(context.Context) {}
	}
	before, err := gitx.Refs(ctx, j.Repo)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("ref guard: read refs")
		return func(context.Context) {}
	}
	s.refsBefore = before
	own := "refs/heads/" + j.Branch
	return func(ctx context.Context) {
		after, err := gitx.Refs(context.WithoutCancel(ctx), j.Repo)
		if err != nil {
			s.o.Log.Warn().Err(err).Msg("ref guard: read refs")
			return
		}
		hubs := s.hubMoves(ctx, j.Repo)
		for _, name := range slices.Sorted(maps.Keys(mergeKeys(before, after))) {
			if name == own || before[name] == after[name] || hubs(name, after[name]) {
				continue
			}
			c := protocol.RefChange{Ref: name, Before: before[name], After: after[name]}
			s.refChanges = append(s.refChanges, c)
			s.record(ctx, protocol.EventNote, fmt.Sprintf("%s moved while the job ran (%s → %s): by the worker, or by someone else; at isolation %s hub cannot tell",
				name, shortOrNone(c.Before), shortOrNone(c.After), s.params.Isolation), c)
		}
	}
}

// hubMoves returns what tells the ref moves hub made itself while a job
// ran in repo from anyone else's: the branches of other jobs and a branch
// hub land moved to a landing's commit. Reporting those would blame every
// running job for the hub's own work.
func (s *shim) hubMoves(ctx context.Context, repo string) func(ref, after string) bool {
	h, err := s.st.HubRefs(context.WithoutCancel(ctx), repo)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("ref guard: the jobs' refs")
	}
	return h.Made
}

func mergeKeys(a, b map[string]string) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// shortOrNone is a SHA as hub shows it, or "none" for a ref that was not there.
func shortOrNone(sha string) string {
	if sha == "" {
		return "none"
	}
	return view.ShortSHA(sha)
}

// startEngine starts the job's current engine in a fresh, empty folder of its own.
func (s *shim) startEngine(ctx context.Context, env []string, out io.Writer) (engine.Run, error) {
	j := s.job
	scratch := s.o.Paths.EngineHome(j.ID)
	if err := os.RemoveAll(scratch); err != nil {
		return nil, fmt.Errorf("cannot clear the engine's folder: %w", err)
	}
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return nil, fmt.Errorf("cannot make the engine's folder: %w", err)
	}
	s.starts.Add(1)
	s.engineAt = time.Now()
	return s.eng.Start(ctx, engine.Spec{JobID: j.ID, Dir: s.dir, Checkout: s.checkout, BaseSHA: j.BaseSHA, Params: s.params, MaxMicros: j.MaxMicros, Cache: s.cacheDir(),
		Limits: s.limitPlan(), Ports: s.portRange(),
		Env: env, Output: &activityWriter{w: out, s: s}, Mailbox: mailbox{s}, Scratch: scratch, HubBinary: s.o.HubBinary})
}

// supervise watches a started run until it ends: on its own, stalled, past
// the job's hard timeout (one for every engine tried), or stopped. It keeps
// what the run saw of quota and records the worker's exit.
func (s *shim) supervise(ctx context.Context, r engine.Run, hard *time.Timer) ending {
	j := s.job
	pgid := r.PGID()
	pstart, _ := proc.StartTime(pgid)
	_ = s.st.Update(ctx, j.ID, func(rec *store.Job) error {
		rec.EnginePGID, rec.EngineStart = pgid, pstart
		return nil
	})

	done := make(chan engine.Outcome, 1)
	go func() { done <- r.Wait() }()
	stallAfter := time.Duration(s.params.StallTimeoutS) * time.Second
	stall := time.NewTimer(stallAfter)
	defer stall.Stop()

	var end ending
	stopWith := func(state protocol.State, msg string) engine.Outcome {
		end.state, end.err = state, msg
		r.Stop(s.o.StopGrace)
		return <-done
	}
loop:
	for {
		select {
		case o := <-done:
			end.outcome = o
			break loop
		case <-s.activity:
			if !stall.Stop() {
				select {
				case <-stall.C:
				default:
				}
			}
			stall.Reset(stallAfter)
		case <-stall.C:
			if s.isAsking() || r.Heartbeat() {
				stall.Reset(stallAfter)
				continue
			}
			end.outcome = stopWith(protocol.StateFailed, fmt.Sprintf("stalled: no output, progress or live command for %s; stopped", stallAfter))
			break loop
		case <-hard.C:
			end.outcome = stopWith(protocol.StateTimedOut, fmt.Sprintf("timed out after %s; stopped", time.Duration(s.params.TimeoutS)*time.Second))
			break loop
		case reason := <-s.stopCh:
			end.outcome = stopWith(protocol.StateCancelled, reason)
			break loop
		case <-ctx.Done():
			end.outcome = stopWith(protocol.StateCancelled, "the job's shim was told to stop (SIGTERM)")
			break loop
		}
	}
	ended := time.Now()
	// Whatever the worker left running goes too: its group, and what left
	// the group (setsid, a double fork) but stayed below the shim or
	// carries the job's HUB_JOB.
	leader := pstart
	if ls, ok := r.(interface{ LeaderStart() uint64 }); ok && ls.LeaderStart() != 0 {
		leader = ls.LeaderStart()
	}
	if leader == 0 {
		// An engine in the shim (the built-in worker): everything the shim
		// started since it began is the worker's, at this moment.
		leader, _ = proc.StartTime(os.Getpid())
	}
	s.noteLeftovers(ctx, "worker", proc.EndLeftovers(proc.LeftoverOptions{PGID: pgid, LeaderStart: leader, Grace: time.Second,
		Subreaper: s.subreaper, Marker: "HUB_JOB=" + j.ID, Exclude: s.background()}))
	s.endWorkerProcesses()
	s.checkLimits(ctx)
	s.signalHit(ctx, end.outcome.Signal)

	o := end.outcome
	// What the provider said of the engine's quota is kept for the router;
	// failing to keep it never fails the job.
	if len(o.Quota) > 0 {
		if err := s.st.PutQuota(context.WithoutCancel(ctx), o.Quota); err != nil {
			s.o.Log.Warn().Err(err).Msg("store the engine's quota signals")
		}
	}
	code := o.ExitCode
	oc := protocol.ObservedCommand{Command: o.Command, Role: "worker", Signal: o.Signal, DurationMS: o.Duration.Milliseconds()}
	if o.Signal == "" && o.Err == nil {
		oc.ExitCode = &code
	}
	s.observed = append(s.observed, o.Observed...)
	s.observed = append(s.observed, oc)
	s.record(ctx, protocol.EventCommand, "worker exited", oc)
	s.workerEntry(ctx, o, ended, oc.ExitCode)
	return end
}

// noteLeftovers records the processes a command of the job left running,
// as the evidence shows them.
func (s *shim) noteLeftovers(ctx context.Context, role string, left []proc.Leftover) {
	for _, l := range left {
		lp := protocol.LeftoverProcess{PID: l.PID, Command: s.red.String(l.Command), Role: role, Ended: l.Ended}
		s.leftovers = append(s.leftovers, lp)
		what := "ended it"
		if !l.Ended {
			what = "could not end it: it survived"
		}
		s.record(ctx, protocol.EventNote, fmt.Sprintf("the %s left process %d running (%s); hub %s", role, l.PID, view.FirstLine(lp.Command, 120), what), lp)
	}
}

// ended fills in how a run that was not stopped ended.
func (s *shim) ended(end ending) ending {
	o := end.outcome
	if end.state == "" {
		switch {
		case o.Err != nil:
			end.state, end.err = protocol.StateFailed, "the worker could not run: "+o.Err.Error()
		case o.Signal != "":
			end.state, end.err = protocol.StateFailed, "the worker was killed by a signal ("+o.Signal+")"
		case o.ExitCode != 0 && o.Failure != "":
			end.state, end.err = protocol.StateFailed, "the worker stopped: "+s.red.String(o.Failure)
		case o.ExitCode != 0:
			end.state, end.err = protocol.StateFailed, fmt.Sprintf("the worker exited with code %d", o.ExitCode)
		default:
			end.state, end.ranClean = protocol.StateSucceeded, true
		}
	}
	return end
}

// commit records whatever the worker left uncommitted. A write job's ending
// always leaves a commit on its branch; work from a run that did not finish
// cleanly is marked salvage. Whatever the worker did to its git state, the
// commit is hub's own and lands on the job's branch (see gitx.Checkout);
// what hub had to put back is journaled and goes into the evidence.
func (s *shim) commit(ctx context.Context, end ending) (head string, salvaged bool, err error) {
	j := s.job
	if j.Kind != protocol.KindWrite || s.checkout == nil {
		return j.BaseSHA, false, nil
	}
	res, err := commitCheckout(ctx, s.o.Paths, j, s.checkout, !end.ranClean, s.refsBefore, int64(s.jobLimits().FileMB)<<20)
	for _, r := range res.Repairs {
		gr := protocol.GitRepair{What: r.What, Found: s.red.String(r.Found), Done: s.red.String(r.Done)}
		s.repairs = append(s.repairs, gr)
		s.record(ctx, protocol.EventNote, repairLine(gr), gr)
	}
	if err != nil && res.Head == "" {
		return j.BaseSHA, false, err
	}
	head, salvaged = res.Head, res.Committed && !end.ranClean
	if head != j.BaseSHA {
		s.record(ctx, protocol.EventCommit, head, map[string]any{"sha": head, "salvage": salvaged})
	}
	return head, salvaged, err
}

// repairLine is how a repair reads in the journal.
func repairLine(gr protocol.GitRepair) string {
	switch gr.What {
	case gitx.RepairNested, gitx.RepairSparse:
		// Not a change to the checkout's git state, but to what its files are.
		return fmt.Sprintf("git: %s; hub %s", gr.Found, gr.Done)
	}
	return fmt.Sprintf("git: the worker changed its %s (%s); hub %s", gr.What, gr.Found, gr.Done)
}

// commitCheckout commits what is left in job j's checkout c onto its
// branch. salvage marks the commit as the remains of a run that did not end
// cleanly. A worktree that is gone leaves the branch as it is.
// maxFile bounds the files it commits (0: none; see gitx.CommitOptions).
func commitCheckout(ctx context.Context, p config.Paths, j *store.Job, c *gitx.Checkout, salvage bool, before map[string]string, maxFile int64) (gitx.CommitResult, error) {
	if _, err := os.Stat(c.Dir); err != nil {
		tip, rerr := c.Repo.Resolve("refs/heads/" + j.Branch)
		if rerr != nil {
			tip = j.BaseSHA
		}
		return gitx.CommitResult{Head: tip}, nil
	}
	msg := fmt.Sprintf("hub: work left uncommitted by job %s\n\n%s\n\nHub-Job: %s\n", j.ID, view.FirstLine(j.Task, 200), j.ID)
	if salvage {
		msg = fmt.Sprintf("hub: salvage of job %s\n\n%s\n\nHub-Job: %s\nHub-Salvage: true\n", j.ID, view.FirstLine(j.Task, 200), j.ID)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	o := gitx.CommitOptions{Message: msg, Who: gitx.HubIdentity, Base: j.BaseSHA, Scratch: p.ImportDir(j.ID), Before: before, MaxFileBytes: maxFile}
	res, err := c.Commit(cctx, o)
	if err != nil && res.Head == "" {
		// A git killed while it wrote the index (the worker's, when it
		// shares hub's path, or a git of hub's killed with a dead shim)
		// leaves index.lock behind. The worker is stopped by now: clear a
		// lock nobody holds and try once more.
		if cleared, _ := gitx.ClearStaleIndexLock(cctx, c); cleared {
			res, err = c.Commit(cctx, o)
		}
	}
	return res, err
}

// verify runs the caller's check on the head commit in a clean detached
// checkout of its own, with its own timeout.
func (s *shim) verify(ctx context.Context, head string, end *ending) *protocol.Verify {
	if err := s.setState(ctx, protocol.StateVerifying, ""); err != nil {
		end.state, end.err = protocol.StateFailed, err.Error()
		return nil
	}
	return s.check(ctx, head, s.params.Verify, time.Duration(s.params.VerifyTimeoutS)*time.Second, end)
}

// check runs command on commit in a clean detached checkout of its own,
// made ready as the worker's was, with its own timeout: verify on the
// job's head, or landing's check of an integrated commit. What went wrong
// goes to end (the job's ending, for verify).
func (s *shim) check(ctx context.Context, head, command string, timeout time.Duration, end *ending) *protocol.Verify {
	j := s.job
	v := &protocol.Verify{Command: command, Commit: head, ExitCode: -1}
	// A clean checkout of the commit, private (nothing of it is registered
	// in the user's repository), removed after.
	want := job.VerifyCheckout(s.o.Paths, j.ID, s.repo)
	_ = want.Remove(ctx)
	vc, err := gitx.MakeCheckout(ctx, s.repo, gitx.CheckoutOptions{Dir: want.Dir, Index: want.Index, Base: head, PrivateGitDir: want.GitDir})
	if err != nil {
		end.state, end.err = protocol.StateFailed, "could not make a clean checkout for verify: "+err.Error()
		v.OutputTail = err.Error()
		return v
	}
	defer func() { _ = vc.Remove(context.WithoutCancel(ctx)) }()
	// verify sees the user's gitignored files too, as the worker did
	// (tracked in head or not: a tracked one is never overwritten).
	plan, err := gitx.PlanInclude(ctx, s.repo, head)
	if err == nil {
		err = s.include(ctx, vc, plan, false)
	}
	if err != nil {
		end.state, end.err = protocol.StateFailed, "could not copy the files .worktreeinclude lists for verify: "+err.Error()
		v.OutputTail = err.Error()
		return v
	}
	// The same environment as the worker's: the dependencies head pins
	// (the worker's own lockfile, if it changed one), the setup command.
	err = s.setUp(ctx, vc, head, true)
	v.Deps = s.verifyDeps
	if err != nil {
		end.state, end.err, end.category = protocol.StateFailed, err.Error(), protocol.CategorySetup
		var sf *setupFailure
		if errors.As(err, &sf) && sf.out != "" {
			v.OutputTail = sf.out
		} else {
			v.OutputTail = err.Error()
		}
		var df *deps.Failure
		if errors.As(err, &df) && df.Step.Stopped != "" {
			end.state, end.err, end.category = protocol.StateCancelled, df.Step.Stopped, ""
		}
		return v
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
			end.state, end.err = protocol.StateFailed, "could not sandbox verify: "+err.Error()
			v.OutputTail = err.Error()
			return v
		}
		defer os.RemoveAll(scratch)
	}

	stop, vcancel := s.watchStop(ctx)
	defer vcancel()
	res := engine.RunCommand(ctx, engine.Command{Argv: argv, Dir: dir, Env: env, Timeout: timeout, Stop: stop, Grace: s.o.StopGrace,
		OutputMax: 4096, Marker: "HUB_JOB=" + j.ID, Subreaper: s.subreaper, Exclude: s.background})
	vcancel()
	if res.Err != nil {
		end.state, end.err = protocol.StateFailed, "verify did not start: "+res.Err.Error()
		v.OutputTail = res.Err.Error()
		return v
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
	if v.ExitCode != 0 || v.TimedOut || signal != "" {
		end.category = protocol.CategoryVerify
	}
	switch {
	case cancelled != "":
		end.state, end.err, end.category = protocol.StateCancelled, cancelled, ""
	case v.TimedOut:
		end.state, end.err = protocol.StateFailed, fmt.Sprintf("verify timed out after %s", timeout)
	case signal != "":
		end.state, end.err = protocol.StateFailed, fmt.Sprintf("verify failed: `%s` was killed by a signal (%s)", view.FirstLine(v.Command, 80), signal)
	case v.ExitCode != 0:
		end.state, end.err = protocol.StateFailed, fmt.Sprintf("verify failed: `%s` exited %d", view.FirstLine(v.Command, 80), v.ExitCode)
	}
	return v
}

// watchStop hands the job's stop on to one command hub runs itself: the
// shim's stop channel carries one reason for the whole job, and the
// returned channel gets it while the command runs (until cancel).
func (s *shim) watchStop(ctx context.Context) (<-chan string, context.CancelFunc) {
	stop := make(chan string, 1)
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case reason := <-s.stopCh:
			stop <- reason
		case <-wctx.Done():
		}
	}()
	return stop, cancel
}

// finish builds the evidence and closes the job: state, reservation and slot
// in one transaction.
func (s *shim) finish(ctx context.Context, end ending, head string, salvaged bool, verify *protocol.Verify) {
	j := s.job
	from := s.finishFrom
	if from.IsZero() {
		from = time.Now()
	}
	// No command of the job runs any more: what it changed of the
	// repository's shared config and hooks goes back now, and its limits go
	// (a job that hit one fails, naming it).
	s.restoreShared(ctx)
	s.closeShared()
	s.checkLimits(ctx)
	s.stopLimits()
	s.limitEnding(&end)
	s.claimedMu.Lock()
	claimed := protocol.Claimed{Report: s.red.String(end.outcome.Summary), Progress: append([]string(nil), s.claimed...)}
	s.claimedMu.Unlock()
	o := end.outcome
	// Nothing is stored unredacted: the error may quote the worker, commit
	// subjects and observed commands are the worker's own words.
	end.err = s.red.String(end.err)
	ev := job.Evidence(context.WithoutCancel(ctx), j, head)
	for i := range ev.Commits {
		ev.Commits[i].Subject = s.red.String(ev.Commits[i].Subject)
	}
	for i := range s.observed {
		s.observed[i].Command = s.red.String(s.observed[i].Command)
	}
	// A job whose worker never ran (its checkout could not be made, or
	// set up) has nothing to grade.
	if end.category != protocol.CategoryPrepare && end.category != protocol.CategorySetup {
		graded := s.grade(context.WithoutCancel(ctx), verify, ev.Files, o.Judgements)
		ev.Rubric = job.RubricView(graded)
		if state, category, reason := job.Judge(end.state, ev.Rubric); state != end.state {
			end.state, end.err, end.category = state, reason, category
		}
	}
	ev.Env = s.env
	ev.Observed.RepoChanges = s.repoChanges
	ev.Timings.SetupMS = s.setupTook.Milliseconds()
	ev.Verify = verify
	ev.Observed.Commands = s.observed
	ev.Observed.RefChanges = s.refChanges
	ev.Observed.GitRepairs = s.repairs
	ev.Observed.Leftovers = s.leftovers
	ev.Claimed = claimed
	ev.Model = o.Model
	ev.Cost.Calls, ev.Cost.Models = o.Calls, o.Models
	if verify != nil {
		vraw, _ := json.Marshal(verify)
		_ = s.st.Update(ctx, j.ID, func(r *store.Job) error { r.Verify = vraw; return nil })
	}
	if j.Kind == protocol.KindRead && s.checkout != nil {
		removeCheckout(context.WithoutCancel(ctx), s.o.Paths, s.checkout)
	}
	// The last phase ends when the job does.
	now := time.Now().UTC()
	s.phaseTo(ctx, protocol.PhaseFinish, from, now, string(end.state), false)
	_, err := job.Close(ctx, s.st, j, job.End{State: end.state, Category: end.category, Reason: end.err, Head: head,
		Salvaged: salvaged, CostMicros: o.CostMicros, CostKnown: o.CostKnown, Tokens: o.Tokens, Evidence: ev}, now)
	if err != nil {
		s.o.Log.Error().Err(err).Msg("finish job")
	}
}

// removeCheckout removes a checkout hub made: a linked one under the
// repository's lock (git writes the repository's worktree list).
func removeCheckout(ctx context.Context, p config.Paths, c *gitx.Checkout) {
	if c.Private {
		_ = c.Remove(ctx)
		return
	}
	if unlock, err := gitx.LockRepo(ctx, p.LocksDir(), c.Repo); err == nil {
		_ = c.Remove(ctx)
		unlock()
	}
}

// activityWriter passes output on and tells the watchdog the worker is alive.
type activityWriter struct {
	w interface{ Write([]byte) (int, error) }
	s *shim
}

func (a *activityWriter) Write(p []byte) (int, error) {
	a.s.touch()
	return a.w.Write(p)
}
