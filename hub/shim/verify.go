package shim

import (
	"context"
	"errors"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// verify runs the caller's check on the head commit in a clean detached
// checkout of its own, with its own timeout.
func (s *shim) verify(ctx context.Context, head string, end *ending) *protocol.Verify {
	if err := s.setState(ctx, protocol.StateVerifying, ""); err != nil {
		end.state, end.err = protocol.StateFailed, err.Error()
		return nil
	}
	v, err := Checker{&s.core}.Run(ctx, head, s.params.Verify, time.Duration(s.params.VerifyTimeoutS)*time.Second)
	var f *CheckFailure
	if errors.As(err, &f) {
		end.state, end.err, end.category = f.State, f.Reason, f.Category
	}
	return v
}

// watchStop hands the job's stop on to one command hub runs itself: the
// shim's stop channel carries one reason for the whole job, and the
// returned channel gets it while the command runs (until cancel).
func (s *core) watchStop(ctx context.Context) (<-chan string, context.CancelFunc) {
	stop := make(chan string, 1)
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case reason := <-s.stopCh:
			stop <- reason
		case <-wctx.Done():
		}
	}()
	return stop, cancel
}
