package shim

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// how a run ended, before verify
type ending struct {
	state    protocol.State // the state if nothing else goes wrong: succeeded, failed, cancelled, timed_out
	err      string
	category string // why it did not succeed (protocol.Category*); derived from state when empty
	outcome  engine.Outcome
	ranClean bool // the worker exited 0 on its own
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
