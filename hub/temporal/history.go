package temporal

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// followHistory calls fn with each event of a workflow's history, once and
// in order, as they are written, until fn says it is done or ctx ends. A
// read that fails (Temporal restarting) is made again from the start,
// skipping the events fn had.
func followHistory(ctx context.Context, c client.Client, id, runID string, log zerolog.Logger,
	fn func(*history.HistoryEvent) (done bool)) error {
	var last int64
	for {
		it := c.GetWorkflowHistory(ctx, id, runID, true, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				log.Warn().Err(err).Msg("read the workflow's history; reading again")
				break
			}
			if ev.GetEventId() <= last {
				continue
			}
			last = ev.GetEventId()
			if fn(ev) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
