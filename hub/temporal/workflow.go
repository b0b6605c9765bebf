package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// HeartbeatTimeout is how long a worker may go without a heartbeat before
// Temporal takes its attempt for dead and retries the job elsewhere.
const HeartbeatTimeout = 10 * time.Second

// Attempts is how many workers a job is tried on.
const Attempts = 3

// JobWorkflow runs one job: its activity on some worker of the task queue,
// retried on another when a worker dies, while it keeps the questions the
// worker asked so a reply is taken once, for a question that was asked.
func JobWorkflow(ctx workflow.Context, in Input) (*Ending, error) {
	p, err := store.DecodeSpec(in.Spec)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("the job's spec: "+err.Error(), "spec", err)
	}
	asked, answered := map[string]bool{}, map[string]bool{}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateReply,
		func(ctx workflow.Context, r Reply) error {
			answered[r.QuestionID] = true
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r Reply) error {
			switch {
			case !asked[r.QuestionID]:
				return fmt.Errorf("the worker asked no question %s", r.QuestionID)
			case answered[r.QuestionID]:
				return fmt.Errorf("question %s was already answered, or expired", r.QuestionID)
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	var status Status
	err = workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) {
		st := status
		st.Pending = nil
		for id := range asked {
			if !answered[id] {
				st.Pending = append(st.Pending, id)
			}
		}
		sort.Strings(st.Pending)
		return st, nil
	})
	if err != nil {
		return nil, err
	}
	events := workflow.GetSignalChannel(ctx, SignalEvents)
	steers := workflow.GetSignalChannel(ctx, SignalSteer)

	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Timeout(p),
		HeartbeatTimeout:    HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: Attempts},
	})
	var (
		end  *Ending
		done bool
		rerr error
	)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.ExecuteActivity(actx, ActivityName, in), func(f workflow.Future) {
		rerr = f.Get(ctx, &end)
		done = true
	})
	sel.AddReceive(events, func(c workflow.ReceiveChannel, _ bool) {
		var batch []Event
		c.Receive(ctx, &batch)
		status.Events += len(batch)
		for _, e := range batch {
			if e.Kind == protocol.EventProgress || e.Kind == protocol.EventState {
				status.Last = e.Text
			}
			switch {
			case e.Question != nil:
				asked[e.Question.ID] = true
			case e.Kind == protocol.EventAnswer:
				if id := answeredID(e); id != "" {
					answered[id] = true
				}
			}
		}
	})
	sel.AddReceive(steers, func(c workflow.ReceiveChannel, _ bool) {
		var s string
		c.Receive(ctx, &s) // its record is the history; the worker reads it there
		status.Steers++
	})
	for !done {
		sel.Select(ctx)
	}
	status.Done = true
	// Signals that came with the ending are in the history; take them so
	// the workflow does not end with some unread.
	for events.ReceiveAsync(nil) || steers.ReceiveAsync(nil) {
	}
	var canceled *temporal.CanceledError
	if rerr != nil && errors.As(rerr, &canceled) {
		return nil, temporal.NewCanceledError("stopped before a worker ran it")
	}
	return end, rerr
}

// answeredID is the question an answer event settles.
func answeredID(e Event) string {
	var d struct {
		QuestionID string `json:"question_id"`
	}
	if len(e.Data) == 0 {
		return ""
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return ""
	}
	return d.QuestionID
}
