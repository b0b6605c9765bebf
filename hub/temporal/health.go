package temporal

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/client"
)

// Health is what the runner says of a queue for the hub's router (the
// daemon reads it from `hub-temporal health <queue>`): the workers seen
// polling its task queue lately.
type Health struct {
	Workers    int      `json:"workers"`
	Identities []string `json:"identities,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// workerSeen is how recently a worker must have polled to count as live.
const workerSeen = time.Minute

// QueueHealth asks Temporal which workers poll the task queue for jobs,
// over all its partitions.
func QueueHealth(ctx context.Context, c client.Client, taskQueue string) Health {
	d, err := c.DescribeTaskQueueEnhanced(ctx, client.DescribeTaskQueueEnhancedOptions{TaskQueue: taskQueue,
		TaskQueueTypes: []client.TaskQueueType{client.TaskQueueTypeActivity}, ReportPollers: true})
	if err != nil {
		return Health{Error: fmt.Sprintf("Temporal did not describe task queue %s: %v", taskQueue, err)}
	}
	seen := map[string]bool{}
	for _, v := range d.VersionsInfo {
		for _, info := range v.TypesInfo {
			for _, p := range info.Pollers {
				if time.Since(p.LastAccessTime) < workerSeen {
					seen[p.Identity] = true
				}
			}
		}
	}
	h := Health{Workers: len(seen)}
	for id := range seen {
		h.Identities = append(h.Identities, id)
	}
	sort.Strings(h.Identities)
	return h
}
