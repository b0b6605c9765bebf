package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/internal/hubtest/world"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// These tests drive the daemon in-process (package world): its admission,
// its wake-ups, stop, settling a job whose shim died, and endings.

// stateOrder is a job's state events, in journal order, with their cursors.
func stateOrder(evs []protocol.Event) (states []string, cursors []int64) {
	for _, e := range evs {
		if e.Kind == protocol.EventState {
			states = append(states, e.Text)
			cursors = append(cursors, e.Cursor)
		}
	}
	return states, cursors
}

// TestWorldAdmission: with one slot, a second job waits queued, says why,
// and is admitted only after the first one ended and freed its slot.
func TestWorldAdmission(t *testing.T) {
	set := config.Defaults()
	set.MaxRunning = 1
	w := world.New(t, world.Options{Settings: &set})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	first := w.Start(repo, `sleep 1; echo one > one.txt`)
	w.Until(first.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	second := w.Start(repo, `echo two > two.txt`)
	if second.State != protocol.StateQueued {
		t.Fatalf("the second job is %s with the only slot taken", second.State)
	}
	st := w.Until(second.ID, func(st protocol.JobStatus) bool { return st.Progress != "" || st.State.Terminal() })
	if st.State != protocol.StateQueued || st.Progress != "waiting: all 1 slots are busy" {
		t.Errorf("the waiting job: %s, progress %q", st.State, st.Progress)
	}
	ends := w.Ended(first.ID, second.ID)
	for _, e := range ends {
		if e.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", e.ID, e.State, e.Error)
		}
	}
	_, firstCur := stateOrder(w.Events(first.ID))
	states, secondCur := stateOrder(w.Events(second.ID))
	if strings.Join(states, " ") != "queued preparing running succeeded" {
		t.Fatalf("the second job's states: %v", states)
	}
	if secondCur[1] < firstCur[len(firstCur)-1] {
		t.Errorf("the second job was admitted (cursor %d) before the first ended (cursor %d)", secondCur[1], firstCur[len(firstCur)-1])
	}
	if r, q, err := w.Store().CountActive(w.Ctx); err != nil || r != 0 || q != 0 {
		t.Errorf("after both ended: %d slots held, %d queued (%v)", r, q, err)
	}
}

// TestWorldWakeUps: a wait blocks until the job ends and wakes with its
// ending; a subscriber gets every change of the job, in cursor order, the
// last one the ending.
func TestWorldWakeUps(t *testing.T) {
	w := world.New(t, world.Options{})
	var mu sync.Mutex
	var changes []protocol.JobStatus
	sub, err := client.Connect(w.Ctx, w.Paths, client.Options{ClientName: "subscriber",
		Handler: func(_ context.Context, _ *rpc.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Method == protocol.NotifyJobChanged && req.Params != nil {
				var st protocol.JobStatus
				if err := json.Unmarshal(*req.Params, &st); err == nil {
					mu.Lock()
					changes = append(changes, st)
					mu.Unlock()
				}
			}
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	hubtest.Daemon(t, sub).Subscribe(w.Ctx, protocol.SubscribeParams{})

	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	r := w.Start(repo, `sleep 0.5; echo done > done.txt`)
	began := time.Now()
	wr := hubtest.Daemon(t, w.C).JobWait(w.Ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 60})
	if !wr.Done || len(wr.Jobs) != 1 || wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("wait woke with %+v", wr)
	}
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("wait returned after %s, before the job could end", took)
	}
	evs := w.Events(r.ID)
	if last := evs[len(evs)-1]; wr.Jobs[0].Cursor != last.Cursor {
		t.Errorf("wait woke at cursor %d; the job's last event is %d", wr.Jobs[0].Cursor, last.Cursor)
	}
	// The subscriber hears the ending too.
	w.Until(r.ID, func(protocol.JobStatus) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changes) > 0 && changes[len(changes)-1].State.Terminal()
	})
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	for i, st := range changes {
		if i > 0 && st.Cursor <= changes[i-1].Cursor {
			t.Errorf("job/changed %d has cursor %d after %d", i, st.Cursor, changes[i-1].Cursor)
		}
		if len(seen) == 0 || seen[len(seen)-1] != string(st.State) {
			seen = append(seen, string(st.State))
		}
	}
	if got := strings.Join(seen, " "); !strings.HasSuffix(got, "running succeeded") {
		t.Errorf("the subscriber saw states %q", got)
	}
}

// TestWorldStop: stop ends a running job cancelled at once, with what its
// worker wrote committed on its branch, and frees its slot.
func TestWorldStop(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	r := w.Start(repo, `echo half > half.txt; sleep 60`)
	w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	time.Sleep(200 * time.Millisecond) // the worker has written half.txt
	hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: r.ID})
	st := w.Ended(r.ID)[0]
	if st.State != protocol.StateCancelled || !st.Salvaged {
		t.Fatalf("stopped job: %s, salvaged %v: %s", st.State, st.Salvaged, st.Error)
	}
	if got := hubtest.Git(t, repo, "show", r.Branch+":half.txt"); got != "half" {
		t.Errorf("the branch has half.txt = %q", got)
	}
	if r, _, err := w.Store().CountActive(w.Ctx); err != nil || r != 0 {
		t.Errorf("%d slots held after stop (%v)", r, err)
	}
	// Stopping it again is refused, and changes nothing.
	_, err := w.C.Daemon().JobStop(w.Ctx, protocol.IDParams{ID: r.ID})
	if client.Code(err) != protocol.CodeWrongState {
		t.Errorf("a second stop: %v", err)
	}
	if again := w.Status(r.ID); again.State != protocol.StateCancelled || again.Cursor != st.Cursor {
		t.Errorf("after a second stop: %s at cursor %d (was %d)", again.State, again.Cursor, st.Cursor)
	}
}

// TestWorldSettle: a shim that dies before it does anything leaves its job
// to the daemon, which sees the lock go and settles it: failed, saying so,
// its reservation closed and its slot freed.
func TestWorldSettle(t *testing.T) {
	w := world.New(t, world.Options{Spawn: func(_ *world.World, id string, lock *os.File) error {
		return nil // the daemon's copy of the lock closes as spawn returns: a shim that died at once
	}})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	r := w.Start(repo, `echo never > never.txt`)
	st := w.Ended(r.ID)[0]
	if st.State != protocol.StateFailed || !strings.Contains(st.Error, "the job's shim died") {
		t.Fatalf("settled job: %s: %s", st.State, st.Error)
	}
	row, err := w.Store().Ledger(w.Ctx, r.ID)
	if err == nil && !row.Closed {
		t.Errorf("the reservation is still open: %+v", row)
	}
	if r, _, err := w.Store().CountActive(w.Ctx); err != nil || r != 0 {
		t.Errorf("%d slots held after settling (%v)", r, err)
	}
	states, _ := stateOrder(w.Events(r.ID))
	if got := strings.Join(states, " "); got != "queued preparing failed" {
		t.Errorf("states %q", got)
	}
}

// TestWorldEndings: how a job ends is one record — state, category, the
// evidence with its phases adding up — whichever way it ended.
func TestWorldEndings(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	cases := []struct {
		name     string
		exec     string
		verify   string
		state    protocol.State
		category string
	}{
		{"succeeds", `echo ok > ok.txt`, `test -f ok.txt`, protocol.StateSucceeded, ""},
		{"worker fails", `echo part > part.txt; exit 3`, "", protocol.StateFailed, protocol.CategoryWorker},
		{"verify fails", `echo v > v.txt`, `exit 4`, protocol.StateFailed, protocol.CategoryVerify},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = w.Start(repo, c.exec, func(p *protocol.StartParams) { p.Verify, p.Task = c.verify, c.name }).ID
	}
	w.Ended(ids...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := hubtest.Daemon(t, w.C).JobResult(w.Ctx, protocol.ResultParams{ID: ids[i], Evidence: true})
			st := w.Status(ids[i])
			if st.State != c.state || st.Category != c.category {
				t.Fatalf("ended %s (category %q): %s; want %s (%q)", st.State, st.Category, st.Error, c.state, c.category)
			}
			ev := res.Evidence
			if ev == nil || ev.State != c.state || ev.Category != c.category {
				t.Fatalf("evidence %+v", ev)
			}
			tm := ev.Timings
			if tm.QueuedMS+tm.PreparingMS+tm.RunningMS+tm.VerifyingMS != tm.TotalMS || tm.RunningMS <= 0 {
				t.Errorf("timings %+v do not add up", tm)
			}
			if (c.verify != "") != (tm.VerifyingMS > 0 || ev.Verify != nil) {
				t.Errorf("verify %q but verifying %d ms, verify %+v", c.verify, tm.VerifyingMS, ev.Verify)
			}
		})
	}
}
