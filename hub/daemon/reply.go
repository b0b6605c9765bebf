package daemon

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// JobReply answers the pending question through the job's shim, which owns the
// question and the worker waiting on it.
func (s *Server) JobReply(ctx context.Context, p protocol.ReplyParams) (*protocol.ReplyResult, error) {
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	if err := refuseOwnWorker(ctx, j, "reply to"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, invalid("text", "write the answer in words", "the reply is empty")
	}
	if j.State.Terminal() {
		return nil, wrongState("read its result instead", "job %s has ended (%s); there is nothing to reply to", j.ID, j.State)
	}
	qs, err := s.st.PendingQuestions(ctx, j.ID)
	if err != nil {
		return nil, internal(err)
	}
	if len(qs) == 0 {
		return nil, wrongState("use steer to redirect a running worker", "job %s has no pending question (it is %s)", j.ID, j.State)
	}
	if p.QuestionID != "" {
		found := false
		for _, q := range qs {
			found = found || q.ID == p.QuestionID
		}
		if !found {
			return nil, rpc.Errorf(protocol.CodeNotFound, "the job's status names its pending question", "job %s has no pending question %q", j.ID, p.QuestionID)
		}
	}
	var res *protocol.ReplyResult
	if err := s.callShim(ctx, j.ID, func(c protocol.ShimClient) (err error) {
		res, err = c.ShimReply(ctx, protocol.ShimReplyParams{QuestionID: p.QuestionID, Text: p.Text})
		return err
	}); err != nil {
		return nil, err
	}
	s.poke()
	return res, nil
}

// callShim makes a call to the job's shim on its own socket.
func (s *Server) callShim(ctx context.Context, id string, call func(protocol.ShimClient) error) error {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	nc, err := rpc.Dial(dctx, s.o.Paths.ShimSocket(id))
	if err != nil {
		s.watchLock(context.WithoutCancel(ctx), id)
		return rpc.Errorf(protocol.CodeUnavailable, "check the job's status in a moment: hub settles a job whose shim died",
			"the shim of job %s is not answering: %v", id, err)
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	if err := call(protocol.ShimClient{C: c}); err != nil {
		var je *jsonrpc2.Error
		if errors.As(err, &je) || ctx.Err() != nil {
			return err
		}
		return rpc.Errorf(protocol.CodeUnavailable, "check the job's status in a moment", "the shim of job %s did not answer: %v", id, err)
	}
	return nil
}
