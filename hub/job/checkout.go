package job

import (
	"os"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// PrivateGit says whether a job at this isolation gets a private checkout
// (a git dir of its own, the user's objects read-only) rather than a
// linked worktree of the user's repository: at the levels that fence the
// worker, where the user's repository must stay out of its reach.
func PrivateGit(isolation protocol.Isolation) bool { return engine.Sandboxed(isolation) }

// Checkout is job j's checkout in repo as hub made it, from HUB_HOME and
// the job alone — never from what the checkout's .git says, which the
// worker may have rewritten.
func Checkout(p config.Paths, j *store.Job, repo *gitx.Repo) *gitx.Checkout {
	dir := p.Worktree(j.ID)
	c := &gitx.Checkout{Repo: repo, Dir: dir, Index: p.HubIndex(j.ID), Branch: j.Branch, Private: PrivateGit(j.Isolation)}
	c.GitDir = gitx.LinkedGitDir(repo, dir)
	if c.Private {
		c.GitDir = p.JobGitDir(j.ID)
		if _, err := os.Stat(c.GitDir); err != nil {
			// Made by a hub from before private checkouts: a linked worktree.
			if _, lerr := os.Stat(gitx.LinkedGitDir(repo, dir)); lerr == nil {
				c.Private, c.GitDir = false, gitx.LinkedGitDir(repo, dir)
			}
		}
	}
	return c
}

// VerifyCheckout is the clean, detached checkout job id's verify runs in.
func VerifyCheckout(p config.Paths, id string, repo *gitx.Repo) *gitx.Checkout {
	return &gitx.Checkout{Repo: repo, Dir: p.VerifyTree(id), GitDir: p.VerifyGitDir(id), Index: p.VerifyIndex(id), Private: true}
}
