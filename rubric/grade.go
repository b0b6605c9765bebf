package rubric

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hub-agents/hub/internal/errline"
	"github.com/hub-agents/hub/internal/text"
)

const (
	maxLine     = 160 // runes in Result.Line
	maxListed   = 8   // changed files named in one piece of evidence
	maxOutLine  = 120 // runes of a verify output line quoted as evidence
	maxFeedback = 400 // runes of evidence per criterion in Feedback
)

// Grade grades crit against what the hub observed, asking g (which may be
// nil) about the judgement criteria only. See the package documentation for
// the rules.
func Grade(ctx context.Context, crit []Criterion, facts Facts, g Grader) Result {
	res := Result{Criteria: make([]CriterionResult, len(crit))}
	var ask []Criterion
	for i, c := range crit {
		r := CriterionResult{Criterion: cloneCriterion(c), Status: StatusUnknown}
		switch c.Kind {
		case KindVerify:
			r.Status, r.Evidence = gradeVerify(c, facts.Verify)
		case KindChanged:
			r.Status, r.Evidence = gradeChanged(facts.Files)
		case KindUnchanged:
			r.Status, r.Evidence = gradeUnchanged(c.Paths, facts.Files)
		case KindOnly:
			r.Status, r.Evidence = gradeOnly(c.Paths, facts.Files)
		case KindJudgement:
			if c.NoChanges && len(facts.Files) == 0 {
				r.Status, r.Evidence, r.By = StatusPass, "no files changed, as expected", ByHub
				break
			}
			ask = append(ask, cloneCriterion(c))
		default:
			r.Evidence = fmt.Sprintf("unknown criterion kind %q", c.Kind)
		}
		if c.Kind.mechanical() {
			r.By = ByHub
		}
		res.Criteria[i] = r
	}
	if len(ask) > 0 {
		res.GraderError = judge(ctx, ask, facts, g, res.Criteria)
	}
	res.Verdict = verdict(res.Criteria)
	return res
}

// judge asks g about the judgement criteria and records its answers in rs;
// it returns the grader's error, if any.
func judge(ctx context.Context, ask []Criterion, facts Facts, g Grader, rs []CriterionResult) string {
	setAll := func(evidence string) {
		for i := range rs {
			if rs[i].Kind == KindJudgement {
				rs[i].Status, rs[i].Evidence, rs[i].By = StatusUnknown, evidence, ""
			}
		}
	}
	if g == nil {
		setAll("no model grader: needs a reader")
		return ""
	}
	if err := ctx.Err(); err != nil {
		setAll("grader not run: " + err.Error())
		return err.Error()
	}
	js, err := g.Judge(ctx, ask, cloneFacts(facts))
	if err != nil {
		setAll("grader error: " + err.Error())
		return err.Error()
	}
	byID := map[string]Judgement{}
	for _, j := range js {
		if _, dup := byID[j.ID]; !dup {
			byID[j.ID] = j
		}
	}
	for i := range rs {
		if rs[i].Kind != KindJudgement {
			continue // the hub's observation outranks any model
		}
		j, ok := byID[rs[i].ID]
		ev := strings.TrimSpace(j.Evidence)
		switch {
		case !ok:
			rs[i].Evidence = "the grader gave no judgement"
		case j.Status == StatusPass || j.Status == StatusFail:
			if ev == "" {
				ev = "no evidence given"
			}
			rs[i].Status, rs[i].Evidence, rs[i].By = j.Status, ev, ByModel
		case j.Status == StatusUnknown:
			if ev == "" {
				ev = "the grader could not tell"
			}
			rs[i].Evidence = ev
		default:
			rs[i].Evidence = fmt.Sprintf("the grader gave an invalid status %q", j.Status)
		}
	}
	return ""
}

func verdict(rs []CriterionResult) Verdict {
	v := VerdictSatisfied
	for _, r := range rs {
		switch {
		case r.Status == StatusFail && (r.Kind == KindVerify || r.Kind == KindChanged):
			return VerdictFailed
		case r.Status == StatusFail:
			v = VerdictNeedsRevision
		case r.Status == StatusUnknown && v == VerdictSatisfied:
			v = VerdictUnknown
		}
	}
	return v
}

func gradeVerify(c Criterion, v *VerifyFact) (Status, string) {
	if v == nil {
		return StatusFail, "did not run: the hub has no verify result"
	}
	if c.Command != "" && v.Command != "" && text.Fold(c.Command) != text.Fold(v.Command) {
		return StatusFail, fmt.Sprintf("did not run: the hub ran `%s`, not `%s`", text.OneLine(v.Command, 50), text.OneLine(c.Command, 50))
	}
	on := ""
	if v.Commit != "" {
		on = " on " + text.ShortSHA(v.Commit)
	}
	last := text.OneLine(errline.Telling(v.OutputTail), maxOutLine)
	var ev string
	switch {
	case !v.Ran:
		ev = "did not run"
	case v.TimedOut:
		ev = "timed out" + on
	case v.ExitCode != 0:
		ev = "exit " + strconv.Itoa(v.ExitCode) + on
	default:
		return StatusPass, "exit 0" + on
	}
	if last != "" {
		ev += ": " + last
	}
	return StatusFail, ev
}

func gradeChanged(files []FileChange) (Status, string) {
	if len(files) == 0 {
		return StatusFail, "no files changed between base and head"
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Path
	}
	return StatusPass, fmt.Sprintf("%s changed: %s", plural(len(files), "file"), list(names, 5))
}

func gradeUnchanged(patterns []string, files []FileChange) (Status, string) {
	var hit []string
	for _, f := range files {
		if slices.ContainsFunc(touched(f), func(p string) bool { return matchAnyPath(patterns, p) }) {
			hit = append(hit, describe(f))
		}
	}
	if len(hit) > 0 {
		return StatusFail, list(hit, maxListed)
	}
	if isEverything(patterns) {
		return StatusPass, "no files changed"
	}
	return StatusPass, "no changes to " + strings.Join(patterns, ", ")
}

func gradeOnly(patterns []string, files []FileChange) (Status, string) {
	var out []string
	for _, f := range files {
		if !allIn(patterns, touched(f)) {
			out = append(out, describe(f))
		}
	}
	where := strings.Join(patterns, ", ")
	if len(out) > 0 {
		return StatusFail, "outside " + where + ": " + list(out, maxListed)
	}
	if len(files) == 0 {
		return StatusPass, "no files changed"
	}
	return StatusPass, fmt.Sprintf("%s changed, all within %s", plural(len(files), "file"), where)
}

func allIn(patterns, paths []string) bool {
	for _, p := range paths {
		if !matchAnyPath(patterns, p) {
			return false
		}
	}
	return true
}

func isEverything(patterns []string) bool {
	return len(patterns) == 1 && patterns[0] == everything
}

// describe names a change: "go.mod modified", "a renamed to b".
func describe(f FileChange) string {
	switch {
	case f.Change == "renamed" && f.OldPath != "":
		return f.OldPath + " renamed to " + f.Path
	case f.Change == "copied" && f.OldPath != "":
		return f.Path + " copied from " + f.OldPath
	case f.Change == "":
		return f.Path + " changed"
	}
	return f.Path + " " + strings.ReplaceAll(f.Change, "_", " ")
}

// list joins items, naming at most n of them.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func cloneCriterion(c Criterion) Criterion {
	c.Paths, c.Covers = slices.Clone(c.Paths), slices.Clone(c.Covers)
	return c
}

func cloneFacts(f Facts) Facts {
	if f.Verify != nil {
		v := *f.Verify
		f.Verify = &v
	}
	f.Files = slices.Clone(f.Files)
	return f
}

// Failed lists the failed criteria, in order.
func (r Result) Failed() []CriterionResult {
	var out []CriterionResult
	for _, c := range r.Criteria {
		if c.Status == StatusFail {
			out = append(out, c)
		}
	}
	return out
}

func (r Result) count(s Status) int {
	n := 0
	for _, c := range r.Criteria {
		if c.Status == s {
			n++
		}
	}
	return n
}

// Line is a one-line summary of at most 160 characters:
// "rubric: satisfied (4/4 pass)", "rubric: satisfied (3 pass, 1 unknown)",
// "rubric: needs_revision — c3 fail: go.mod modified".
func (r Result) Line() string {
	head := "rubric: " + string(r.Verdict)
	failed := r.Failed()
	if len(failed) == 0 {
		pass := r.count(StatusPass)
		var unknown []string
		for _, c := range r.Criteria {
			if c.Status == StatusUnknown {
				unknown = append(unknown, c.ID)
			}
		}
		if len(unknown) == 0 {
			return text.Clip(fmt.Sprintf("%s (%d/%d pass)", head, pass, len(r.Criteria)), maxLine)
		}
		return text.Clip(fmt.Sprintf("%s (%d pass; not checked: %s)", head, pass, strings.Join(unknown, ", ")), maxLine)
	}
	parts := make([]string, len(failed))
	for i, c := range failed {
		parts[i] = c.ID + " fail: " + text.Fold(c.Evidence)
	}
	return text.Clip(head+" — "+strings.Join(parts, "; "), maxLine)
}

// Feedback is a short text for a worker to revise from: each failed
// criterion with its evidence and what to do, then the criteria nobody could
// check, with the reason. It is "" when everything passed.
func (r Result) Feedback() string {
	var b strings.Builder
	failed := r.Failed()
	var unknown []CriterionResult
	for _, c := range r.Criteria {
		if c.Status == StatusUnknown {
			unknown = append(unknown, c)
		}
	}
	if len(failed) == 0 && len(unknown) == 0 {
		return ""
	}
	switch r.Verdict {
	case VerdictFailed:
		b.WriteString("The result is not acceptable yet (verdict: failed). Fix the failed criteria below and commit again.\n")
	case VerdictNeedsRevision:
		b.WriteString("The result needs revision (verdict: needs_revision). Fix the failed criteria below and commit again; keep what already passes.\n")
	default:
		b.WriteString("Every criterion that could be checked passes.\n")
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed:\n")
		for _, c := range failed {
			fmt.Fprintf(&b, "- %s (%s) %s\n  observed: %s\n  to do: %s\n",
				c.ID, c.Kind, text.OneLine(c.Text, maxFeedback), text.OneLine(c.Evidence, maxFeedback), todo(c))
		}
	}
	if len(unknown) > 0 {
		b.WriteString("\nNot checked (make sure these hold):\n")
		for _, c := range unknown {
			fmt.Fprintf(&b, "- %s (%s) %s\n", c.ID, c.Kind, text.OneLine(c.Text, maxFeedback))
			if c.Evidence != "" {
				fmt.Fprintf(&b, "  why: %s\n", text.OneLine(c.Evidence, maxFeedback))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// todo says what a worker should do about a failed criterion.
func todo(c CriterionResult) string {
	switch c.Kind {
	case KindVerify:
		cmd := "`" + text.OneLine(c.Command, 80) + "`"
		switch {
		case strings.HasPrefix(c.Evidence, "timed out"):
			return "make " + cmd + " finish in time (look for hangs and slow tests), then commit."
		case strings.HasPrefix(c.Evidence, "did not run"):
			return "the hub could not run " + cmd + " on your commit; make sure the commit is complete and the command works in a clean checkout."
		}
		return "run " + cmd + ", fix what fails, and commit."
	case KindChanged:
		return "nothing was committed on the branch; make the change the task asks for and commit it."
	case KindUnchanged:
		if isEverything(c.Paths) {
			return "this job must not change any file; drop every change so the branch matches its base."
		}
		return "restore " + strings.Join(c.Paths, ", ") + " to the base commit's version; these paths must not change."
	case KindOnly:
		return "revert or move the changes listed; every change must stay within " + strings.Join(c.Paths, ", ") + "."
	}
	return "revise so that this holds, then commit."
}
