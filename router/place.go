package router

import (
	"fmt"
	"sort"
)

// Place is where a job can run, as the snapshot saw it: this machine (Queue
// "") or a remote queue that takes jobs engine auto sends it.
type Place struct {
	Queue string `json:"queue,omitempty"`
	Slots int    `json:"slots"` // its jobs at once
	Free  int    `json:"free"`  // slots free now
	// Workers are a queue's workers seen polling it lately; Health says
	// why the queue cannot take work now ("" when it can).
	Workers int    `json:"workers,omitempty"`
	Health  string `json:"health,omitempty"`
}

// Where is the place term of a decision: where the job runs, and why.
type Where struct {
	Queue string `json:"queue,omitempty"` // "" for this machine
	Why   string `json:"why"`
}

// place decides where an auto job runs: here while this machine has a free
// slot; else on the remote queue with the most free slots among those with
// live workers; else here, waiting for a slot. The queue must still run the
// engine the ranking chose (the workers of a queue are set up as this
// machine is).
func place(req Request, places []Place) *Where {
	if !req.Auto() || req.ReadOnly || len(places) < 2 || places[0].Queue != "" {
		return nil
	}
	here := places[0]
	if here.Free > 0 {
		return &Where{Why: fmt.Sprintf("here: %d of this machine's %d slots free", here.Free, here.Slots)}
	}
	queues := append([]Place(nil), places[1:]...)
	sort.SliceStable(queues, func(i, j int) bool { return queues[i].Free > queues[j].Free })
	var down []string
	for _, q := range queues {
		switch {
		case q.Health != "":
			down = append(down, fmt.Sprintf("%s: %s", q.Queue, q.Health))
		case q.Workers == 0:
			down = append(down, q.Queue+": no worker polling it")
		case q.Free == 0:
			down = append(down, fmt.Sprintf("%s: all %d slots busy", q.Queue, q.Slots))
		default:
			return &Where{Queue: q.Queue, Why: fmt.Sprintf("queue %s: this machine's %d slots are busy; %s has %d of %d slots free and %d worker(s)",
				q.Queue, here.Slots, q.Queue, q.Free, q.Slots, q.Workers)}
		}
	}
	why := fmt.Sprintf("here, waiting for a slot: this machine's %d slots are busy, and no queue can take it (", here.Slots)
	for i, d := range down {
		if i > 0 {
			why += "; "
		}
		why += d
	}
	return &Where{Why: why + ")"}
}
