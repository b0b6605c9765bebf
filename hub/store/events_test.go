//go:build unix

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

func TestAppendEventAndRead(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	a := newJob(t, s, c, "a", 0)
	b := newJob(t, s, c, "b", 0)

	type payload struct {
		SHA string `json:"sha"`
	}
	appends := []struct {
		job      string
		kind     protocol.EventKind
		text     string
		data     any
		wantData string
	}{
		{"a", protocol.EventProgress, "reading code", nil, ""},
		{"b", protocol.EventCommit, "", payload{SHA: "abc"}, `{"sha":"abc"}`},
		{"a", protocol.EventCommand, "", json.RawMessage(`{"command":"go test","exit_code":0}`), `{"command":"go test","exit_code":0}`},
		{"a", protocol.EventNote, "raw bytes", []byte(`[1,2]`), `[1,2]`},
		{"b", protocol.EventOutput, "typed nil", (*payload)(nil), ""},
	}
	want := []Event{
		{Cursor: a.Cursor, JobID: "a", At: a.CreatedAt, Kind: "state", Text: "queued"},
		{Cursor: b.Cursor, JobID: "b", At: b.CreatedAt, Kind: "state", Text: "queued"},
	}
	for _, ap := range appends {
		now := c.now()
		cur, err := s.AppendEvent(ctx, ap.job, ap.kind, ap.text, ap.data, now)
		if err != nil {
			t.Fatal(err)
		}
		if last := want[len(want)-1].Cursor; cur <= last {
			t.Errorf("cursor %d after %d", cur, last)
		}
		e := Event{Cursor: cur, JobID: ap.job, At: now, Kind: ap.kind, Text: ap.text}
		if ap.wantData != "" {
			e.Data = json.RawMessage(ap.wantData)
		}
		want = append(want, e)
		if j := mustJob(t, s, ap.job); j.Cursor != cur || !j.UpdatedAt.Equal(now) {
			t.Errorf("job %s: cursor %d updated %v, want %d %v", ap.job, j.Cursor, j.UpdatedAt, cur, now)
		}
	}
	if got := mustJob(t, s, "a").Progress; got != "reading code" {
		t.Errorf("progress = %q", got)
	}

	filter := func(job string) []Event {
		var out []Event
		for _, e := range want {
			if e.JobID == job {
				out = append(out, e)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ids   []string
		since int64
		limit int
		want  []Event
	}{
		{"all", nil, 0, 0, want},
		{"since", nil, want[2].Cursor, 0, want[3:]},
		{"limit", nil, 0, 3, want[:3]},
		{"one job", []string{"a"}, 0, 0, filter("a")},
		{"both jobs", []string{"a", "b"}, 0, 0, want},
		{"one job since", []string{"b"}, want[3].Cursor, 0, filter("b")[2:]},
		{"empty id list", []string{}, 0, 0, nil},
		{"unknown job", []string{"nope"}, 0, 0, nil},
		{"past the end", nil, want[len(want)-1].Cursor, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Events(ctx, tc.ids, tc.since, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	last, err := s.LastCursor(ctx)
	if err != nil || last != want[len(want)-1].Cursor {
		t.Errorf("LastCursor = %d, %v; want %d", last, err, want[len(want)-1].Cursor)
	}

	if _, err := s.AppendEvent(ctx, "nope", protocol.EventNote, "x", nil, c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendEvent(nope) = %v", err)
	}
	if _, err := s.AppendEvent(ctx, "a", protocol.EventNote, "x", json.RawMessage(`{bad`), c.now()); err == nil {
		t.Error("AppendEvent took invalid JSON")
	}
	if _, err := s.AppendEvent(ctx, "a", protocol.EventNote, "x", func() {}, c.now()); err == nil {
		t.Error("AppendEvent took unmarshalable data")
	}
	if _, err := s.AppendEvent(ctx, "a", "", "x", nil, c.now()); err == nil {
		t.Error("AppendEvent took an empty kind")
	}
	if got, _ := s.LastCursor(ctx); got != last {
		t.Errorf("refused appends moved the cursor to %d", got)
	}
	healthy(t, s)
}

func TestEventsDefaultLimit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	newJob(t, s, c, "a", 0)
	// One transaction for speed: appendEvent is what AppendEvent runs.
	err := s.write(ctx, func(tx *sql.Tx) error {
		for i := 0; i < defaultEventsLimit+10; i++ {
			if _, err := appendEvent(ctx, tx, "a", protocol.EventOutput, "line", nil, c.now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(ctx, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != defaultEventsLimit {
		t.Errorf("%d events, want the default limit %d", len(got), defaultEventsLimit)
	}
}

func TestLastCursorEmpty(t *testing.T) {
	s := openTest(t)
	if c, err := s.LastCursor(context.Background()); c != 0 || err != nil {
		t.Errorf("LastCursor = %d, %v", c, err)
	}
}

// TestReportCost: a running job's spend so far is an event and the job's
// live cost; Finish writes the final figure; an ended job takes no more.
func TestReportCost(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "a")
	cur, err := s.ReportCost(ctx, "a", 12_345, protocol.CostEvent{USD: 0.012345, Known: true, Tokens: 900, Calls: 2, Model: "m"}, c.now())
	if err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, s, "a")
	if j.CostMicros != 12_345 || !j.CostKnown || j.Tokens != 900 || j.Cursor != cur {
		t.Errorf("live cost: %d known %v tokens %d cursor %d (event %d)", j.CostMicros, j.CostKnown, j.Tokens, j.Cursor, cur)
	}
	evs, err := s.Events(ctx, []string{"a"}, cur-1, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != protocol.EventCost || !strings.Contains(string(evs[0].Data), `"calls":2`) {
		t.Fatalf("cost event: %+v, %v", evs, err)
	}
	if _, err := s.Finish(ctx, "a", Ending{State: protocol.StateSucceeded, CostMicros: 20_000, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, "a"); j.CostMicros != 20_000 {
		t.Errorf("final cost %d", j.CostMicros)
	}
	if _, err := s.ReportCost(ctx, "a", 99, protocol.CostEvent{}, c.now()); !errors.Is(err, ErrWrongState) {
		t.Errorf("cost after the end: %v", err)
	}
	if _, err := s.ReportCost(ctx, "nope", 1, protocol.CostEvent{}, c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("cost of an unknown job: %v", err)
	}
	healthy(t, s)
}
