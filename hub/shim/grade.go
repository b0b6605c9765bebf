package shim

import (
	"context"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/rubric"
)

// grade grades the job's result against its definition of done and verify
// command, on what the hub observed itself: verify's outcome on the head
// commit and the files of base..head. A model's judgements (from the
// built-in worker's grader) count only for judgement criteria.
func (s *shim) grade(ctx context.Context, verify *protocol.Verify, files []protocol.FileChange, judged []rubric.Judgement) rubric.Result {
	write := s.job.Kind == protocol.KindWrite
	// Verify runs on a write job's head commit only: a read job commits
	// nothing, so its verify is not a criterion (the step engine runs its
	// check itself and says what came of it).
	verifyCmd := ""
	if write {
		verifyCmd = s.params.Verify
	}
	crit := rubric.Criteria(rubric.Spec{DefinitionOfDone: s.params.DefinitionOfDone, Verify: verifyCmd, Write: write})
	facts := rubric.Facts{Write: write}
	if verifyCmd != "" {
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
