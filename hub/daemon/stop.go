package daemon

import (
	"context"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
)

// JobStop ends a job: a queued one at once, an active one through its shim,
// which stops the worker's process group, commits what it left and closes
// the job as cancelled.
func (s *Server) JobStop(ctx context.Context, p protocol.IDParams) (*protocol.JobStatus, error) {
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	if err := refuseOwnWorker(ctx, j, "stop"); err != nil {
		return nil, err
	}
	switch {
	case j.State.Terminal():
		return nil, wrongState("read its result, or cleanup", "job %s has already ended (%s)", j.ID, j.State)
	case j.State == protocol.StateQueued:
		_, err := job.Close(ctx, s.st, j, job.End{State: protocol.StateCancelled, Reason: "stopped before it started",
			Head: j.BaseSHA, CostKnown: true}, s.now())
		if err != nil {
			return nil, internal(err)
		}
	default:
		if err := s.callShim(ctx, j.ID, func(c protocol.ShimClient) error {
			_, err := c.ShimStop(ctx, protocol.ShimStopParams{Reason: "stopped by request"})
			return err
		}); err != nil {
			lock := flock.New(s.o.Paths.ShimLock(j.ID))
			if ok, _ := lock.TryLock(); !ok {
				return nil, err
			}
			s.settle(ctx, j.ID, "stopped by request; the job's shim was gone")
			lock.Unlock()
		}
		// Stop returns once the job has ended, or after a bound.
		deadline := time.NewTimer(15 * time.Second)
		defer deadline.Stop()
		for {
			ch := s.changedCh()
			cur, err := s.st.Job(ctx, j.ID)
			if err != nil || cur.State.Terminal() {
				break
			}
			select {
			case <-ch:
				continue
			case <-deadline.C:
			case <-ctx.Done():
			}
			break
		}
	}
	s.poke()
	return s.JobStatus(ctx, protocol.IDParams{ID: j.ID})
}
