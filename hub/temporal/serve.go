package temporal

import (
	"context"
	"fmt"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Serve runs w as a worker of taskQueue with at most slots jobs at once,
// until ctx ends. It holds its HUB_HOME's daemon lock: a hub daemon there
// would take the worker's jobs for its own.
func (w *Worker) Serve(ctx context.Context, taskQueue string, slots int) error {
	w.withDefaults()
	if err := w.Paths.Ensure(); err != nil {
		return err
	}
	lock := flock.New(w.Paths.DaemonLock())
	ok, err := lock.TryLock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is in use by a hub daemon or another worker; give the worker a HUB_HOME of its own", w.Paths.Home)
	}
	defer lock.Unlock()
	if err := w.settleDead(ctx); err != nil {
		return err
	}
	wk := worker.New(w.Client, taskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: slots,
		Identity:                           w.Identity,
		WorkerStopTimeout:                  HeartbeatTimeout,
	})
	wk.RegisterWorkflowWithOptions(JobWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	wk.RegisterActivityWithOptions(w.Run, activity.RegisterOptions{Name: ActivityName})
	if err := wk.Start(); err != nil {
		return err
	}
	w.Log.Info().Str("task_queue", taskQueue).Int("slots", slots).Str("home", w.Paths.Home).Msg("worker ready")
	<-ctx.Done()
	wk.Stop()
	return nil
}

// settleDead settles the jobs of this HUB_HOME an earlier worker process
// left unfinished (it was killed, or its machine went down): their work is
// committed in the clone, and nothing is left looking alive. Temporal has
// given those jobs to another attempt already.
func (w *Worker) settleDead(ctx context.Context) error {
	st, err := store.Open(w.Paths.DB())
	if err != nil {
		return err
	}
	defer st.Close()
	jobs, err := st.ListJobs(ctx, []protocol.State{protocol.StatePreparing, protocol.StateRunning, protocol.StateNeedsInput, protocol.StateVerifying}, "", 0)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		release, err := shim.TakeLock(w.Paths, j.ID)
		if err != nil {
			continue // its shim lives on, and ends it
		}
		if err := shim.Settle(ctx, st, w.Engines, w.Paths, j, "the worker that ran it died"); err != nil {
			w.Log.Warn().Err(err).Str("job", j.ID).Msg("settle a job left unfinished")
		} else {
			w.Log.Info().Str("job", j.ID).Msg("settled a job an earlier worker left unfinished")
		}
		release()
	}
	return nil
}
