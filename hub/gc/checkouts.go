package gc

import (
	"context"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/store"
)

// WorktreeRev is what an ended job's worktree is compared with to tell
// later changes: its branch, or the base of a detached checkout.
func WorktreeRev(j *store.Job) string {
	if j.Branch != "" {
		return ""
	}
	return j.BaseSHA
}

// RemoveCheckouts removes job id's checkout c, its verify tree and a
// rebase's scratch worktree, and
// reports whether the worktree was there to remove. The caller decided it
// may go (cleanup and gc share this) and holds the repo's lock.
func RemoveCheckouts(ctx context.Context, paths config.Paths, c *gitx.Checkout, id string) (removed bool, err error) {
	if Exists(c.Dir) {
		if err := c.Remove(ctx); err != nil {
			return false, err
		}
		removed = true
	} else {
		_ = c.Remove(ctx) // a stale worktree entry, a private git dir left
	}
	_ = job.VerifyCheckout(paths, id, c.Repo).Remove(ctx)
	// A rebase's scratch worktree, left by a hub that died while it landed.
	_ = gitx.RemoveWorktree(ctx, c.Repo, paths.LandTree(id), true)
	return removed, nil
}
