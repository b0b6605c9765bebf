package daemon

import (
	"context"
	"slices"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// reviewPatchMax bounds the diff read for a job's risk flags.
const reviewPatchMax = 4 << 20

// JobReview builds a batch's review packet.
func (s *Server) JobReview(ctx context.Context, p protocol.ReviewParams) (*protocol.ReviewResult, error) {
	var jobs []*store.Job
	switch {
	case len(p.IDs) > 0:
		for _, id := range unique(p.IDs) {
			j, err := s.st.Job(ctx, id)
			if err != nil {
				return nil, notFound(id, err)
			}
			jobs = append(jobs, j)
		}
	case p.AllEnded:
		ended, err := s.st.ListJobs(ctx, []protocol.State{protocol.StateSucceeded, protocol.StateFailed, protocol.StateCancelled, protocol.StateTimedOut}, p.Repo, 0)
		if err != nil {
			return nil, internal(err)
		}
		for _, j := range ended {
			if j.Kind == protocol.KindWrite && len(j.Landed) == 0 && j.HeadSHA != "" && j.HeadSHA != j.BaseSHA {
				jobs = append(jobs, j)
			}
		}
		slices.Reverse(jobs) // oldest first, as they were started
	default:
		return nil, invalid("ids", "name the jobs to review, or pass all_ended", "no jobs named")
	}
	// The packet is read now: its forecasts too, not as the last round saw them.
	s.forecast.Round(ctx)
	res := &protocol.ReviewResult{Jobs: []protocol.ReviewItem{}}
	for _, j := range jobs {
		if fresh, err := s.st.Job(ctx, j.ID); err == nil {
			j = fresh
		}
		res.Jobs = append(res.Jobs, s.reviewItem(ctx, j))
	}
	res.Text = s.secrets().String(view.Review(res.Jobs))
	return res, nil
}

func (s *Server) reviewItem(ctx context.Context, j *store.Job) protocol.ReviewItem {
	st := view.Status(j, nil, s.now())
	it := protocol.ReviewItem{ID: j.ID, State: j.State, Task: view.FirstLine(j.Task, 60), CostUSD: st.Cost.USD, Landed: st.Landed}
	if st.Forecast != nil {
		it.Conflicts = st.Forecast.Conflicts
	}
	var ev *protocol.Evidence
	if len(j.Evidence) > 0 {
		ev, _ = store.DecodeEvidence(j.Evidence)
	}
	if ev != nil {
		it.Files = len(ev.Files)
		for _, f := range ev.Files {
			it.Added += max(f.Added, 0)
			it.Deleted += max(f.Deleted, 0)
		}
		switch {
		case ev.Verify == nil:
			it.Verify = "none"
		case ev.Verify.ExitCode == 0 && !ev.Verify.TimedOut:
			it.Verify = "pass"
		default:
			it.Verify = "fail"
		}
		if ev.Rubric != nil {
			it.Rubric = ev.Rubric.Verdict
		}
		params, _ := store.DecodeSpec(j.Spec)
		var patch []byte
		if j.Repo != "" && ev.Head != "" && ev.Head != ev.Base {
			if p, err := gitx.Patch(ctx, j.Repo, ev.Base, ev.Head); err == nil && len(p) <= reviewPatchMax {
				patch = p
			}
		}
		it.Risks = job.Risks(ev.Files, params.Files, patch)
		if len(ev.Observed.RefChanges) > 0 {
			it.Risks = append(it.Risks, job.RiskRefs)
		}
	}
	it.Next = view.Next(it)
	return it
}
