package router

import (
	"strings"
	"testing"
	"time"
)

// engine auto runs a job here while this machine has a slot, else on the
// queue with the most free slots that has workers, else here, waiting; and
// says why each way.
func TestPlace(t *testing.T) {
	here := func(free int) Place { return Place{Slots: 4, Free: free} }
	far := Place{Queue: "far", Slots: 8, Free: 3, Workers: 2}
	big := Place{Queue: "big", Slots: 16, Free: 10, Workers: 1}
	for _, c := range []struct {
		name   string
		req    Request
		places []Place
		queue  string
		why    string // nothing: no place term
	}{
		{"no queues", Request{}, []Place{here(0)}, "", ""},
		{"a slot here", Request{}, []Place{here(1), far}, "", "here: 1 of this machine's 4 slots free"},
		{"busy here, the freest queue", Request{}, []Place{here(0), far, big}, "big",
			"queue big: this machine's 4 slots are busy; big has 10 of 16 slots free and 1 worker(s)"},
		{"busy everywhere", Request{}, []Place{here(0), {Queue: "far", Slots: 8, Workers: 2}, {Queue: "big", Slots: 2, Free: 2},
			{Queue: "down", Slots: 2, Free: 2, Workers: 1, Health: "Temporal at t:7233 is not answering"}}, "",
			"here, waiting for a slot: this machine's 4 slots are busy, and no queue can take it (big: no worker polling it; down: Temporal at t:7233 is not answering; far: all 8 slots busy)"},
		{"engine named", Request{Engine: "exec"}, []Place{here(0), far}, "", ""},
		{"read-only in a plain directory", Request{ReadOnly: true}, []Place{here(0), far}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Kind, c.req.Isolation = "write", "worktree"
			snap := Snapshot{Now: time.Unix(0, 0), Engines: []Engine{{Name: "exec", Isolation: []string{"worktree"}, ReadOnly: true, Pays: "free", Installed: true}},
				Money: Money{CapMicros: 100e6}, Places: c.places}
			d := Decide(c.req, snap, Weights{})
			if d.Chosen != "exec" {
				t.Fatalf("chosen %q: %s", d.Chosen, d.Refusal)
			}
			switch {
			case c.why == "" && d.Where != nil:
				t.Errorf("a place term: %+v", d.Where)
			case c.why != "" && (d.Where == nil || d.Where.Queue != c.queue || d.Where.Why != c.why):
				t.Errorf("where = %+v, want queue %q, %q", d.Where, c.queue, c.why)
			case c.why != "" && !strings.Contains(d.Text(), "where: "+c.why+"\n"):
				t.Errorf("explain does not say where:\n%s", d.Text())
			}
		})
	}
}
