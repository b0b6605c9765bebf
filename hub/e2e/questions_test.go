//go:build unix

package e2e

import (
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestTwoQuestionsAtOnce: a worker with two questions in flight; each is
// tracked by id, answering one leaves the other pending, and a late answer
// to an answered question is refused.
func TestTwoQuestionsAtOnce(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "two questions", Repo: repo,
		Engine: "exec", Exec: `hub ask "first?" > a.txt & hub ask "second?" > b.txt & wait`})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })
	// Both questions reach the journal; find their ids.
	var qs []string
	for {
		next := w.changedCh()
		evs := hubtest.Daemon(t, c).JobEvents(ctx, protocol.EventsParams{ID: r.ID})
		qs = qs[:0]
		for _, ev := range evs.Events {
			if ev.Kind == protocol.EventQuestion {
				qs = append(qs, ev.Text)
			}
		}
		if len(qs) == 2 {
			break
		}
		select {
		case <-next:
		case <-ctx.Done():
			t.Fatalf("the second question never came: %v", qs)
		}
	}
	st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: r.ID})
	first := st.Question
	rep := hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, QuestionID: first.ID, Text: "one"})
	if rep.QuestionID != first.ID {
		t.Fatalf("answered %s, want %s", rep.QuestionID, first.ID)
	}
	st = hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: r.ID})
	if st.State != protocol.StateNeedsInput || st.Question == nil || st.Question.ID == first.ID {
		t.Fatalf("after one answer the other question should stay pending: %+v", st)
	}
	_, err := c.Daemon().JobReply(ctx, protocol.ReplyParams{ID: r.ID, QuestionID: first.ID, Text: "again"})
	assertErr(t, err, protocol.CodeNotFound, "no pending question")
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "two"})
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30, Since: st.Question.Cursor})
	if wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("ended %s: %s", wr.Jobs[0].State, wr.Jobs[0].Error)
	}
	a := hubtest.Git(t, repo, "show", "hub/"+r.ID+":a.txt")
	b := hubtest.Git(t, repo, "show", "hub/"+r.ID+":b.txt")
	if !((first.Text == "first?" && a == "one" && b == "two") || (first.Text == "second?" && b == "one" && a == "two")) {
		t.Errorf("answers crossed: first asked %q; a.txt=%q b.txt=%q", first.Text, a, b)
	}
}
