package shim

import (
	"context"
	"fmt"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
)

// A job in a linked worktree (isolation worktree and sandbox) shares its
// repository's git config and hooks folder with the user's own checkout:
// whatever runs there as the user — its setup, installs, the worker — can
// write them (husky's `git config core.hooksPath .husky/_`, lefthook's hook
// scripts). hub cannot stop that, so the shim watches them from before the
// job's first command (gitx.WatchShared), puts back whatever changed once
// the job's commands ended, keeps what it replaced in the job's folder, and
// reports each change with the job's alerts. A private checkout (isolated,
// untrusted) has a git dir of its own: nothing is shared to watch.

// watchShared starts the watch over the job's repository, once its linked
// checkout exists. Failing to watch never fails the job: the journal says so.
func (s *shim) watchShared(ctx context.Context) {
	if s.checkout == nil || s.checkout.Private || s.repo == nil {
		return
	}
	w, err := gitx.WatchShared(s.o.Paths.SharedDir(), s.repo, s.job.ID)
	if err != nil {
		s.record(ctx, protocol.EventNote, "hub could not watch the repository's shared git config and hooks for this job: "+err.Error()+
			"; a change an install or the worker makes to them is not put back", nil)
		return
	}
	s.shared = w
}

// restoreShared puts back what changed in the shared config and hooks
// since the watch began, and records it. It runs when no command of the
// job runs: after the worker, and at the job's end (setup or verify may
// have run since).
func (s *shim) restoreShared(ctx context.Context) {
	if s.shared == nil {
		return
	}
	changes, err := s.shared.Restore(s.o.Paths.SharedKeep(s.job.ID))
	for _, c := range changes {
		rc := protocol.RepoChange{What: c.What, Path: c.Path, Found: s.red.String(c.Found), Done: c.Done, Others: c.Others}
		s.repoChanges = append(s.repoChanges, rc)
		s.record(ctx, protocol.EventNote, fmt.Sprintf("the repository's shared %s changed while the job ran: %s; hub %s", c.What, rc.Found, rc.Done), rc)
	}
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("put back the repository's shared config and hooks")
	}
}

// closeShared ends the watch: the last job of the repository to end drops
// the baseline.
func (s *shim) closeShared() {
	if s.shared != nil {
		_ = s.shared.Close()
		s.shared = nil
	}
}
