package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// cleanup removes an ended job's worktree; the branch stays unless asked.
// The record stays readable.
func (s *Server) cleanup(ctx context.Context, p protocol.CleanupParams) (*protocol.CleanupResult, error) {
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
	res.WorktreeRemoved, err = s.removeCheckouts(ctx, repo, j.ID, j.Worktree)
	switch {
	case errors.Is(err, errDirtyWorktree):
		return nil, wrongState("commit or discard the changes in "+j.Worktree+" first",
			"the worktree of job %s has uncommitted changes made after the job ended", j.ID)
	case err != nil:
		return nil, internal(err)
	}
	if p.DeleteBranch && j.Branch != "" {
		if err := gitx.DeleteBranch(ctx, repo, j.Branch); err != nil {
			return nil, internal(err)
		}
		res.BranchDeleted = true
	}
	if err := s.st.Update(ctx, j.ID, func(r *store.Job) error { r.Worktree = ""; return nil }); err != nil {
		return nil, internal(err)
	}
	text := "worktree removed"
	if res.BranchDeleted {
		text += fmt.Sprintf(", branch %s deleted", j.Branch)
	}
	_, _ = s.st.AppendEvent(ctx, j.ID, protocol.EventNote, "cleanup: "+text, nil, now())
	s.poke()
	return res, nil
}

// errDirtyWorktree: a worktree has changes made after its job ended. hub never
// removes one: cleanup refuses, gc keeps it.
var errDirtyWorktree = errors.New("the worktree has uncommitted changes")

// removeCheckouts removes job id's worktree at wt (unless it has uncommitted
// changes: errDirtyWorktree) and its verify tree, and reports whether the
// worktree was there to remove. Cleanup and gc share it; the caller holds
// the repo's lock.
func (s *Server) removeCheckouts(ctx context.Context, repo *gitx.Repo, id, wt string) (removed bool, err error) {
	if wt != "" {
		if _, err := os.Stat(wt); err == nil {
			if dirty, _ := gitx.Dirty(ctx, wt); dirty {
				return false, errDirtyWorktree
			}
			if err := gitx.RemoveWorktree(ctx, repo, wt, false); err != nil {
				return false, err
			}
			removed = true
		}
	}
	_ = gitx.RemoveWorktree(ctx, repo, s.o.Paths.VerifyTree(id), true)
	return removed, nil
}
