package rubric

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// fakeGrader is a test double of Grader: it answers with fixed judgements
// and records what it was asked.
type fakeGrader struct {
	judgements []Judgement
	err        error
	mutate     bool // scribble over its arguments, as a careless grader might
	asked      [][]string
}

func (f *fakeGrader) Judge(_ context.Context, crit []Criterion, facts Facts) ([]Judgement, error) {
	var ids []string
	for _, c := range crit {
		ids = append(ids, c.ID)
	}
	f.asked = append(f.asked, ids)
	if f.mutate {
		for i := range crit {
			crit[i].Kind, crit[i].Text = KindVerify, "rewritten"
			if len(crit[i].Paths) > 0 {
				crit[i].Paths[0] = "rewritten"
			}
		}
		for i := range facts.Files {
			facts.Files[i].Path = "rewritten"
		}
		if facts.Verify != nil {
			facts.Verify.ExitCode = 0
		}
	}
	return f.judgements, f.err
}

// passAll is a grader that says every criterion it could name passes.
func passAll(ids ...string) *fakeGrader {
	g := &fakeGrader{}
	for _, id := range ids {
		g.judgements = append(g.judgements, Judgement{ID: id, Status: StatusPass, Evidence: "looks right"})
	}
	return g
}

const commit = "0123456789abcdef0123"

var (
	cVerify    = Criterion{ID: "c1", Kind: KindVerify, Text: "`go test ./...` exits 0 on the head commit", Command: goTest}
	cChanged   = Criterion{ID: "c2", Kind: KindChanged, Text: textChanged}
	cUnchanged = Criterion{ID: "c3", Kind: KindUnchanged, Text: "Do not touch go.mod or docs/", Paths: []string{"go.mod", "docs/"}}
	cOnly      = Criterion{ID: "c4", Kind: KindOnly, Text: "Only change rubric/ and *.md", Paths: []string{"rubric/", "*.md"}}
	cJudge     = Criterion{ID: "c5", Kind: KindJudgement, Text: "Grade explains each failure"}
	cNothing   = Criterion{ID: "c2", Kind: KindUnchanged, Text: textNoChanges, Paths: []string{"**"}}
	writeCrit  = []Criterion{cVerify, cChanged, cUnchanged, cOnly, cJudge}
)

func okVerify() *VerifyFact {
	return &VerifyFact{Command: goTest, Ran: true, OutputTail: "ok  \tpkg\t0.1s\n", Commit: commit}
}

func goodFiles() []FileChange {
	return []FileChange{{Path: "rubric/grade.go", Change: "added"}, {Path: "README.md", Change: "modified"}}
}

func res(c Criterion, s Status, by, evidence string) CriterionResult {
	return CriterionResult{Criterion: c, Status: s, By: by, Evidence: evidence}
}

func TestGrade(t *testing.T) {
	const (
		verifyPass    = "exit 0 on 0123456789"
		changedPass   = "2 files changed: rubric/grade.go, README.md"
		unchangedPass = "no changes to go.mod, docs/"
		onlyPass      = "2 files changed, all within rubric/, *.md"
	)
	tests := []struct {
		name  string
		crit  []Criterion
		facts Facts
		g     Grader
		want  Result
	}{
		{
			name:  "all pass",
			crit:  writeCrit,
			facts: Facts{Verify: okVerify(), Files: goodFiles(), Write: true},
			g:     passAll("c5"),
			want: Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cChanged, StatusPass, ByHub, changedPass),
				res(cUnchanged, StatusPass, ByHub, unchangedPass),
				res(cOnly, StatusPass, ByHub, onlyPass),
				res(cJudge, StatusPass, ByModel, "looks right"),
			}},
		},
		{
			name: "a grader that passes everything cannot rescue a failed verify",
			crit: writeCrit,
			facts: Facts{Write: true, Files: goodFiles(), Verify: &VerifyFact{
				Command: goTest, Ran: true, ExitCode: 1, Commit: commit,
				OutputTail: "--- FAIL: TestGrade (0.00s)\nFAIL\tgithub.com/hub-agents/hub/rubric\t0.01s\n\n",
			}},
			g: passAll("c1", "c2", "c3", "c4", "c5"),
			want: Result{Verdict: VerdictFailed, Criteria: []CriterionResult{
				res(cVerify, StatusFail, ByHub, "exit 1 on 0123456789: --- FAIL: TestGrade (0.00s)"),
				res(cChanged, StatusPass, ByHub, changedPass),
				res(cUnchanged, StatusPass, ByHub, unchangedPass),
				res(cOnly, StatusPass, ByHub, onlyPass),
				res(cJudge, StatusPass, ByModel, "looks right"),
			}},
		},
		{
			name:  "a grader that fails mechanical criteria is ignored for them",
			crit:  writeCrit,
			facts: Facts{Verify: okVerify(), Files: goodFiles(), Write: true},
			g: &fakeGrader{judgements: []Judgement{
				{ID: "c1", Status: StatusFail}, {ID: "c3", Status: StatusFail}, {ID: "c5", Status: StatusPass, Evidence: " fine "},
			}},
			want: Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cChanged, StatusPass, ByHub, changedPass),
				res(cUnchanged, StatusPass, ByHub, unchangedPass),
				res(cOnly, StatusPass, ByHub, onlyPass),
				res(cJudge, StatusPass, ByModel, "fine"),
			}},
		},
		{
			name:  "verify timed out",
			crit:  []Criterion{cVerify},
			facts: Facts{Verify: &VerifyFact{Command: goTest, Ran: true, ExitCode: -1, TimedOut: true, Commit: "abc"}},
			want:  Result{Verdict: VerdictFailed, Criteria: []CriterionResult{res(cVerify, StatusFail, ByHub, "timed out on abc")}},
		},
		{
			name:  "verify could not start",
			crit:  []Criterion{cVerify},
			facts: Facts{Verify: &VerifyFact{Command: goTest, OutputTail: "sh: go: not found\n", Commit: commit}},
			want:  Result{Verdict: VerdictFailed, Criteria: []CriterionResult{res(cVerify, StatusFail, ByHub, "did not run: sh: go: not found")}},
		},
		{
			name: "no verify result",
			crit: []Criterion{cVerify},
			want: Result{Verdict: VerdictFailed, Criteria: []CriterionResult{res(cVerify, StatusFail, ByHub, "did not run: the hub has no verify result")}},
		},
		{
			name:  "verify result of another command",
			crit:  []Criterion{cVerify},
			facts: Facts{Verify: &VerifyFact{Command: "true", Ran: true}},
			want:  Result{Verdict: VerdictFailed, Criteria: []CriterionResult{res(cVerify, StatusFail, ByHub, "did not run: the hub ran `true`, not `go test ./...`")}},
		},
		{
			name:  "verify exit 0 with no commit recorded",
			crit:  []Criterion{cVerify},
			facts: Facts{Verify: &VerifyFact{Command: " go  test ./... ", Ran: true}},
			want:  Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{res(cVerify, StatusPass, ByHub, "exit 0")}},
		},
		{
			name:  "write job changed nothing",
			crit:  writeCrit[:4],
			facts: Facts{Verify: okVerify(), Write: true},
			want: Result{Verdict: VerdictFailed, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cChanged, StatusFail, ByHub, "no files changed between base and head"),
				res(cUnchanged, StatusPass, ByHub, unchangedPass),
				res(cOnly, StatusPass, ByHub, "no files changed"),
			}},
		},
		{
			name: "unchanged and only violated, renames count for both paths",
			crit: writeCrit[:4],
			facts: Facts{Verify: okVerify(), Write: true, Files: []FileChange{
				{Path: "README.md", Change: "modified"},
				{Path: "go.mod", Change: "modified"},
				{Path: "guide/intro.md", OldPath: "docs/intro.md", Change: "renamed"},
				{Path: "rubric/moved.go", OldPath: "hub/moved.go", Change: "renamed"},
				{Path: "rubric/copy.go", OldPath: "hub/orig.go", Change: "copied"},
				{Path: "rubric/x", Change: "type_changed"},
				{Path: "rubric/from-docs.md", OldPath: "docs/a.md", Change: "copied"},
				{Path: "docs/b.md", OldPath: "README.md", Change: "copied"},
			}},
			want: Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cChanged, StatusPass, ByHub, "8 files changed: README.md, go.mod, guide/intro.md, rubric/moved.go, rubric/copy.go and 3 more"),
				res(cUnchanged, StatusFail, ByHub, "go.mod modified, docs/intro.md renamed to guide/intro.md, docs/b.md copied from README.md"),
				res(cOnly, StatusFail, ByHub, "outside rubric/, *.md: go.mod modified, hub/moved.go renamed to rubric/moved.go"),
			}},
		},
		{
			name: "globs",
			crit: []Criterion{
				{ID: "c1", Kind: KindUnchanged, Paths: []string{"**/*.pb.go", "vendor/**"}},
				{ID: "c2", Kind: KindOnly, Paths: []string{"api/**/*.proto", "*_test.go"}},
			},
			facts: Facts{Files: []FileChange{
				{Path: "api/v1/x.pb.go", Change: "modified"},
				{Path: "api/v1/x.proto", Change: "modified"},
				{Path: "hub/a_test.go", Change: "added"},
				{Path: "vendor/m/n.go", Change: "deleted"},
				{Path: "vendorx/n.go", Change: "deleted"},
			}},
			want: Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{
				res(Criterion{ID: "c1", Kind: KindUnchanged, Paths: []string{"**/*.pb.go", "vendor/**"}}, StatusFail, ByHub, "api/v1/x.pb.go modified, vendor/m/n.go deleted"),
				res(Criterion{ID: "c2", Kind: KindOnly, Paths: []string{"api/**/*.proto", "*_test.go"}}, StatusFail, ByHub, "outside api/**/*.proto, *_test.go: api/v1/x.pb.go modified, vendor/m/n.go deleted, vendorx/n.go deleted"),
			}},
		},
		{
			name:  "read job that changed nothing",
			crit:  []Criterion{cVerify, cNothing, cJudge},
			facts: Facts{Verify: okVerify()},
			g:     passAll("c5"),
			want: Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cNothing, StatusPass, ByHub, "no files changed"),
				res(cJudge, StatusPass, ByModel, "looks right"),
			}},
		},
		{
			name:  "read job that changed files",
			crit:  []Criterion{cVerify, cNothing},
			facts: Facts{Verify: okVerify(), Files: []FileChange{{Path: "a.go"}, {Path: "b", OldPath: "a", Change: "renamed"}}},
			want: Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cNothing, StatusFail, ByHub, "a.go changed, a renamed to b"),
			}},
		},
		{
			name:  "no grader",
			crit:  writeCrit,
			facts: Facts{Verify: okVerify(), Files: goodFiles(), Write: true},
			want: Result{Verdict: VerdictUnknown, Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cChanged, StatusPass, ByHub, changedPass),
				res(cUnchanged, StatusPass, ByHub, unchangedPass),
				res(cOnly, StatusPass, ByHub, onlyPass),
				res(cJudge, StatusUnknown, "", "no model grader: needs a reader"),
			}},
		},
		{
			name:  "grader error",
			crit:  []Criterion{cVerify, cJudge, {ID: "c6", Kind: KindJudgement, Text: "Docs updated"}},
			facts: Facts{Verify: okVerify()},
			g:     &fakeGrader{err: errors.New("model unavailable"), judgements: []Judgement{{ID: "c5", Status: StatusPass}}},
			want: Result{Verdict: VerdictUnknown, GraderError: "model unavailable", Criteria: []CriterionResult{
				res(cVerify, StatusPass, ByHub, verifyPass),
				res(cJudge, StatusUnknown, "", "grader error: model unavailable"),
				res(Criterion{ID: "c6", Kind: KindJudgement, Text: "Docs updated"}, StatusUnknown, "", "grader error: model unavailable"),
			}},
		},
		{
			name: "grader judgements: fail, unknown, missing, invalid, duplicate, foreign",
			crit: []Criterion{
				{ID: "j1", Kind: KindJudgement}, {ID: "j2", Kind: KindJudgement}, {ID: "j3", Kind: KindJudgement},
				{ID: "j4", Kind: KindJudgement}, {ID: "j5", Kind: KindJudgement}, {ID: "j6", Kind: KindJudgement},
			},
			g: &fakeGrader{judgements: []Judgement{
				{ID: "j1", Status: StatusFail, Evidence: "Feedback is empty"},
				{ID: "j2", Status: StatusUnknown, Evidence: "cannot see the output"},
				{ID: "j3", Status: StatusUnknown},
				{ID: "j5", Status: "maybe"},
				{ID: "j6", Status: StatusPass},
				{ID: "j6", Status: StatusFail, Evidence: "second thoughts"},
				{ID: "c99", Status: StatusFail},
			}},
			want: Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{
				res(Criterion{ID: "j1", Kind: KindJudgement}, StatusFail, ByModel, "Feedback is empty"),
				res(Criterion{ID: "j2", Kind: KindJudgement}, StatusUnknown, "", "cannot see the output"),
				res(Criterion{ID: "j3", Kind: KindJudgement}, StatusUnknown, "", "the grader could not tell"),
				res(Criterion{ID: "j4", Kind: KindJudgement}, StatusUnknown, "", "the grader gave no judgement"),
				res(Criterion{ID: "j5", Kind: KindJudgement}, StatusUnknown, "", `the grader gave an invalid status "maybe"`),
				res(Criterion{ID: "j6", Kind: KindJudgement}, StatusPass, ByModel, "no evidence given"),
			}},
		},
		{
			name: "unknown kind",
			crit: []Criterion{{ID: "c1", Kind: "vibes"}},
			g:    &fakeGrader{judgements: []Judgement{{ID: "c1", Status: StatusPass}}},
			want: Result{Verdict: VerdictUnknown, Criteria: []CriterionResult{
				res(Criterion{ID: "c1", Kind: "vibes"}, StatusUnknown, "", `unknown criterion kind "vibes"`),
			}},
		},
		{
			name: "no criteria",
			want: Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Grade(context.Background(), tt.crit, tt.facts, tt.g)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Grade (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGradeAsksOnlyJudgements(t *testing.T) {
	facts := Facts{Verify: okVerify(), Files: goodFiles(), Write: true}

	g := passAll("c5")
	Grade(context.Background(), writeCrit, facts, g)
	if diff := cmp.Diff([][]string{{"c5"}}, g.asked); diff != "" {
		t.Errorf("grader asked (-want +got):\n%s", diff)
	}

	g = passAll()
	Grade(context.Background(), writeCrit[:4], facts, g)
	if len(g.asked) != 0 {
		t.Errorf("grader asked %v with no judgement criteria", g.asked)
	}
}

func TestGradeCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := passAll("c5")
	got := Grade(ctx, []Criterion{cJudge}, Facts{}, g)
	want := Result{Verdict: VerdictUnknown, GraderError: "context canceled", Criteria: []CriterionResult{
		res(cJudge, StatusUnknown, "", "grader not run: context canceled"),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Grade (-want +got):\n%s", diff)
	}
	if len(g.asked) != 0 {
		t.Errorf("grader asked %v with a canceled context", g.asked)
	}
}

func TestGradeGraderCannotTamper(t *testing.T) {
	crit := []Criterion{cVerify, cUnchanged, {ID: "c5", Kind: KindJudgement, Text: "t", Paths: []string{"p"}}}
	facts := Facts{Verify: &VerifyFact{Command: goTest, Ran: true, ExitCode: 2}, Files: []FileChange{{Path: "go.mod", Change: "modified"}}}
	g := passAll("c5")
	g.mutate = true
	got := Grade(context.Background(), crit, facts, g)
	want := Result{Verdict: VerdictFailed, Criteria: []CriterionResult{
		res(cVerify, StatusFail, ByHub, "exit 2"),
		res(cUnchanged, StatusFail, ByHub, "go.mod modified"),
		res(Criterion{ID: "c5", Kind: KindJudgement, Text: "t", Paths: []string{"p"}}, StatusPass, ByModel, "looks right"),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Grade (-want +got):\n%s", diff)
	}
	if crit[2].Paths[0] != "p" || facts.Files[0].Path != "go.mod" || facts.Verify.ExitCode != 2 {
		t.Errorf("grader changed the caller's criteria or facts: %+v %+v", crit, facts)
	}
}

func TestGradeEndToEnd(t *testing.T) {
	crit := Criteria(Spec{Write: true, Verify: goTest, DefinitionOfDone: `
- Add package rubric.
- Do not change go.mod or go.sum.
- Only touch rubric/.
- Tests pass.`})
	facts := Facts{Write: true, Verify: okVerify(), Files: []FileChange{
		{Path: "rubric/rubric.go", Change: "added"}, {Path: "go.mod", Change: "modified"},
	}}
	got := Grade(context.Background(), crit, facts, passAll("c3"))
	if got.Verdict != VerdictNeedsRevision {
		t.Errorf("verdict = %s, want %s", got.Verdict, VerdictNeedsRevision)
	}
	want := "rubric: needs_revision — c4 fail: go.mod modified; c5 fail: outside rubric/: go.mod modified"
	if line := got.Line(); line != want {
		t.Errorf("Line() = %q, want %q", line, want)
	}
}

func TestLine(t *testing.T) {
	pass := func(id string) CriterionResult {
		return CriterionResult{Criterion: Criterion{ID: id}, Status: StatusPass}
	}
	unknown := func(id string) CriterionResult {
		return CriterionResult{Criterion: Criterion{ID: id}, Status: StatusUnknown}
	}
	fail := func(id, ev string) CriterionResult {
		return CriterionResult{Criterion: Criterion{ID: id}, Status: StatusFail, Evidence: ev}
	}
	tests := []struct {
		r    Result
		want string
	}{
		{Result{Verdict: VerdictSatisfied}, "rubric: satisfied (0/0 pass)"},
		{Result{Verdict: VerdictSatisfied, Criteria: []CriterionResult{pass("c1"), pass("c2"), pass("c3"), pass("c4")}}, "rubric: satisfied (4/4 pass)"},
		{Result{Verdict: VerdictUnknown, Criteria: []CriterionResult{pass("c1"), unknown("c2"), pass("c3"), pass("c4")}}, "rubric: unknown (3 pass; not checked: c2)"},
		{Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{pass("c1"), pass("c2"), fail("c3", "go.mod changed")}}, "rubric: needs_revision — c3 fail: go.mod changed"},
		{Result{Verdict: VerdictFailed, Criteria: []CriterionResult{fail("c1", "exit 1 on abc:\nFAIL"), fail("c2", "x")}}, "rubric: failed — c1 fail: exit 1 on abc: FAIL; c2 fail: x"},
		{
			Result{Verdict: VerdictNeedsRevision, Criteria: []CriterionResult{fail("c1", strings.Repeat("é", 300))}},
			"rubric: needs_revision — c1 fail: " + strings.Repeat("é", 160-len([]rune("rubric: needs_revision — c1 fail: "))-1) + "…",
		},
	}
	for _, tt := range tests {
		got := tt.r.Line()
		if got != tt.want {
			t.Errorf("Line() = %q, want %q", got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > 160 {
			t.Errorf("Line() has %d characters, want ≤ 160", n)
		}
	}
}

func TestFailed(t *testing.T) {
	r := Grade(context.Background(), writeCrit, Facts{Verify: okVerify(), Write: true}, nil)
	var ids []string
	for _, c := range r.Failed() {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"c2"}, ids); diff != "" {
		t.Errorf("Failed() (-want +got):\n%s", diff)
	}
	if got := (Result{}).Failed(); got != nil {
		t.Errorf("Failed() of an empty result = %v", got)
	}
}

func TestFeedback(t *testing.T) {
	crit := []Criterion{cVerify, cChanged, cUnchanged, cOnly, cJudge, {ID: "c6", Kind: KindJudgement, Text: "Docs say how"}}
	facts := Facts{Write: true, Verify: &VerifyFact{Command: goTest, Ran: true, ExitCode: 1, Commit: commit, OutputTail: "FAIL\tpkg\n"},
		Files: []FileChange{{Path: "go.mod", Change: "modified"}}}
	g := &fakeGrader{judgements: []Judgement{
		{ID: "c5", Status: StatusFail, Evidence: "Grade returns no reasons"},
		{ID: "c6", Status: StatusUnknown, Evidence: "no docs in the diff"},
	}}
	got := Grade(context.Background(), crit, facts, g).Feedback()
	want := strings.Join([]string{
		"The result is not acceptable yet (verdict: failed). Fix the failed criteria below and commit again.",
		"",
		"Failed:",
		"- c1 (verify) `go test ./...` exits 0 on the head commit",
		"  observed: exit 1 on 0123456789: FAIL pkg",
		"  to do: run `go test ./...`, fix what fails, and commit.",
		"- c3 (unchanged) Do not touch go.mod or docs/",
		"  observed: go.mod modified",
		"  to do: restore go.mod, docs/ to the base commit's version; these paths must not change.",
		"- c4 (only) Only change rubric/ and *.md",
		"  observed: outside rubric/, *.md: go.mod modified",
		"  to do: revert or move the changes listed; every change must stay within rubric/, *.md.",
		"- c5 (judgement) Grade explains each failure",
		"  observed: Grade returns no reasons",
		"  to do: revise so that this holds, then commit.",
		"",
		"Not checked (make sure these hold):",
		"- c6 (judgement) Docs say how",
		"  why: no docs in the diff",
	}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Feedback (-want +got):\n%s", diff)
	}
}

func TestFeedbackTodo(t *testing.T) {
	tests := []struct {
		crit  []Criterion
		facts Facts
		want  string // a line the feedback must contain
	}{
		{[]Criterion{cVerify}, Facts{Verify: &VerifyFact{Command: goTest, Ran: true, TimedOut: true}}, "  to do: make `go test ./...` finish in time (look for hangs and slow tests), then commit."},
		{[]Criterion{cVerify}, Facts{}, "  to do: the hub could not run `go test ./...` on your commit; make sure the commit is complete and the command works in a clean checkout."},
		{[]Criterion{cChanged}, Facts{Write: true}, "  to do: nothing was committed on the branch; make the change the task asks for and commit it."},
		{[]Criterion{cNothing}, Facts{Files: []FileChange{{Path: "a", Change: "added"}}}, "  to do: this job must not change any file; drop every change so the branch matches its base."},
	}
	for _, tt := range tests {
		got := Grade(context.Background(), tt.crit, tt.facts, nil).Feedback()
		if !strings.Contains(got, "\n"+tt.want) {
			t.Errorf("Feedback() = %q, want a line %q", got, tt.want)
		}
	}
}

func TestFeedbackWhenSatisfied(t *testing.T) {
	facts := Facts{Verify: okVerify(), Files: goodFiles(), Write: true}
	if got := Grade(context.Background(), writeCrit, facts, passAll("c5")).Feedback(); got != "" {
		t.Errorf("Feedback() = %q, want empty when everything passed", got)
	}
	got := Grade(context.Background(), writeCrit, facts, nil).Feedback()
	want := "Every criterion that could be checked passes.\n\nNot checked (make sure these hold):\n- c5 (judgement) Grade explains each failure\n  why: no model grader: needs a reader"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Feedback (-want +got):\n%s", diff)
	}
}

func TestResultJSON(t *testing.T) {
	r := Grade(context.Background(), []Criterion{cChanged}, Facts{Files: goodFiles()}, nil)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Verdict":"satisfied","Criteria":[{"ID":"c2","Text":"the branch changes at least one file","Kind":"changed","Status":"pass","Evidence":"2 files changed: rubric/grade.go, README.md","By":"hub"}]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

// TestNoChangesExpected: "No changes are expected." passes by hub when
// nothing changed, and is the grader's to judge when something did.
func TestNoChangesExpected(t *testing.T) {
	crit := Criteria(Spec{Write: true, DefinitionOfDone: "No changes are expected."})
	if len(crit) != 1 || !crit[0].NoChanges {
		t.Fatalf("criteria: %+v", crit)
	}
	r := Grade(context.Background(), crit, Facts{Write: true}, nil)
	if r.Verdict != VerdictSatisfied || r.Criteria[0].Status != StatusPass || r.Criteria[0].By != ByHub {
		t.Errorf("nothing changed: %+v", r)
	}
	r = Grade(context.Background(), crit, Facts{Write: true, Files: []FileChange{{Path: "a.go", Change: "modified"}}}, nil)
	if r.Verdict != VerdictUnknown || r.Criteria[0].Status != StatusUnknown {
		t.Errorf("a change, no grader: %+v", r)
	}
	g := &fakeGrader{judgements: []Judgement{{ID: "c1", Status: StatusFail, Evidence: "a.go changed for no reason"}}}
	r = Grade(context.Background(), crit, Facts{Write: true, Files: []FileChange{{Path: "a.go", Change: "modified"}}}, g)
	if r.Verdict != VerdictNeedsRevision || r.Criteria[0].By != ByModel {
		t.Errorf("a change, the grader fails it: %+v", r)
	}
}
