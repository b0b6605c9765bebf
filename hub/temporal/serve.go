package temporal

import (
	"context"
	"fmt"

	"github.com/gofrs/flock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Serve runs w as a worker of taskQueue with at most slots jobs at once,
// until ctx ends. It holds its HUB_HOME's daemon lock: a hub daemon there
// would take the worker's jobs for its own.
func (w *Worker) Serve(ctx context.Context, taskQueue string, slots int) error {
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
