package e2e

import (
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestEvidenceTimings: the evidence's phases are the time between the job's
// state events, so each phase is what the journal shows: a worker that runs
// about a second, waits a second for an answer and runs again, then a check
// of about a second.
func TestEvidenceTimings(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "timed",
		Repo: repo, Engine: "exec", Exec: `sleep 1; hub ask "go on?" > a.txt; sleep 1`, Verify: "sleep 1"})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })
	time.Sleep(time.Second)
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "yes"})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	res := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	if res.State != protocol.StateSucceeded || res.Evidence == nil {
		t.Fatalf("job ended %s with evidence %v:\n%s", res.State, res.Evidence != nil, res.Summary)
	}
	got := res.Evidence.Timings

	// The journal's state times, phase by phase.
	evs := hubtest.Daemon(t, c).JobEvents(ctx, protocol.EventsParams{ID: r.ID})
	var want protocol.Timings
	var first, last time.Time
	var in protocol.State
	for _, e := range evs.Events {
		if e.Kind != protocol.EventState {
			continue
		}
		if first.IsZero() {
			first = e.At
		} else {
			d := e.At.Sub(last).Milliseconds()
			switch in {
			case protocol.StateQueued:
				want.QueuedMS += d
			case protocol.StatePreparing:
				want.PreparingMS += d
			case protocol.StateRunning:
				want.RunningMS += d
			case protocol.StateNeedsInput:
				want.RunningMS += d
				want.NeedsInputMS += d
			case protocol.StateVerifying:
				want.VerifyingMS += d
			}
		}
		last, in = e.At, protocol.State(e.Text)
	}
	if in != protocol.StateSucceeded {
		t.Fatalf("the journal's last state is %q", in)
	}
	want.TotalMS = last.Sub(first).Milliseconds()
	want.SetupMS = got.SetupMS
	if want != got {
		t.Errorf("evidence timings %+v, journal's state times %+v", got, want)
	}
	if got.SetupMS > got.PreparingMS {
		t.Errorf("setup %d ms is more than preparing %d ms", got.SetupMS, got.PreparingMS)
	}
	// What the worker and the check did: at least their sleeps.
	for _, c := range []struct {
		name string
		ms   int64
		min  int64
	}{
		{"running", got.RunningMS, 2900}, {"needs_input", got.NeedsInputMS, 900}, {"verifying", got.VerifyingMS, 950},
	} {
		if c.ms < c.min {
			t.Errorf("%s %d ms, want at least %d ms (%+v)", c.name, c.ms, c.min, got)
		}
	}
	if sum := got.QueuedMS + got.PreparingMS + got.RunningMS + got.VerifyingMS; sum != got.TotalMS {
		t.Errorf("phases add up to %d ms, total %d ms", sum, got.TotalMS)
	}
}
