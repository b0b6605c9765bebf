package land

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
)

// Runs runs landings as work: a landing accepted by Start has a record in
// the store and an id to wait on, and goes on under its repository's lock
// whatever becomes of the request that asked for it, until it ends or is
// interrupted. One Runs per daemon.
type Runs struct {
	l      *Lander
	ended  func()          // a run ended: its record and its jobs' changed
	ctx    context.Context // every run's: Interrupt cancels it
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	live map[string]*run // the runs of this process, until they end
}

// run is a landing run of this process: done is closed once its record
// ended; err is its refusal as an *Error, for a waiter in this process.
type run struct {
	done chan struct{}
	err  error
}

// NewRuns is a Runs landing with l.
// ended, when not nil, is called after each run ended.
func NewRuns(l *Lander, ended func()) *Runs {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Runs{l: l, ended: ended, ctx: ctx, cancel: cancel, live: map[string]*run{}}
}

// Recover ends the runs a stopped daemon left running (it ran them, and
// nothing runs them now) as interrupted. A daemon calls it as it starts,
// before it takes any landing.
func (rs *Runs) Recover(ctx context.Context) error {
	ids, err := rs.l.Store.InterruptLandRuns(ctx, "interrupted: the daemon that ran it stopped; the jobs it had landed stay landed, the others did not move: land them again", rs.l.Now())
	if len(ids) > 0 {
		rs.l.Log.Warn().Strs("runs", ids).Msg("land: runs of a stopped daemon interrupted")
	}
	return err
}

// Start checks p (a refusal is an *Error, and nothing is made), records
// the landing run and starts it; it returns the run's id.
func (rs *Runs) Start(ctx context.Context, p protocol.LandParams) (string, error) {
	if rs.ctx.Err() != nil {
		return "", wrongState("send it again: the next hub command starts a new daemon", "the daemon is shutting down and takes no landing")
	}
	plan, err := rs.l.Plan(ctx, p)
	if err != nil {
		return "", err
	}
	rec := protocol.LandRun{ID: "land-" + job.NewID(), State: protocol.LandRunRunning, Repo: plan.Repo.Top, Into: plan.Into,
		IDs: p.IDs, StartedAt: rs.l.Now()}
	if err := rs.l.Store.AddLandRun(ctx, rec); err != nil {
		return "", internal(err)
	}
	r := &run{done: make(chan struct{})}
	rs.mu.Lock()
	rs.live[rec.ID] = r
	rs.mu.Unlock()
	rs.wg.Go(func() { rs.run(rec.ID, plan, r) })
	return rec.ID, nil
}

// run lands plan and ends run id's record, once.
func (rs *Runs) run(id string, plan *Plan, r *run) {
	defer func() {
		rs.mu.Lock()
		delete(rs.live, id)
		rs.mu.Unlock()
		close(r.done)
	}()
	rs.l.Log.Info().Str("run", id).Strs("jobs", plan.P.IDs).Str("into", plan.Into).Msg("land: run started")
	res, err := rs.l.Run(rs.ctx, plan)
	state, why := protocol.LandRunDone, ""
	switch {
	case rs.ctx.Err() != nil:
		state, why = protocol.LandRunInterrupted, "interrupted: "+context.Cause(rs.ctx).Error()+
			"; the jobs it had landed stay landed, the others did not move: land them again"
	case err != nil:
		state, why, r.err = protocol.LandRunFailed, errorText(err), err
	}
	// The record outlives a daemon closing: the store is written with a
	// context of its own, not the one Interrupt cancelled.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rs.l.Store.EndLandRun(wctx, id, state, res, why, rs.l.Now()); err != nil {
		rs.l.Log.Error().Err(err).Str("run", id).Msg("land: end the run's record")
	}
	rs.l.Log.Info().Str("run", id).Str("state", state).Msg("land: run ended")
	if rs.ended != nil {
		rs.ended()
	}
}

// errorText is a refusal as its record says it: what, then what to do.
func errorText(err error) string {
	var le *Error
	if errors.As(err, &le) && le.Hint != "" {
		return le.Error() + ": " + le.Hint
	}
	return err.Error()
}

// DefaultWait bounds Wait when its caller does not.
const DefaultWait = 300 * time.Second

// Wait waits for run id to end, for up to timeout (DefaultWait when 0) or
// until ctx ends, and answers its record as it is then. For a run of this
// process that was refused, err is the refusal (an *Error) beside the
// record; a run still going is answered state running.
func (rs *Runs) Wait(ctx context.Context, id string, timeout time.Duration) (*protocol.LandRun, error) {
	if timeout <= 0 {
		timeout = DefaultWait
	}
	rs.mu.Lock()
	r := rs.live[id]
	rs.mu.Unlock()
	if r != nil {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rec, err := rs.l.Store.LandRun(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	if r != nil && rec.State == protocol.LandRunFailed {
		select {
		case <-r.done: // r.err is written before
			return rec, r.err
		default:
		}
	}
	return rec, nil
}

// Interrupt stops every run with cause (their checks stop; the jobs each
// had landed stay landed) and takes no more; Drain waits for their
// records to end.
func (rs *Runs) Interrupt(cause error) { rs.cancel(cause) }

// Drain waits for every run to end its record.
func (rs *Runs) Drain() { rs.wg.Wait() }

// Running counts this process's runs still going.
func (rs *Runs) Running() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.live)
}
