package shim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
)

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
