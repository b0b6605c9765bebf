package daemon

import (
	"context"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

func (s *Server) JobStatus(ctx context.Context, p protocol.IDParams) (*protocol.JobStatus, error) {
	st, err := s.status(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	return &st, nil
}

func (s *Server) JobList(ctx context.Context, p protocol.ListParams) (*protocol.ListResult, error) {
	jobs, err := s.st.ListJobs(ctx, p.States, p.Repo, p.Limit)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.ListResult{Jobs: []protocol.JobStatus{}}
	for _, j := range jobs {
		if j.State == protocol.StateNeedsInput {
			st, err := s.status(ctx, j.ID)
			if err == nil {
				res.Jobs = append(res.Jobs, st)
				continue
			}
		}
		res.Jobs = append(res.Jobs, view.Status(j, nil, s.now()))
	}
	return res, nil
}
