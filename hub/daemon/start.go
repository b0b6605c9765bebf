package daemon

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// JobStart validates everything, then records the job as queued and returns at
// once; the scheduler admits and prepares it after.
func (s *Server) JobStart(ctx context.Context, p protocol.StartParams) (*protocol.StartResult, error) {
	set, in, err := s.routeInputs(ctx)
	if err != nil {
		return nil, err
	}
	req, err := job.Validate(ctx, p, set, s.o.Engines, in)
	if err != nil {
		return nil, fieldError(err)
	}
	spec, err := store.EncodeSpec(req.Params)
	if err != nil {
		return nil, internal(err)
	}
	route, err := json.Marshal(req.Decision)
	if err != nil {
		return nil, internal(err)
	}
	j := &store.Job{
		ID: job.NewID(), Kind: req.Params.Kind, Engine: req.Params.Engine, Model: req.Params.Model,
		Isolation: req.Params.Isolation, Cwd: req.Params.Cwd, BaseRef: req.Params.Base, BaseSHA: req.BaseSHA, Target: req.Target,
		Task: req.Params.Task, Spec: spec, MaxMicros: req.MaxMicros, Notes: req.Notes, Route: route,
		// A free engine's cost is known from the start: nothing.
		CostKnown: req.Engine != nil && req.Engine.Capabilities().Pays == protocol.PaysFree,
	}
	if req.Repo != nil {
		j.Repo = req.Repo.Top
	}
	if j.Kind == protocol.KindWrite {
		j.Branch = job.Branch(j.ID)
	}
	if err := s.st.CreateJob(ctx, j, s.now()); err != nil {
		return nil, internal(err)
	}
	s.kick()
	s.poke()
	return &protocol.StartResult{ID: j.ID, State: j.State, Engine: j.Engine, Branch: j.Branch, Base: j.BaseSHA,
		Isolation: j.Isolation, Notes: j.Notes}, nil
}

// StartMany starts each job on its own; one refused item does not stop the others.
func (s *Server) StartMany(ctx context.Context, p protocol.StartManyParams) (*protocol.StartManyResult, error) {
	if len(p.Jobs) == 0 {
		return nil, invalid("jobs", "pass at least one job", "jobs is empty")
	}
	if len(p.Jobs) > 64 {
		return nil, invalid("jobs", "start at most 64 jobs per call", "%d jobs in one call", len(p.Jobs))
	}
	res := &protocol.StartManyResult{Results: make([]protocol.StartManyItem, len(p.Jobs))}
	for i, jp := range p.Jobs {
		r, err := s.JobStart(ctx, jp)
		if err != nil {
			res.Results[i].Error = itemError(err)
			continue
		}
		res.Results[i].StartResult = r
	}
	return res, nil
}

// fieldError turns a validation error into a protocol error.
func fieldError(err error) error {
	var fe *job.FieldError
	if errors.As(err, &fe) {
		code := protocol.CodeInvalidParams
		if fe.Refused {
			code = protocol.CodeRefused
		}
		e := &jsonrpc2.Error{Code: code, Message: fe.Msg}
		e.SetError(protocol.ErrorData{Hint: fe.Hint, Field: fe.Field})
		return e
	}
	return internal(err)
}

func itemError(err error) *protocol.ItemError {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		d := rpc.DataOf(je)
		return &protocol.ItemError{Code: je.Code, Message: je.Message, Hint: d.Hint, Field: d.Field}
	}
	return &protocol.ItemError{Code: protocol.CodeInternal, Message: err.Error()}
}
