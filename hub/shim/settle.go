package shim

import (
	"context"
	"os"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// Settle ends a job whose shim is gone: the engine's process group is
// stopped (only if its leader is still the process recorded), whatever the
// worktree holds is committed as salvage, and the job is closed as failed with
// its reservation. The cost of an engine that pays with money is unknown
// here, so the whole reservation is charged. The caller must hold the job's
// shim lock, so no shim can be running it.
func Settle(ctx context.Context, st *store.Store, reg *engine.Registry, paths config.Paths, j *store.Job, reason string) error {
	if j.State.Terminal() {
		return nil
	}
	if j.EnginePGID > 0 {
		proc.StopGroup(j.EnginePGID, j.EngineStart, 2*time.Second)
	}
	// The shim leads a session of its own (the daemon starts it with
	// setsid): whatever it had running when it died — git and the filters
	// git runs, a verify command and its children — is still in that
	// session. Stop it before committing, or a git the dead shim started
	// races this commit for the index, and a verify runs on for nobody.
	if j.ShimPID > 0 && j.ShimPID != os.Getpid() { // never its own: a shim in the daemon's process (tests)
		proc.StopSession(j.ShimPID, j.ShimStart, 2*time.Second)
	}
	head, salvaged := j.BaseSHA, false
	var commitErr error
	var repairs []protocol.GitRepair
	if j.Kind == protocol.KindWrite && j.Worktree != "" {
		// The same commit a live shim makes: hub's own, on the job's
		// branch, whatever the worker did to its git state.
		repo, err := gitx.Open(j.Repo)
		if err == nil {
			var res gitx.CommitResult
			maxFile := int64(config.Defaults().MaxFileMB) << 20
			if p, derr := store.DecodeSpec(j.Spec); derr == nil && p.Limits != nil {
				maxFile = int64(p.Limits.FileMB) << 20
			}
			res, err = commitCheckout(ctx, paths, j, job.Checkout(paths, j, repo), true, nil, maxFile)
			if res.Head != "" {
				head, salvaged = res.Head, res.Committed
			}
			red := secrets()
			for _, r := range res.Repairs {
				repairs = append(repairs, protocol.GitRepair{What: r.What, Found: red.String(r.Found), Done: red.String(r.Done)})
			}
		}
		commitErr = err
	}
	msg := reason
	switch {
	case commitErr != nil:
		msg += "; " + job.CommitFailed + " (" + commitErr.Error() + "), the files stay in " + j.Worktree
	case salvaged:
		msg += "; its partial work was committed as salvage on " + j.Branch
	}
	costKnown := false
	if e, ok := reg.Get(j.Engine); ok && e.Capabilities().Pays == protocol.PaysFree {
		costKnown = true
	}
	ev := job.Evidence(ctx, j, head)
	ev.Observed.GitRepairs = repairs
	_, err := job.Close(ctx, st, j, job.End{State: protocol.StateFailed, Reason: msg, Head: head, Salvaged: salvaged,
		CostKnown: costKnown, Evidence: ev}, time.Now().UTC())
	return err
}
