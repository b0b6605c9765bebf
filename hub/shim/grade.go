package shim

import (
	"context"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/rubric"
)

// grade grades the job's result against its definition of done and verify
// command, on what the hub observed itself: verify's outcome on the head
// commit and the files of base..head. A model's judgements (from the
// built-in worker's grader) count only for judgement criteria.
func (s *shim) grade(ctx context.Context, verify *protocol.Verify, files []protocol.FileChange, judged []rubric.Judgement) rubric.Result {
	write := s.job.Kind == protocol.KindWrite
	crit := rubric.Criteria(rubric.Spec{DefinitionOfDone: s.params.DefinitionOfDone, Verify: s.params.Verify, Write: write})
	facts := rubric.Facts{Write: write}
	if s.params.Verify != "" {
		facts.Verify = &rubric.VerifyFact{Command: s.params.Verify}
		if verify != nil {
			facts.Verify.Ran = verify.ExitCode >= 0 || verify.TimedOut
			facts.Verify.ExitCode, facts.Verify.TimedOut = verify.ExitCode, verify.TimedOut
			facts.Verify.OutputTail, facts.Verify.Commit = verify.OutputTail, verify.Commit
		}
	}
	for _, f := range files {
		facts.Files = append(facts.Files, rubric.FileChange{Path: f.Path, OldPath: f.OldPath, Change: f.Change})
	}
	var g rubric.Grader
	if len(judged) > 0 {
		g = judgements(judged)
	}
	return rubric.Grade(ctx, crit, facts, g)
}

// judgements replays a grader's verdicts given during the run.
type judgements []rubric.Judgement

func (j judgements) Judge(context.Context, []rubric.Criterion, rubric.Facts) ([]rubric.Judgement, error) {
	return j, nil
}

// hubFailed reports whether a criterion the hub checked itself failed.
func hubFailed(r rubric.Result) bool {
	for _, c := range r.Criteria {
		if c.By == rubric.ByHub && c.Status == rubric.StatusFail {
			return true
		}
	}
	return false
}

func rubricView(r rubric.Result) *protocol.Rubric {
	v := &protocol.Rubric{Verdict: string(r.Verdict), Line: r.Line(), GraderError: r.GraderError, Criteria: []protocol.RubricCriterion{}}
	for _, c := range r.Criteria {
		v.Criteria = append(v.Criteria, protocol.RubricCriterion{ID: c.ID, Text: c.Text, Kind: string(c.Kind),
			Status: string(c.Status), Evidence: c.Evidence, By: c.By, Paths: c.Paths})
	}
	return v
}

// hasDefinition says whether the caller gave a definition of done: only
// then does the rubric decide the job's state (beyond verify, which always does).
func (s *shim) hasDefinition() bool { return strings.TrimSpace(s.params.DefinitionOfDone) != "" }
