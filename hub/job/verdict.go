package job

import (
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/rubric"
)

// Judge is the one place a job's ending meets its rubric. Given the state
// its run ended in (the engine's outcome and verify's) and its graded
// rubric, it returns the state the job ends in, and when the rubric turned
// a success into a failure, the category and reason to record.
//
// What hub observed outranks what the worker claimed: a job whose rubric
// failed (verify failed, or a write job with work to do changed nothing)
// failed, and so did one with a criterion hub checked itself failing (a
// definition of done's "do not touch", "only change"). A criterion only a
// model judged failing, or one nobody could check, leaves the job
// succeeded; its state line then carries the rubric's verdict beside the
// state (view.Line), so the two never disagree unsaid.
func Judge(state protocol.State, r *protocol.Rubric) (protocol.State, string, string) {
	if state != protocol.StateSucceeded || r == nil {
		return state, "", ""
	}
	// A failed verdict is a failed verify or "changed" criterion, both
	// checked by hub: hubFailed covers it.
	if hubFailed(r) {
		return protocol.StateFailed, protocol.CategoryRubric, r.Line
	}
	return state, "", ""
}

// hubFailed says whether a criterion hub checked itself failed.
func hubFailed(r *protocol.Rubric) bool {
	for _, c := range r.Criteria {
		if c.By == rubric.ByHub && c.Status == string(rubric.StatusFail) {
			return true
		}
	}
	return false
}

// RubricView is a graded rubric as the protocol carries it.
func RubricView(r rubric.Result) *protocol.Rubric {
	v := &protocol.Rubric{Verdict: string(r.Verdict), Line: r.Line(), GraderError: r.GraderError, Criteria: []protocol.RubricCriterion{}}
	for _, c := range r.Criteria {
		v.Criteria = append(v.Criteria, protocol.RubricCriterion{ID: c.ID, Text: c.Text, Kind: string(c.Kind),
			Status: string(c.Status), Evidence: c.Evidence, By: c.By, Paths: c.Paths})
	}
	return v
}
