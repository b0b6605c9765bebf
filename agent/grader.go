package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hub-agents/hub/internal/text"
	"github.com/hub-agents/hub/rubric"
)

// modelGrader judges the criteria no mechanical check can, with read-only
// tools over the worktree and what the hub observed (changed files, the
// verify output). Its word never overrules an observation: the rubric
// ignores what it says about mechanical criteria.
type modelGrader struct{ r *runner }

const graderPrompt = `You grade a coding agent's finished work against criteria, strictly and fairly. You can read the worktree (read-only tools). For each criterion decide pass, fail, or unknown (when you cannot tell), with one line of evidence (file and line, or output). Do not trust the agent's claims; look.
Reply without a tool call with only this JSON: {"judgements":[{"id":"c1","status":"pass|fail|unknown","evidence":"..."}]}`

func (g *modelGrader) Judge(ctx context.Context, crit []rubric.Criterion, facts rubric.Facts) ([]rubric.Judgement, error) {
	var b strings.Builder
	b.WriteString("Task given to the agent:\n")
	b.WriteString(text.OneLine(g.r.cfg.Task, 3000))
	b.WriteString("\n\nCriteria to judge:\n")
	for _, c := range crit {
		if c.Kind == rubric.KindJudgement {
			fmt.Fprintf(&b, "- %s: %s\n", c.ID, c.Text)
		}
	}
	b.WriteString("\nFiles changed (observed by the hub):\n")
	if len(facts.Files) == 0 {
		b.WriteString("(none)\n")
	}
	for _, f := range facts.Files {
		fmt.Fprintf(&b, "- %s %s\n", f.Change, f.Path)
	}
	if v := facts.Verify; v != nil {
		fmt.Fprintf(&b, "\nVerify `%s`: ran=%v exit=%d timed_out=%v\nOutput tail:\n%s\n", v.Command, v.Ran, v.ExitCode, v.TimedOut, capText(v.OutputTail, 3000))
	}
	tools := readOnly(g.r.cfg.Workspace.Tools())
	end := g.r.loop(ctx, loopSpec{name: "grader", system: graderPrompt, user: b.String(), tools: tools, maxTurns: 12,
		final: func(context.Context, string) (string, error) { return "", nil }})
	if end.err != nil {
		return nil, fmt.Errorf("grader: %w", end.err)
	}
	return parseJudgements(end.text)
}

// parseJudgements reads the grader's JSON, tolerating prose or a code fence around it.
func parseJudgements(answer string) ([]rubric.Judgement, error) {
	start, stop := strings.Index(answer, "{"), strings.LastIndex(answer, "}")
	if start < 0 || stop < start {
		return nil, fmt.Errorf("grader answered without JSON: %q", text.OneLine(answer, 200))
	}
	var out struct {
		Judgements []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Evidence string `json:"evidence"`
		} `json:"judgements"`
	}
	if err := json.Unmarshal([]byte(answer[start:stop+1]), &out); err != nil {
		return nil, fmt.Errorf("grader's JSON is malformed: %v", err)
	}
	var js []rubric.Judgement
	for _, j := range out.Judgements {
		st := rubric.Status(strings.ToLower(strings.TrimSpace(j.Status)))
		switch st {
		case rubric.StatusPass, rubric.StatusFail, rubric.StatusUnknown:
		default:
			st = rubric.StatusUnknown
		}
		js = append(js, rubric.Judgement{ID: j.ID, Status: st, Evidence: text.OneLine(j.Evidence, 300)})
	}
	return js, nil
}

var _ rubric.Grader = (*modelGrader)(nil)
