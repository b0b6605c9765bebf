package shim

import (
	"context"

	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// WorkerOf finds the job pid works for: the live job whose shim is an
// ancestor of pid (the shim itself excluded: it speaks for the job). A
// shim is a child subreaper, so whatever a worker started stays below it,
// even after a double fork or setsid. nil when pid is no job's worker (or
// the store cannot tell, which the caller takes as it must).
func WorkerOf(ctx context.Context, st *store.Store, pid int) (*store.Job, error) {
	if pid <= 0 {
		return nil, nil
	}
	jobs, err := st.ListJobs(ctx, []protocol.State{protocol.StatePreparing, protocol.StateRunning, protocol.StateNeedsInput,
		protocol.StateVerifying}, "", 0)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.ShimPID > 0 && pid != j.ShimPID && proc.Same(j.ShimPID, j.ShimStart) && proc.IsDescendant(pid, j.ShimPID) {
			return j, nil
		}
	}
	return nil, nil
}
