// Package gitx is hub's small layer over git. It owns every git operation hub
// performs on a user's repository: opening and validating it, resolving the
// base commit of a job, the per-repo lock, the job's worktree and branch, and
// reading back what a job changed (status, diff, log, patch).
//
// Every write (worktrees, branches, commits) goes through the git CLI, which
// takes git's own lock files and so stays safe next to an agent running git
// in the same worktree. Fast read-only lookups (opening a repo, resolving a
// revision) go through go-git in-process, because they sit on the hot path of
// `start` and must not pay for a process.
//
// gitx must never run the user's hooks or fsmonitor, never sign, never prompt
// on a terminal, and never write hub's own state (such as lock files) into the
// user's repository.
package gitx
