package daemon

import (
	"context"
	"time"

	"github.com/hub-agents/hub/hub/money"
	"github.com/hub-agents/hub/hub/protocol"
)

// ROIReport reports what each engine gave for its spend, over the jobs that ended
// since p.Since (default 30 days ago).
func (s *Server) ROIReport(ctx context.Context, p protocol.ROIParams) (*protocol.ROIResult, error) {
	until := s.now()
	since := p.Since.UTC()
	if p.Since.IsZero() {
		since = until.Add(-money.DefaultWindow)
	}
	if since.After(until) {
		return nil, invalid("since", "give an instant in the past, such as 30 days ago",
			"since %s is in the future", since.Format(time.RFC3339))
	}
	runs, err := s.st.Runs(ctx, since)
	if err != nil {
		return nil, internal(err)
	}
	res := money.ROI(runs, since, until)
	return &res, nil
}
