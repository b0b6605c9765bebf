package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// Check runs command on commit, a commit of ended job id's repository (its
// work integrated with a target's tip, for hub land), exactly as the job's
// verify ran: a clean checkout of its own with the job's .worktreeinclude
// files, dependencies and setup, behind the job's sandbox at the isolated
// levels, bounded by timeout. stop, when it gets a reason, stops the check.
// The outcome is the check's; err says why it could not be run or passed
// (nil: it ran and exited 0). Nothing of the job's record changes.
func Check(ctx context.Context, o Options, st *store.Store, id, commit, command string, timeout time.Duration, stop <-chan string) (*protocol.Verify, error) {
	if o.StopGrace == 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.HubBinary == "" {
		o.HubBinary, _ = os.Executable()
	}
	j, err := st.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if !j.State.Terminal() {
		return nil, fmt.Errorf("job %s is %s; only an ended job's work is checked for landing", j.ID, j.State)
	}
	if err := os.MkdirAll(o.Paths.JobDir(j.ID), 0o700); err != nil {
		return nil, err
	}
	s := &shim{o: o, st: st, job: j, notes: NewNotifier(o.Paths.Socket(), j.ID), activity: make(chan struct{}, 1),
		stopCh: make(chan string, 1), waiting: map[string]chan string{}, red: secrets(), self: os.Getpid(), landing: true}
	if s.params, err = store.DecodeSpec(j.Spec); err != nil {
		return nil, err
	}
	if s.repo, err = gitx.Open(j.Repo); err != nil {
		return nil, err
	}
	defer func() { s.ports.release() }()
	if stop != nil {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case r := <-stop:
				s.requestStop(r)
			case <-cctx.Done():
			}
		}()
	}
	// The job's limits hold for its landing's check too.
	s.startLimits(ctx, j.ID+"_land")
	var end ending
	v := s.check(ctx, commit, command, timeout, &end)
	s.checkLimits(ctx)
	s.stopLimits()
	s.limitEnding(&end)
	s.waitKeeps()
	switch {
	case end.err != "":
		return v, errors.New(end.err)
	case v == nil:
		return nil, errors.New("the check did not run")
	}
	return v, nil
}
