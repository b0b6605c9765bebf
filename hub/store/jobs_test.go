//go:build unix

package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

func TestCreateAndReadJob(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	now := time.Date(2026, 3, 14, 9, 30, 0, 123_456_789, time.FixedZone("x", 3600))
	in := &Job{
		ID: "j1", State: protocol.StateRunning /* ignored */, Kind: protocol.KindWrite, Engine: "claude", Model: "m",
		Isolation: protocol.IsolationWorktree, Repo: "/src/r", Cwd: "/src/r/sub", BaseRef: "main", BaseSHA: "abc",
		Branch: "hub/j1", Worktree: "/home/hub/worktrees/j1", Task: "do it", Spec: []byte(`{"task":"do it"}`),
		MaxMicros: 250_000, Notes: []string{"dirty checkout"}, ShimPID: 42, ShimStart: 1 << 40, EnginePGID: 43,
		EngineStart: 99, Verify: []byte(`{"exit_code":0}`),
	}
	if err := s.CreateJob(ctx, in, now); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 14, 8, 30, 0, 123_000_000, time.UTC)
	if in.State != protocol.StateQueued || in.Seq != 1 || !in.CreatedAt.Equal(at) || in.CreatedAt.Location() != time.UTC || in.Cursor == 0 {
		t.Errorf("after CreateJob: state %s seq %d created %v cursor %d", in.State, in.Seq, in.CreatedAt, in.Cursor)
	}
	got := mustJob(t, s, "j1")
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("Job (-created +read):\n%s", diff)
	}

	second := &Job{ID: "j2", Task: "t"}
	if err := s.CreateJob(ctx, second, now); err != nil {
		t.Fatal(err)
	}
	if second.Seq != 2 {
		t.Errorf("second job seq = %d, want 2", second.Seq)
	}
	if g := mustJob(t, s, "j2"); g.Notes != nil || g.Spec != nil || !g.PreparingAt.IsZero() {
		t.Errorf("empty fields do not read back empty: %+v", g)
	}

	if err := s.CreateJob(ctx, &Job{ID: "j1"}, now); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate CreateJob = %v", err)
	}
	if err := s.CreateJob(ctx, &Job{}, now); err == nil {
		t.Error("CreateJob without id succeeded")
	}
	_, err := s.Job(ctx, "nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Job(nope) = %v, want ErrNotFound naming the id", err)
	}
	evs, err := s.Events(ctx, []string{"j1"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Cursor: in.Cursor, JobID: "j1", At: at, Kind: "state", Text: "queued"}}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func ids(jobs []*Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestListJobs(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	newJob(t, s, c, "a", 0)
	running(t, s, c, "b")
	newJob(t, s, c, "c", 0)
	other := &Job{ID: "d", Repo: "/src/other"}
	if err := s.CreateJob(ctx, other, c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "a", Ending{State: protocol.StateCancelled, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		states []protocol.State
		repo   string
		limit  int
		want   []string
	}{
		{"all newest first", nil, "", 0, []string{"d", "c", "b", "a"}},
		{"limit", nil, "", 2, []string{"d", "c"}},
		{"queued", []protocol.State{protocol.StateQueued}, "", 0, []string{"d", "c"}},
		{"two states", []protocol.State{protocol.StateRunning, protocol.StateCancelled}, "", 0, []string{"b", "a"}},
		{"repo", nil, "/src/repo", 0, []string{"c", "b", "a"}},
		{"repo and state", []protocol.State{protocol.StateQueued}, "/src/repo", 0, []string{"c"}},
		{"empty state list", []protocol.State{}, "", 0, nil},
		{"no match", nil, "/nowhere", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListJobs(ctx, tc.states, tc.repo, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	q, err := s.QueuedJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c", "d"}, ids(q)); diff != "" {
		t.Errorf("QueuedJobs oldest first (-want +got):\n%s", diff)
	}
}

func TestAdmit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	lim := Limits{MaxRunning: 2, MonthlyCap: 1_000_000}

	newJob(t, s, c, "a", 400_000)
	now := c.now()
	adm, err := s.Admit(ctx, "a", lim, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Admission{Admitted: true}, adm); diff != "" {
		t.Errorf("admit a (-want +got):\n%s", diff)
	}
	a := mustJob(t, s, "a")
	if a.State != protocol.StatePreparing || !a.PreparingAt.Equal(now) {
		t.Errorf("a is %s, preparing at %v", a.State, a.PreparingAt)
	}
	row, err := s.Ledger(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&LedgerRow{JobID: "a", Month: "2026-03", ReservedMicros: 400_000}, row); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	evs, _ := s.Events(ctx, []string{"a"}, 0, 0)
	last := evs[len(evs)-1]
	if last.Kind != "state" || last.Text != "preparing" || string(last.Data) != `{"from":"queued","reason":"admitted"}` || last.Cursor != a.Cursor {
		t.Errorf("admission event %+v (job cursor %d)", last, a.Cursor)
	}

	// Money: 400k reserved; 700k more does not fit under 1M.
	newJob(t, s, c, "big", 700_000)
	adm, err = s.Admit(ctx, "big", lim, c.now())
	if err != nil {
		t.Fatal(err)
	}
	want := Admission{Reason: "monthly cap: $0.40 of $1.00 spent or reserved; this job asks $0.70"}
	if diff := cmp.Diff(want, adm); diff != "" {
		t.Errorf("admit big (-want +got):\n%s", diff)
	}
	if j := mustJob(t, s, "big"); j.State != protocol.StateQueued {
		t.Errorf("refused job is %s", j.State)
	}
	if _, err := s.Ledger(ctx, "big"); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused job has a reservation: %v", err)
	}

	// Slots: b fills the second slot, c finds none.
	newJob(t, s, c, "b", 100_000)
	newJob(t, s, c, "c", 0)
	if adm, err := s.Admit(ctx, "b", lim, c.now()); err != nil || !adm.Admitted {
		t.Fatalf("admit b = %+v, %v", adm, err)
	}
	adm, err = s.Admit(ctx, "c", lim, c.now())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Admission{Reason: "all 2 slots are busy"}, adm); diff != "" {
		t.Errorf("admit c (-want +got):\n%s", diff)
	}
	running, queued, err := s.CountActive(ctx)
	if err != nil || running != 2 || queued != 2 {
		t.Errorf("CountActive = %d, %d, %v; want 2, 2", running, queued, err)
	}

	// Wrong state and unknown job.
	if _, err := s.Admit(ctx, "a", lim, c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "preparing") {
		t.Errorf("admit a twice = %v, want ErrWrongState naming preparing", err)
	}
	if _, err := s.Admit(ctx, "nope", lim, c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("admit nope = %v", err)
	}

	// A finished job frees its slot and its money goes from reserved to charged.
	if _, err := s.Finish(ctx, "a", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 50_000}, c.now()); err != nil {
		t.Fatal(err)
	}
	tot, err := s.MonthTotals(ctx, "2026-03")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(MonthTotals{Month: "2026-03", ChargedMicros: 50_000, ReservedMicros: 100_000}, tot); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if adm, err := s.Admit(ctx, "big", lim, c.now()); err != nil || !adm.Admitted {
		t.Errorf("admit big after a ended = %+v, %v", adm, err)
	}
	// Another month starts from nothing.
	if tot, _ := s.MonthTotals(ctx, "2026-04"); tot != (MonthTotals{Month: "2026-04"}) {
		t.Errorf("empty month totals %+v", tot)
	}
	healthy(t, s)
}

func TestSetState(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	admitted(t, s, c, "j", 0)

	t1 := c.now()
	cur, err := s.SetState(ctx, "j", []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", t1)
	if err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, s, "j")
	if j.State != protocol.StateRunning || !j.RunningAt.Equal(t1) || j.Cursor != cur || !j.UpdatedAt.Equal(t1) {
		t.Errorf("after running: %s at %v cursor %d/%d updated %v", j.State, j.RunningAt, j.Cursor, cur, j.UpdatedAt)
	}
	// Back and forth through needs_input keeps the first running stamp.
	if _, err := s.SetState(ctx, "j", []protocol.State{protocol.StateRunning}, protocol.StateNeedsInput, "q", c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetState(ctx, "j", []protocol.State{protocol.StateNeedsInput}, protocol.StateRunning, "a", c.now()); err != nil {
		t.Fatal(err)
	}
	t2 := c.now()
	if _, err := s.SetState(ctx, "j", []protocol.State{protocol.StateRunning}, protocol.StateVerifying, "verify", t2); err != nil {
		t.Fatal(err)
	}
	j = mustJob(t, s, "j")
	if !j.RunningAt.Equal(t1) || !j.VerifyingAt.Equal(t2) {
		t.Errorf("stamps: running %v want %v, verifying %v want %v", j.RunningAt, t1, j.VerifyingAt, t2)
	}
	evs, _ := s.Events(ctx, []string{"j"}, 0, 0)
	if got := string(evs[len(evs)-1].Data); got != `{"from":"running","reason":"verify"}` {
		t.Errorf("state event data %s", got)
	}

	for _, tc := range []struct {
		name string
		id   string
		from []protocol.State
		to   protocol.State
		is   error  // sentinel, or nil for a plain refusal
		says string // part of the message
	}{
		{"wrong from", "j", []protocol.State{protocol.StateRunning, protocol.StateNeedsInput}, protocol.StateVerifying, ErrWrongState, "job j is verifying, not running or needs_input"},
		{"unknown job", "nope", []protocol.State{protocol.StateRunning}, protocol.StateVerifying, ErrNotFound, "nope"},
		{"terminal", "j", []protocol.State{protocol.StateVerifying}, protocol.StateSucceeded, nil, "use Finish"},
		{"back to queued", "j", []protocol.State{protocol.StateVerifying}, protocol.StateQueued, nil, "cannot move"},
		{"into preparing", "j", []protocol.State{protocol.StateVerifying}, protocol.StatePreparing, nil, "cannot move"},
		{"unknown state", "j", []protocol.State{protocol.StateVerifying}, "dancing", nil, "unknown state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SetState(ctx, tc.id, tc.from, tc.to, "", c.now())
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want one saying %q", err, tc.says)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if tc.is == nil && (errors.Is(err, ErrWrongState) || errors.Is(err, ErrNotFound)) {
				t.Errorf("err = %v is a sentinel; it is a caller's mistake", err)
			}
		})
	}
	if j := mustJob(t, s, "j"); j.State != protocol.StateVerifying {
		t.Errorf("refusals moved the job to %s", j.State)
	}
	healthy(t, s)
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	before := newJob(t, s, c, "j", 0)

	err := s.Update(ctx, "j", func(j *Job) error {
		j.ShimPID, j.ShimStart = 7, 12345
		j.Worktree = "/wt/j"
		j.Notes = append(j.Notes, "a", "b")
		j.Verify = []byte(`{"exit_code":1}`)
		j.HeadSHA = "def"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := *before
	want.ShimPID, want.ShimStart, want.Worktree, want.Notes = 7, 12345, "/wt/j", []string{"a", "b"}
	want.Verify, want.HeadSHA = []byte(`{"exit_code":1}`), "def"
	if diff := cmp.Diff(&want, mustJob(t, s, "j")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	evs, _ := s.Events(ctx, []string{"j"}, 0, 0)
	if len(evs) != 1 {
		t.Errorf("Update appended events: %+v", evs)
	}

	boom := errors.New("boom")
	if err := s.Update(ctx, "j", func(j *Job) error { j.Task = "changed"; return boom }); !errors.Is(err, boom) {
		t.Errorf("Update with failing fn = %v", err)
	}
	if err := s.Update(ctx, "j", func(j *Job) error { j.State = protocol.StateRunning; return nil }); err == nil {
		t.Error("Update changed the state")
	}
	if err := s.Update(ctx, "j", func(j *Job) error { j.ID = "k"; return nil }); err == nil {
		t.Error("Update changed the id")
	}
	if diff := cmp.Diff(&want, mustJob(t, s, "j")); diff != "" {
		t.Errorf("aborted updates wrote (-want +got):\n%s", diff)
	}
	if err := s.Update(ctx, "nope", func(*Job) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update(nope) = %v", err)
	}
}

// TestFinishTimings: the evidence's phases are read from the job's state
// events, a question's wait counted in running and apart, a second round
// of running after a verify added up.
func TestFinishTimings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j") // queued 1s, preparing 1s
	step := func(from, to protocol.State, d time.Duration) {
		t.Helper()
		c.t = c.t.Add(d - time.Second) // c.now adds the last second
		if _, err := s.SetState(ctx, "j", []protocol.State{from}, to, "", c.now()); err != nil {
			t.Fatal(err)
		}
	}
	step(protocol.StateRunning, protocol.StateNeedsInput, 2*time.Second)
	step(protocol.StateNeedsInput, protocol.StateRunning, 5*time.Second)
	step(protocol.StateRunning, protocol.StateVerifying, 3*time.Second)
	step(protocol.StateVerifying, protocol.StateRunning, 4*time.Second)
	step(protocol.StateRunning, protocol.StateVerifying, time.Second)
	c.t = c.t.Add(6 * time.Second)
	if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateSucceeded, CostKnown: true, Evidence: &protocol.Evidence{ID: "j"}}, c.t); err != nil {
		t.Fatal(err)
	}
	var ev protocol.Evidence
	if err := json.Unmarshal(mustJob(t, s, "j").Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	want := protocol.Timings{QueuedMS: 1000, PreparingMS: 1000, RunningMS: 11_000, NeedsInputMS: 5000, VerifyingMS: 10_000, TotalMS: 23_000}
	if diff := cmp.Diff(want, ev.Timings); diff != "" {
		t.Errorf("timings (-want +got):\n%s", diff)
	}
	if ev.State != protocol.StateSucceeded {
		t.Errorf("evidence status %q", ev.State)
	}
}

func TestFinish(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, s *Store, c *clock) // creates job "j"
		ending     Ending
		wantClosed bool
		wantCost   micros.Micros
		wantRow    *LedgerRow // nil: no reservation
	}{
		{
			name:       "known cost",
			setup:      func(t *testing.T, s *Store, c *clock) { running(t, s, c, "j") },
			ending:     Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 42_000, Tokens: 900, HeadSHA: "h", Summary: "done", Evidence: &protocol.Evidence{ID: "j", Timings: protocol.Timings{SetupMS: 7}}, Text: "worker finished"},
			wantClosed: true, wantCost: 42_000,
			wantRow: &LedgerRow{JobID: "j", Month: "2026-03", ReservedMicros: 100_000, ChargedMicros: 42_000, Closed: true, CostKnown: true},
		},
		{
			name:       "unknown cost charges the reservation",
			setup:      func(t *testing.T, s *Store, c *clock) { running(t, s, c, "j") },
			ending:     Ending{State: protocol.StateFailed, CostMicros: 5, Error: "engine died", Salvaged: true},
			wantClosed: true, wantCost: 100_000,
			wantRow: &LedgerRow{JobID: "j", Month: "2026-03", ReservedMicros: 100_000, ChargedMicros: 100_000, Closed: true},
		},
		// A cost above the reservation: TestFinishOverrun (ledger_test.go).
		{
			name:     "queued job has no reservation",
			setup:    func(t *testing.T, s *Store, c *clock) { newJob(t, s, c, "j", 100_000) },
			ending:   Ending{State: protocol.StateCancelled, Text: "cancelled by caller"},
			wantCost: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			c := newClock()
			tc.setup(t, s, c)
			before := mustJob(t, s, "j")
			now := c.now()
			closed, err := s.Finish(ctx, "j", tc.ending, now)
			if err != nil {
				t.Fatal(err)
			}
			if closed != tc.wantClosed {
				t.Errorf("closed = %v, want %v", closed, tc.wantClosed)
			}
			j := mustJob(t, s, "j")
			e := tc.ending
			got := Ending{State: j.State, HeadSHA: j.HeadSHA, Salvaged: j.Salvaged, Error: j.Error, Summary: j.Summary,
				CostMicros: j.CostMicros, CostKnown: j.CostKnown, Tokens: j.Tokens, Text: e.Text}
			if j.Evidence != nil {
				got.Evidence = new(protocol.Evidence)
				if err := json.Unmarshal(j.Evidence, got.Evidence); err != nil {
					t.Fatal(err)
				}
			}
			e.CostMicros = tc.wantCost
			if e.Evidence != nil {
				// Finish stamps the state and the phases (one second
				// each on this clock: queued, preparing, running).
				ev := *e.Evidence
				ev.State = e.State
				ev.Timings = protocol.Timings{QueuedMS: 1000, PreparingMS: 1000, SetupMS: 7, RunningMS: 1000, TotalMS: 3000}
				e.Evidence = &ev
			}
			if diff := cmp.Diff(e, got); diff != "" {
				t.Errorf("job after Finish (-want +got):\n%s", diff)
			}
			if !j.EndedAt.Equal(now) {
				t.Errorf("ended at %v, want %v", j.EndedAt, now)
			}
			row, err := s.Ledger(ctx, "j")
			if tc.wantRow == nil {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("Ledger = %+v, %v; want ErrNotFound", row, err)
				}
			} else {
				want := *tc.wantRow
				want.ClosedAt = now
				if diff := cmp.Diff(&want, row); diff != "" {
					t.Errorf("ledger (-want +got):\n%s", diff)
				}
			}
			if r, _, _ := s.CountActive(ctx); r != 0 {
				t.Errorf("%d slots held after Finish", r)
			}
			evs, _ := s.Events(ctx, []string{"j"}, before.Cursor, 0)
			want := []Event{{Cursor: j.Cursor, JobID: "j", At: now, Kind: "state", Text: string(e.State),
				Data: json.RawMessage(`{"from":"` + string(before.State) + `","reason":"` + e.Text + `"}`)}}
			if diff := cmp.Diff(want, evs); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			healthy(t, s)

			// Finishing again is refused and closes nothing twice.
			closed, err = s.Finish(ctx, "j", Ending{State: protocol.StateFailed, CostKnown: true, CostMicros: 1}, c.now())
			if !errors.Is(err, ErrWrongState) || closed {
				t.Errorf("second Finish = %v, %v; want false, ErrWrongState", closed, err)
			}
			if again, _ := s.Ledger(ctx, "j"); tc.wantRow != nil && again.ChargedMicros != tc.wantRow.ChargedMicros {
				t.Errorf("second Finish changed the charge to %d", again.ChargedMicros)
			}
			if j2 := mustJob(t, s, "j"); j2.State != e.State || j2.CostMicros != tc.wantCost {
				t.Errorf("second Finish changed the job: %s %d", j2.State, j2.CostMicros)
			}
		})
	}
}

func TestFinishRefusals(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")
	if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateRunning}, c.now()); err == nil || errors.Is(err, ErrWrongState) {
		t.Errorf("Finish to running = %v, want a plain error", err)
	}
	if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: -1}, c.now()); err == nil {
		t.Error("Finish with a negative cost succeeded")
	}
	if _, err := s.Finish(ctx, "nope", Ending{State: protocol.StateFailed}, c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Finish(nope) = %v", err)
	}
	if j := mustJob(t, s, "j"); j.State != protocol.StateRunning {
		t.Errorf("refusals moved the job to %s", j.State)
	}
	healthy(t, s)
}

func TestCountActive(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	if r, q, err := s.CountActive(ctx); r != 0 || q != 0 || err != nil {
		t.Errorf("empty store: %d, %d, %v", r, q, err)
	}
	newJob(t, s, c, "q1", 0)
	newJob(t, s, c, "q2", 0)
	running(t, s, c, "r1")
	admitted(t, s, c, "p1", 0)
	running(t, s, c, "done")
	if _, err := s.Finish(ctx, "done", Ending{State: protocol.StateSucceeded, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}
	if r, q, err := s.CountActive(ctx); r != 2 || q != 2 || err != nil {
		t.Errorf("CountActive = %d, %d, %v; want 2, 2", r, q, err)
	}
}
