package job

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/rubric"
)

// Axes of the verdict matrix.
var (
	// verify: none given, passed, failed on the head commit.
	verifies = []string{"none", "pass", "fail"}
	// files: what base..head holds.
	fileSets = map[string][]protocol.FileChange{
		"none":    nil,
		"src":     {{Path: "src/a.go", Change: "modified", Added: 3, Deleted: 1}},
		"go.mod":  {{Path: "src/a.go", Change: "modified", Added: 1}, {Path: "go.mod", Change: "modified", Added: 1}},
		"deleted": {{Path: "src/old.go", Change: "deleted", Deleted: 40}},
	}
	// definitions of done: none, one hub checks itself, one only a model
	// can judge, and one saying nothing needs to change.
	definitions = map[string]string{
		"none":       "",
		"hub":        "Only change src/. Do not touch go.mod.",
		"judgement":  "The error message names the file it could not read.",
		"no changes": "No changes are expected.",
	}
	// the model grader's answer to a judgement criterion ("" for no grader).
	graders = []rubric.Status{"", rubric.StatusPass, rubric.StatusFail}
	// how the engine's run ended.
	engines = []protocol.State{protocol.StateSucceeded, protocol.StateFailed}
)

// judge answers every judgement criterion with one status.
type judge rubric.Status

func (g judge) Judge(_ context.Context, crit []rubric.Criterion, _ rubric.Facts) ([]rubric.Judgement, error) {
	var out []rubric.Judgement
	for _, c := range crit {
		out = append(out, rubric.Judgement{ID: c.ID, Status: rubric.Status(g), Evidence: "the grader read the diff"})
	}
	return out, nil
}

// TestVerdictMatrix: every combination of verify × definition of done ×
// the model's judgement × files changed × how the run ended goes the way a
// real job's ending goes (criteria, grade, Judge, Close on a real store,
// the status read back) and its state, rubric and `left:` agree:
//   - a failed rubric never reads succeeded, and a job that failed on its
//     rubric says why in its state line;
//   - a success whose rubric needs revision or could not check a criterion
//     says so in its state line; "satisfied" means every criterion passed;
//   - `left:` says to land only a succeeded job with files on its branch,
//     and says there is nothing to land when it changed nothing;
//   - a deletion of base content is named in status, result and the line.
//
// The expected state comes from an oracle written from the rules, not from
// the code under test.
func TestVerdictMatrix(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	n := 0
	table := []string{"engine | verify | definition | grader | files → state · rubric · left"}
	for _, eng := range engines {
		for _, vf := range verifies {
			for dodName, dod := range definitions {
				for _, gr := range graders {
					if gr != "" && dodName != "judgement" {
						continue // a grader is asked only about judgement criteria
					}
					for filesName, files := range fileSets {
						n++
						row := fmt.Sprintf("%s | %s | %s | %s | %s", eng, vf, dodName, orNone(string(gr)), filesName)
						t.Run(strings.ReplaceAll(row, " | ", "/"), func(t *testing.T) {
							got := runVerdict(t, ctx, st, fmt.Sprintf("m%04d", n), eng, vf, dod, gr, files, now)
							table = append(table, row+" → "+got.state+" · "+orNone(got.rubric)+" · "+got.left)
							checkVerdict(t, got, eng, vf, dodName, gr, filesName)
						})
					}
				}
			}
		}
	}
	t.Logf("%d combinations:\n%s", n, strings.Join(table, "\n"))
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// verdictView is what a reader sees of one ended job.
type verdictView struct {
	state, category, rubric, line, summary, left string
	alerts                                       []string
	criteria                                     []protocol.RubricCriterion
}

// runVerdict ends a job as the shim does: grade, Judge, Close; then reads
// its status and result as every front end does.
func runVerdict(t *testing.T, ctx context.Context, st *store.Store, id string, eng protocol.State, vf, dod string, gr rubric.Status,
	files []protocol.FileChange, now time.Time) verdictView {
	t.Helper()
	j := &store.Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Repo: "/r", BaseSHA: "b0", Branch: "hub/" + id, Task: "fix the loader",
		MaxMicros: micros.FromUSD(1)}
	if err := st.CreateJob(ctx, j, now); err != nil {
		t.Fatal(err)
	}
	if adm, err := st.Admit(ctx, id, store.Limits{MaxRunning: 1 << 20, MonthlyCap: micros.FromUSD(1 << 20)}, now); err != nil || !adm.Admitted {
		t.Fatalf("admit: %+v %v", adm, err)
	}
	verifyCmd := ""
	var verify *protocol.Verify
	state, reason := eng, ""
	if eng != protocol.StateSucceeded {
		reason = "the worker exited with code 1"
	}
	head := "b0"
	if len(files) > 0 {
		head = "h1"
	}
	if vf != "none" {
		verifyCmd = "go test ./..."
		if eng == protocol.StateSucceeded { // verify runs after a clean run only
			verify = &protocol.Verify{Command: verifyCmd, Commit: head}
			if vf == "fail" {
				verify.ExitCode, verify.OutputTail = 1, "--- FAIL: TestLoad"
				state, reason = protocol.StateFailed, "verify failed: `go test ./...` exited 1"
			}
		}
	}
	facts := rubric.Facts{Write: true}
	if verifyCmd != "" {
		facts.Verify = &rubric.VerifyFact{Command: verifyCmd}
		if verify != nil {
			facts.Verify.Ran, facts.Verify.ExitCode, facts.Verify.OutputTail, facts.Verify.Commit = true, verify.ExitCode, verify.OutputTail, verify.Commit
		}
	}
	for _, f := range files {
		facts.Files = append(facts.Files, rubric.FileChange{Path: f.Path, Change: f.Change})
	}
	var g rubric.Grader
	if gr != "" {
		g = judge(gr)
	}
	graded := RubricView(rubric.Grade(ctx, rubric.Criteria(rubric.Spec{DefinitionOfDone: dod, Verify: verifyCmd, Write: true}), facts, g))
	category := ""
	if s, c, r := Judge(state, graded); s != state {
		state, category, reason = s, c, r
	}
	ev := &protocol.Evidence{ID: id, Kind: protocol.KindWrite, Engine: "exec", Repo: "/r", Base: "b0", Head: head, Branch: "hub/" + id,
		Files: append([]protocol.FileChange{}, files...), Commits: []protocol.Commit{}, Verify: verify, Rubric: graded}
	if _, err := Close(ctx, st, j, End{State: state, Category: category, Reason: reason, Head: head, CostKnown: true, Evidence: ev}, now); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := store.DecodeEvidence(rec.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	status := view.Status(rec, nil, now)
	summary := view.Summary(status, stored)
	left := ""
	for _, l := range strings.Split(summary, "\n") {
		if s, ok := strings.CutPrefix(l, "left: "); ok {
			left = s
		}
	}
	if left == "" {
		t.Fatalf("the summary has no left: line:\n%s", summary)
	}
	return verdictView{state: string(status.State), category: status.Category, rubric: status.Rubric, line: view.Line(status),
		summary: summary, left: left, alerts: status.Alerts, criteria: graded.Criteria}
}

func checkVerdict(t *testing.T, got verdictView, eng protocol.State, vf, dodName string, gr rubric.Status, filesName string) {
	t.Helper()
	changed := filesName != "none"
	// The oracle: the run failed, verify failed or could not run, a write
	// job with work to do changed nothing, or a rule hub checks broke.
	wantFailed := eng != protocol.StateSucceeded || vf == "fail" ||
		(!changed && dodName != "no changes") ||
		(dodName == "hub" && filesName == "go.mod")
	wantState := string(protocol.StateSucceeded)
	if wantFailed {
		wantState = string(protocol.StateFailed)
	}
	if got.state != wantState {
		t.Fatalf("state %s, want %s\nline: %s\nsummary:\n%s", got.state, wantState, got.line, got.summary)
	}
	succeeded := got.state == string(protocol.StateSucceeded)
	if got.rubric == string(rubric.VerdictFailed) && succeeded {
		t.Errorf("rubric failed but the job succeeded: %s", got.line)
	}
	if got.rubric == string(rubric.VerdictSatisfied) {
		for _, c := range got.criteria {
			if c.Status != string(rubric.StatusPass) {
				t.Errorf("rubric satisfied with %s %s: %s", c.ID, c.Status, c.Evidence)
			}
		}
	}
	if !succeeded && strings.Contains(got.summary, "rubric: satisfied") || strings.Contains(got.line, "rubric satisfied") {
		t.Errorf("a %s job reads satisfied:\n%s", got.state, got.summary)
	}
	if got.rubric == "" {
		t.Errorf("an ended job that was graded has no rubric verdict in its status")
	}
	// A success that is not plainly satisfied says so in its line.
	unsure := got.rubric == string(rubric.VerdictNeedsRevision) || got.rubric == string(rubric.VerdictUnknown)
	if succeeded && unsure != strings.Contains(got.line, "rubric "+got.rubric) {
		t.Errorf("rubric %s, state line: %s", got.rubric, got.line)
	}
	if succeeded && dodName == "judgement" && gr == "" && got.rubric != string(rubric.VerdictUnknown) {
		t.Errorf("a judgement nobody checked: rubric %s, want unknown", got.rubric)
	}
	if succeeded && dodName == "judgement" && gr == rubric.StatusFail && got.rubric != string(rubric.VerdictNeedsRevision) {
		t.Errorf("a judgement the model failed: rubric %s, want needs_revision", got.rubric)
	}
	// Failing on the rubric: the category says so and the line says why.
	if wantFailed && eng == protocol.StateSucceeded && vf != "fail" {
		if got.category != protocol.CategoryRubric || !strings.Contains(got.line, "rubric: failed") && !strings.Contains(got.line, "rubric: needs_revision") {
			t.Errorf("failed on its rubric: category %q, line: %s", got.category, got.line)
		}
	}
	// left: lands only what succeeded with files; says when nothing is there.
	lands := strings.Contains(got.left, "land it")
	if lands != (succeeded && changed) {
		t.Errorf("left: %q for a %s job with files %s", got.left, got.state, filesName)
	}
	if succeeded && !changed && !strings.Contains(got.left, "nothing to land") {
		t.Errorf("a success that changed nothing: left: %q", got.left)
	}
	if succeeded && got.rubric == string(rubric.VerdictNeedsRevision) && !strings.HasPrefix(got.left, "revise it") {
		t.Errorf("needs revision: left: %q", got.left)
	}
	if succeeded && got.rubric == string(rubric.VerdictUnknown) && !strings.HasPrefix(got.left, "check ") {
		t.Errorf("unknown criteria: left: %q", got.left)
	}
	// A deletion of base content is named everywhere.
	if filesName == "deleted" {
		if len(got.alerts) != 1 || !strings.Contains(got.alerts[0], "src/old.go") ||
			!strings.Contains(got.line, "⚠ deleted 1 file(s) of the base") || !strings.Contains(got.summary, "⚠ deleted 1 file(s) of the base: src/old.go") {
			t.Errorf("deletion not named: alerts %q\nline: %s\nsummary:\n%s", got.alerts, got.line, got.summary)
		}
	} else if len(got.alerts) != 0 {
		t.Errorf("alerts %q for files %s", got.alerts, filesName)
	}
}

// TestRefAlerts: refs that moved in the user's repository while a job ran,
// and the stash taken, are named with how to put them back.
func TestRefAlerts(t *testing.T) {
	a, b := "1111111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	for _, c := range []struct {
		rc   protocol.RefChange
		want string
	}{
		{protocol.RefChange{Ref: "refs/heads/main", Before: a, After: b},
			"branch main moved while it ran: 1111111111 → 2222222222 (git update-ref refs/heads/main " + a + " puts it back)"},
		{protocol.RefChange{Ref: "refs/heads/feature", Before: a},
			"branch feature was deleted while it ran (git update-ref refs/heads/feature " + a + " puts it back)"},
		{protocol.RefChange{Ref: "refs/tags/v1", After: b},
			"tag v1 was made at 2222222222 while it ran (git update-ref -d refs/tags/v1 removes it)"},
		{protocol.RefChange{Ref: "refs/stash", Before: a},
			"your stash 1111111111 was taken while it ran (git stash store -m restored " + a + " puts it back)"},
		{protocol.RefChange{Ref: "refs/stash", Before: a, After: b},
			"your stash changed while it ran: its top was 1111111111, now 2222222222 (git stash store -m restored " + a + " puts the old top back)"},
		{protocol.RefChange{Ref: "refs/notes/commits", Before: a, After: b},
			"ref refs/notes/commits moved while it ran: 1111111111 → 2222222222 (git update-ref refs/notes/commits " + a + " puts it back)"},
	} {
		ev := &protocol.Evidence{}
		ev.Observed.RefChanges = []protocol.RefChange{c.rc}
		if got := view.Alerts(ev); len(got) != 1 || got[0] != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.rc, got, c.want)
		}
	}
}
