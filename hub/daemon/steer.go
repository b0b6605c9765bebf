package daemon

import (
	"context"
	"errors"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// JobSteer queues a message for the worker; it reaches the worker at its next
// progress report or tool result, and the journal records when.
func (s *Server) JobSteer(ctx context.Context, p protocol.SteerParams) (*protocol.SteerResult, error) {
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	if err := refuseOwnWorker(ctx, j, "steer"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, invalid("text", "write the instruction in words", "the steering message is empty")
	}
	if j.State.Terminal() {
		return nil, wrongState("start a new job with the correction instead", "job %s has ended (%s); it cannot be steered", j.ID, j.State)
	}
	if _, err := s.st.AddSteer(ctx, j.ID, p.Text, s.now()); err != nil {
		if errors.Is(err, store.ErrWrongState) {
			return nil, wrongState("wait until it runs, or stop it and start it again with the correction", "job %s cannot be steered now: %v", j.ID, err)
		}
		return nil, internal(err)
	}
	s.poke()
	_ = s.callShim(ctx, j.ID, func(c protocol.ShimClient) error {
		_, err := c.ShimSteer(ctx, protocol.ShimSteerParams{Text: p.Text})
		return err
	})
	return &protocol.SteerResult{ID: j.ID, Queued: true}, nil
}
