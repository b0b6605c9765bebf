package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

const (
	maxWait     = time.Hour
	waitRecheck = 5 * time.Second
)

// finalCheck reads the jobs once more at the timeout, so the answer shows
// them as they are now, not as they were at the last wake-up.
func (s *Server) finalCheck(ctx context.Context, p protocol.WaitParams, last *protocol.WaitResult) (*protocol.WaitResult, error) {
	res, err := s.check(ctx, p)
	if err != nil {
		return last, nil
	}
	return res, nil
}

// JobWait returns as soon as every job (or one, with Any) has ended or asks a
// question newer than Since, or at the timeout with Done false.
func (s *Server) JobWait(ctx context.Context, p protocol.WaitParams) (*protocol.WaitResult, error) {
	if len(p.IDs) == 0 {
		return nil, invalid("ids", "pass the ids that start returned", "ids is empty")
	}
	timeout := 300 * time.Second
	if p.TimeoutS < 0 {
		return nil, invalid("timeout_s", "pass a number of seconds, or 0 for the default 300", "timeout_s is negative")
	}
	if p.TimeoutS > 0 {
		timeout = time.Duration(p.TimeoutS * float64(time.Second))
	}
	if timeout > maxWait {
		timeout = maxWait
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// Wake-ups are pushed by shims; a look at the store now and then makes
	// one that never came (a shim killed between its write and its word to
	// the daemon) cost seconds, not the whole wait.
	recheck := time.NewTicker(waitRecheck)
	defer recheck.Stop()
	for {
		ch := s.changedCh()
		res, err := s.check(ctx, p)
		if err != nil {
			return nil, err
		}
		if res.Done {
			return res, nil
		}
		select {
		case <-ch:
		case <-recheck.C:
		case <-timer.C:
			return s.finalCheck(ctx, p, res)
		case <-s.gate.Draining():
			return nil, shuttingDown() // the next daemon answers it whole
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *Server) check(ctx context.Context, p protocol.WaitParams) (*protocol.WaitResult, error) {
	cursor, err := s.st.LastCursor(ctx)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.WaitResult{Cursor: cursor, Jobs: []protocol.JobStatus{}}
	ready, known := 0, 0
	seen := map[string]bool{}
	for _, id := range p.IDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		st, err := s.status(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			res.Unknown = append(res.Unknown, id)
			continue
		}
		if err != nil {
			return nil, internal(err)
		}
		known++
		res.Jobs = append(res.Jobs, st)
		if st.State.Terminal() || (st.Question != nil && st.Question.Cursor > p.Since) {
			ready++
		}
	}
	if known == 0 {
		return nil, rpc.Errorf(protocol.CodeNotFound, "pass the ids that start returned", "no job has any of the ids %v", res.Unknown)
	}
	res.Done = ready == known || (p.Any && ready > 0)
	return res, nil
}
