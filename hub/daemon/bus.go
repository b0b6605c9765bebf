package daemon

import (
	"context"
	"encoding/json"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

// poke tells the pump the store has news (a shim wrote, or a handler did).
func (s *Server) poke() {
	select {
	case s.pumpCh <- struct{}{}:
	default:
	}
}

// changedCh returns a channel closed at the next change. Take it before
// reading the state it guards, so no change is missed.
func (s *Server) changedCh() <-chan struct{} {
	s.busMu.Lock()
	defer s.busMu.Unlock()
	return s.changed
}

func (s *Server) pumpLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.pumpCh:
			s.pump(ctx)
		}
	}
}

// pump reads the events after the last one fanned out, sends them to
// subscribers in cursor order, sends a job/changed per job touched, wakes
// waiters, and kicks the scheduler when a job ended.
func (s *Server) pump(ctx context.Context) {
	for {
		s.busMu.Lock()
		since := s.lastCursor
		s.busMu.Unlock()
		evs, err := s.st.Events(ctx, nil, since, 500)
		if err != nil {
			s.o.Log.Error().Err(err).Msg("pump: read events")
			return
		}
		if len(evs) == 0 {
			s.wake(since)
			return
		}
		touched := map[string]bool{}
		var order []string
		ended := false
		for _, ev := range evs {
			if !touched[ev.JobID] {
				touched[ev.JobID] = true
				order = append(order, ev.JobID)
			}
			if ev.Kind == protocol.EventState && protocol.State(ev.Text).Terminal() {
				ended = true
			}
			if ev.Kind == protocol.EventCommit || ev.Kind == protocol.EventLand || ended {
				s.forecastSoon()
			}
		}
		var changed []protocol.JobStatus
		if s.hasSubscribers() {
			for _, id := range order {
				if st, err := s.status(ctx, id); err == nil {
					changed = append(changed, st)
				}
			}
		}
		s.subsMu.Lock()
		for _, sub := range s.subs {
			for _, ev := range evs {
				if ev.Cursor > sub.last {
					sub.send(notification{protocol.NotifyJobEvent, ev})
					if n, ok := questionNotice(ev); ok {
						sub.send(n)
					}
					sub.last = ev.Cursor
				}
			}
			for _, st := range changed {
				if st.Cursor > sub.sent[st.ID] {
					sub.sent[st.ID] = st.Cursor
					sub.send(notification{protocol.NotifyJobChanged, st})
				}
			}
		}
		s.subsMu.Unlock()
		s.wake(evs[len(evs)-1].Cursor)
		if ended {
			s.kick()
		}
		if len(evs) < 500 {
			return
		}
	}
}

// questionNotice is the question/asked or question/answered notification
// an event stands for, if any.
func questionNotice(ev protocol.Event) (notification, bool) {
	switch ev.Kind {
	case protocol.EventQuestion:
		n := protocol.QuestionNotice{JobID: ev.JobID}
		if json.Unmarshal(ev.Data, &n.Question) != nil || n.Question.ID == "" {
			return notification{}, false
		}
		return notification{protocol.NotifyQuestionAsked, n}, true
	case protocol.EventAnswer:
		n := protocol.AnswerNotice{JobID: ev.JobID}
		var d struct {
			QuestionID string `json:"question_id"`
			Expired    bool   `json:"expired"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.QuestionID == "" {
			return notification{}, false
		}
		n.QuestionID, n.Expired = d.QuestionID, d.Expired
		return notification{protocol.NotifyQuestionAnswered, n}, true
	}
	return notification{}, false
}

func (s *Server) wake(cursor int64) {
	s.busMu.Lock()
	defer s.busMu.Unlock()
	if cursor > s.lastCursor {
		s.lastCursor = cursor
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) hasSubscribers() bool {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	return len(s.subs) > 0
}

// status builds one job's short view.
func (s *Server) status(ctx context.Context, id string) (protocol.JobStatus, error) {
	j, err := s.st.Job(ctx, id)
	if err != nil {
		return protocol.JobStatus{}, err
	}
	var pending = (*storeQuestion)(nil)
	if j.State == protocol.StateNeedsInput {
		if qs, err := s.st.PendingQuestions(ctx, id); err == nil && len(qs) > 0 {
			pending = qs[0]
		}
	}
	return view.Status(j, pending, s.now()), nil
}
