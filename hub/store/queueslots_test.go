//go:build unix

package store

import (
	"context"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// A remote queue's jobs take its slots, not this machine's: a full queue
// holds its own jobs back and nobody else's, and the other way round.
func TestAdmitQueueSlots(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	lim := Limits{MaxRunning: 1, MonthlyCap: 1_000_000, QueueSlots: map[string]int{"far": 2}}
	remote := func(id, queue string) {
		t.Helper()
		spec, err := EncodeSpec(protocol.StartParams{Task: "t", Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		j := &Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Repo: "/src/repo", Task: "t", Branch: "hub/" + id, Spec: spec}
		if err := s.CreateJob(ctx, j, c.now()); err != nil {
			t.Fatal(err)
		}
	}
	admit := func(id string) Admission {
		t.Helper()
		adm, err := s.Admit(ctx, id, lim, c.now())
		if err != nil {
			t.Fatal(err)
		}
		return adm
	}
	newJob(t, s, c, "local1", 0)
	newJob(t, s, c, "local2", 0)
	remote("far1", "far")
	remote("far2", "far")
	remote("far3", "far")
	if !admit("local1").Admitted || !admit("far1").Admitted || !admit("far2").Admitted {
		t.Fatal("a job with a free slot was not admitted")
	}
	if got := admit("far3"); got.Admitted || got.Reason != "all 2 slots of queue far are busy" {
		t.Errorf("far3: %+v", got)
	}
	if got := admit("local2"); got.Admitted || got.Reason != "all 1 slots are busy" {
		t.Errorf("local2: %+v", got)
	}
	remote("gone1", "gone")
	if got := admit("gone1"); got.Admitted || got.Reason != "queue gone is not in config.json: put it back, or stop the job" {
		t.Errorf("a job of a queue no longer configured: %+v", got)
	}
	held, err := s.SlotsHeld(ctx)
	if err != nil || len(held) != 2 || held[""] != 1 || held["far"] != 2 {
		t.Errorf("SlotsHeld = %v, %v", held, err)
	}
}
