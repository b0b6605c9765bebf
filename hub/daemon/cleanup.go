package daemon

import (
	"context"
	"fmt"

	"github.com/hub-agents/hub/hub/gc"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// JobCleanup removes an ended job's worktree; the branch stays unless asked.
// The record stays readable.
func (s *Server) JobCleanup(ctx context.Context, p protocol.CleanupParams) (*protocol.CleanupResult, error) {
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	if !j.State.Terminal() {
		return nil, wrongState("stop it first, or wait for it to end", "job %s is %s; only an ended job can be cleaned up", j.ID, j.State)
	}
	res := &protocol.CleanupResult{ID: j.ID, Branch: j.Branch}
	if j.Repo == "" {
		return res, nil
	}
	repo, err := gitx.Open(j.Repo)
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeUnavailable, "if the repo moved, remove the worktree by hand", "repo %s: %v", j.Repo, err)
	}
	unlock, err := gitx.LockRepo(ctx, s.o.Paths.LocksDir(), repo)
	if err != nil {
		return nil, internal(err)
	}
	defer unlock()
	// Everything is checked before anything is removed.
	c := job.Checkout(s.o.Paths, j, repo)
	if err := worktreeMayGo(ctx, c, j, p.Force); err != nil {
		return nil, err
	}
	deleteBranch := false
	if p.DeleteBranch && j.Branch != "" {
		ok, err := gitx.BranchExists(ctx, repo, j.Branch)
		if err != nil {
			return nil, internal(err)
		}
		if ok {
			action, reason := gc.BranchAction(ctx, repo, j, p.Force)
			if action != protocol.GCRemove {
				return nil, wrongState("merge it first, or pass `force` to delete it anyway", "branch %s of job %s is kept: %s", j.Branch, j.ID, reason)
			}
			deleteBranch = true
		}
	}
	if res.WorktreeRemoved, err = gc.RemoveCheckouts(ctx, s.o.Paths, c, j.ID); err != nil {
		return nil, internal(err)
	}
	if deleteBranch {
		if err := gitx.DeleteBranch(ctx, repo, j.Branch); err != nil {
			return nil, internal(err)
		}
		res.BranchDeleted = true
	}
	if err := s.st.Update(ctx, j.ID, func(r *store.Job) error { r.Worktree = ""; return nil }); err != nil {
		return nil, internal(err)
	}
	text := "worktree removed"
	if !res.WorktreeRemoved {
		text = "no worktree to remove"
	}
	if res.BranchDeleted {
		text += fmt.Sprintf(", branch %s deleted", j.Branch)
	}
	_, _ = s.st.AppendEvent(ctx, j.ID, protocol.EventNote, "cleanup: "+text, nil, s.now())
	s.poke()
	return res, nil
}

// worktreeMayGo refuses to remove job j's checkout c when it holds work:
// off the job's branch (unless force), or with uncommitted changes.
func worktreeMayGo(ctx context.Context, c *gitx.Checkout, j *store.Job, force bool) error {
	if !gc.Exists(c.Dir) {
		return nil
	}
	if on, what := c.HeadOnBranch(); !on && j.Branch != "" && !force {
		return wrongState("look at "+c.Dir+" and put what you want to keep on "+j.Branch+", or pass `force` to remove it anyway",
			"the worktree of job %s is not on its branch %s: %s", j.ID, j.Branch, what)
	}
	if dirty, err := c.Dirty(ctx, gc.WorktreeRev(j)); err != nil || dirty {
		why := "it has uncommitted changes made after the job ended"
		hint := "commit or discard the changes in " + c.Dir + " first"
		switch {
		case err != nil:
			why = "hub cannot tell whether it has uncommitted changes (" + err.Error() + ")"
		case job.CommitFailedIn(j.Error):
			// The worker's own changes, which hub's commit at the end could not take.
			why = "it holds changes of the worker that hub could not commit when the job ended (" + view.FirstLine(j.Error, 400) + ")"
			hint = "look at " + c.Dir + " and commit what you want to keep on " + j.Branch + ", or discard it, first"
			if j.Branch == "" {
				hint = "look at " + c.Dir + " and keep what you want of it, or discard it, first"
			}
		}
		return wrongState(hint, "the worktree of job %s: %s", j.ID, why)
	}
	return nil
}
