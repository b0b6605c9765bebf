package shim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/router"
)

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
func (s *core) noteLeftovers(ctx context.Context, role string, left []proc.Leftover) {
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

// activityWriter passes output on and tells the watchdog the worker is alive.
type activityWriter struct {
	w interface{ Write([]byte) (int, error) }
	s *shim
}

func (a *activityWriter) Write(p []byte) (int, error) {
	a.s.touch()
	return a.w.Write(p)
}
