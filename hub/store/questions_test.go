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
)

func ask(t *testing.T, s *Store, c *clock, job, id string) *Question {
	t.Helper()
	now := c.now()
	q := &Question{ID: id, JobID: job, Kind: "question", Text: "which way? " + id, Context: "ctx", ExpiresAt: now.Add(10 * time.Minute)}
	if err := s.AddQuestion(context.Background(), q, now); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestAddQuestion(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")

	q := ask(t, s, c, "j", "q1")
	j := mustJob(t, s, "j")
	if j.State != protocol.StateNeedsInput || q.Cursor == 0 || j.Cursor != q.Cursor {
		t.Errorf("job %s cursor %d, question cursor %d", j.State, j.Cursor, q.Cursor)
	}
	evs, _ := s.Events(ctx, []string{"j"}, q.Cursor-2, 0)
	if len(evs) != 2 || evs[0].Kind != "state" || evs[0].Text != "needs_input" || evs[1].Kind != "question" {
		t.Fatalf("events %+v", evs)
	}
	var pq protocol.Question
	if err := json.Unmarshal(evs[1].Data, &pq); err != nil {
		t.Fatal(err)
	}
	want := protocol.Question{ID: "q1", Kind: "question", Text: q.Text, Context: "ctx", AskedAt: q.AskedAt, ExpiresAt: q.ExpiresAt, Cursor: q.Cursor}
	if diff := cmp.Diff(want, pq); diff != "" {
		t.Errorf("question event data (-want +got):\n%s", diff)
	}
	if evs[1].Text != q.Text {
		t.Errorf("question event text %q", evs[1].Text)
	}

	// A second question while the first is pending is fine.
	q2 := ask(t, s, c, "j", "q2")
	pending, err := s.PendingQuestions(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*Question{q, q2}, pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		q    Question
		is   error
	}{
		{"duplicate id", Question{ID: "q1", JobID: "j", Text: "again"}, nil},
		{"no id", Question{JobID: "j", Text: "x"}, nil},
		{"unknown job", Question{ID: "q9", JobID: "nope", Text: "x"}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.AddQuestion(ctx, &tc.q, c.now())
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("AddQuestion = %v, want %v", err, tc.is)
			}
		})
	}

	// Only a running (or already asking) job can ask.
	newJob(t, s, c, "queued", 0)
	err = s.AddQuestion(ctx, &Question{ID: "q3", JobID: "queued", Text: "x"}, c.now())
	if !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "queued") {
		t.Errorf("ask while queued = %v", err)
	}
	healthy(t, s)
}

func TestAnswerQuestion(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")
	q1 := ask(t, s, c, "j", "q1")
	ask(t, s, c, "j", "q2")

	// Answering the oldest (qid "") keeps the job waiting on q2.
	now := c.now()
	got, err := s.AnswerQuestion(ctx, "j", "", "left", now)
	if err != nil {
		t.Fatal(err)
	}
	want := *q1
	want.Answer, want.AnsweredAt = "left", now
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("answered (-want +got):\n%s", diff)
	}
	if j := mustJob(t, s, "j"); j.State != protocol.StateNeedsInput {
		t.Errorf("job is %s with q2 pending", j.State)
	}
	evs, _ := s.Events(ctx, []string{"j"}, 0, 0)
	if last := evs[len(evs)-1]; last.Kind != "answer" || string(last.Data) != `{"expired":false,"question_id":"q1"}` {
		t.Errorf("answer event %+v data %s", last, last.Data)
	}

	// Answering the last pending one by id resumes the job.
	before, _ := s.LastCursor(ctx)
	if _, err := s.AnswerQuestion(ctx, "j", "q2", "right", c.now()); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, "j"); j.State != protocol.StateRunning {
		t.Errorf("job is %s after its last answer", j.State)
	}
	evs, _ = s.Events(ctx, []string{"j"}, before, 0)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind)+":"+e.Text+string(e.Data))
	}
	wantKinds := []string{`answer:{"expired":false,"question_id":"q2"}`, `state:running{"from":"needs_input","reason":"answered"}`}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if p, _ := s.PendingQuestions(ctx, "j"); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}

	for _, tc := range []struct {
		name, job, qid string
		is             error
		says           string
	}{
		{"none pending", "j", "", ErrNotFound, "job j has no pending question"},
		{"unknown question", "j", "q9", ErrNotFound, "q9"},
		{"question of another job", "other", "q1", ErrNotFound, "q1"},
		{"already answered", "j", "q1", ErrWrongState, "question q1 already answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AnswerQuestion(ctx, tc.job, tc.qid, "x", c.now())
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("AnswerQuestion = %v, want %v saying %q", err, tc.is, tc.says)
			}
		})
	}
	healthy(t, s)
}

func TestExpireQuestion(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")
	ask(t, s, c, "j", "q1")

	if err := s.ExpireQuestion(ctx, "j", "q1", c.now()); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, "j"); j.State != protocol.StateRunning {
		t.Errorf("job is %s after the ask timed out", j.State)
	}
	evs, _ := s.Events(ctx, []string{"j"}, 0, 0)
	n := len(evs)
	if evs[n-2].Kind != "answer" || string(evs[n-2].Data) != `{"expired":true,"question_id":"q1"}` ||
		string(evs[n-1].Data) != `{"from":"needs_input","reason":"ask timed out"}` {
		t.Errorf("events: %s %s", evs[n-2].Data, evs[n-1].Data)
	}
	if err := s.ExpireQuestion(ctx, "j", "q1", c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "already expired") {
		t.Errorf("expire twice = %v", err)
	}
	if _, err := s.AnswerQuestion(ctx, "j", "q1", "late", c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "already expired") {
		t.Errorf("answer after expiry = %v", err)
	}

	ask(t, s, c, "j", "q2")
	if _, err := s.AnswerQuestion(ctx, "j", "q2", "yes", c.now()); err != nil {
		t.Fatal(err)
	}
	if err := s.ExpireQuestion(ctx, "j", "q2", c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "already answered") {
		t.Errorf("expire after answer = %v", err)
	}
	if err := s.ExpireQuestion(ctx, "j", "", c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("expire with none pending = %v", err)
	}
	healthy(t, s)
}

func TestFinishExpiresPendingQuestions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")
	ask(t, s, c, "j", "q1")
	if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateCancelled, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.PendingQuestions(ctx, "j"); len(p) != 0 {
		t.Errorf("pending after Finish: %+v", p)
	}
	if _, err := s.AnswerQuestion(ctx, "j", "q1", "late", c.now()); !errors.Is(err, ErrWrongState) {
		t.Errorf("answer after Finish = %v", err)
	}
	healthy(t, s)
}

func TestSteering(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	running(t, s, c, "j")

	if got, err := s.TakeSteers(ctx, "j", c.now()); err != nil || got != nil {
		t.Errorf("TakeSteers with none queued = %+v, %v", got, err)
	}
	t1, t2 := c.now(), c.now()
	s1, err := s.AddSteer(ctx, "j", "use the v2 API", t1)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := s.AddSteer(ctx, "j", "skip the docs", t2)
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID == 0 || s2.ID <= s1.ID || !s1.CreatedAt.Equal(t1) {
		t.Errorf("steers %+v %+v", s1, s2)
	}
	before, _ := s.LastCursor(ctx)
	now := c.now()
	got, err := s.TakeSteers(ctx, "j", now)
	if err != nil {
		t.Fatal(err)
	}
	want := []Steer{
		{ID: s1.ID, JobID: "j", Text: "use the v2 API", CreatedAt: t1, DeliveredAt: now},
		{ID: s2.ID, JobID: "j", Text: "skip the docs", CreatedAt: t2, DeliveredAt: now},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TakeSteers (-want +got):\n%s", diff)
	}
	evs, _ := s.Events(ctx, []string{"j"}, before, 0)
	wantEv := []Event{
		{Cursor: before + 1, JobID: "j", At: now, Kind: "delivered", Text: "use the v2 API"},
		{Cursor: before + 2, JobID: "j", At: now, Kind: "delivered", Text: "skip the docs"},
	}
	if diff := cmp.Diff(wantEv, evs); diff != "" {
		t.Errorf("delivered events (-want +got):\n%s", diff)
	}
	if got, err := s.TakeSteers(ctx, "j", c.now()); err != nil || got != nil {
		t.Errorf("second TakeSteers = %+v, %v", got, err)
	}
	all, _ := s.Events(ctx, []string{"j"}, 0, 0)
	steerEvents := 0
	for _, e := range all {
		if e.Kind == "steer" {
			steerEvents++
		}
	}
	if steerEvents != 2 {
		t.Errorf("%d steer events, want 2", steerEvents)
	}

	newJob(t, s, c, "q", 0)
	if _, err := s.AddSteer(ctx, "q", "x", c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "queued") {
		t.Errorf("steer a queued job = %v", err)
	}
	if _, err := s.Finish(ctx, "j", Ending{State: protocol.StateSucceeded, CostKnown: true}, c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSteer(ctx, "j", "x", c.now()); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), "succeeded") {
		t.Errorf("steer an ended job = %v", err)
	}
	if _, err := s.AddSteer(ctx, "nope", "x", c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("steer unknown job = %v", err)
	}
	if _, err := s.TakeSteers(ctx, "nope", c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakeSteers unknown job = %v", err)
	}
	healthy(t, s)
}
