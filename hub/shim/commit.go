package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

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

// shortOrNone is a SHA as hub shows it, or "none" for a ref that was not there.
func shortOrNone(sha string) string {
	if sha == "" {
		return "none"
	}
	return view.ShortSHA(sha)
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
