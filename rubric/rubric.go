// Package rubric grades a delegated job's result against its definition of
// done.
//
// It owns two steps, both pure functions of their inputs:
//
//   - Criteria turns a definition of done (free text, usually a markdown
//     list) and the caller's verify command into an ordered list of criteria.
//     It recognises, conservatively, the few kinds of item the hub can check
//     itself; everything else is a judgement that needs a reader.
//   - Grade grades those criteria from the facts the hub observed itself (the
//     verify run on the head commit, the files changed between base and head)
//     plus, for judgement criteria only, an optional model grader's view.
//
// rubric must never let a model's word overrule what the hub observed, and it
// must never run anything: it imports nothing of the hub, starts no process
// and does no I/O. The hub runs the verify command and hands the outcome in
// as Facts.
//
// # Criteria
//
// The criteria come in a stable order with IDs c1, c2, …: the verify
// criterion ("`<cmd>` exits 0 on the head commit") when Spec.Verify is set;
// then, for a write job, "the branch changes at least one file" (kind
// changed) unless the definition says no changes are expected, or, for a read
// job, "no files changed" (kind unchanged, path "**"); then the items of the
// definition of done in their order.
//
// The definition is split into items: markdown bullets ("-", "*", "+", "1.",
// "1)"), else lines, else sentences when it is a single paragraph. Empty
// lines, headings and rules are ignored; a line ending in ":" that introduces
// a list is dropped, and a bullet ending in ":" takes its sub-bullets as its
// own text. Within an item, each sentence or clause that is mechanically
// checkable becomes its own criterion and the rest stays one judgement. The
// recogniser (case-insensitive, whole sentence or clause) knows:
//
//   - unchanged: "do not|don't|never|must not change|modify|touch|edit|alter|
//     update X", "leave|keep X unchanged|untouched|alone|intact|as is", "X must
//     not change", "X must not be modified", "X stays|remains|is unchanged",
//     "X is off-limits|read-only", "… without changing|touching X".
//   - only: "only change|modify|touch|edit X", "change only X", "changes
//     (are|must be) limited|restricted|confined to X", "changes stay within
//     X", "touch|change nothing outside X", "do not change anything|files
//     outside X", "no changes outside X", "only X may change".
//   - nothing may change (unchanged "**", and no changed criterion): "do not
//     change anything|any files|the repository", "make no changes", "change
//     nothing", "no files may change", "leave the repository|everything
//     unchanged", "this is a read-only task".
//   - covered by the verify criterion, whose text then quotes them: "`cmd`
//     passes|succeeds|exits 0" when cmd is the verify command or a step of its
//     plain && chain; "(all|existing) tests pass" and "the verify command
//     passes" when a verify command is set.
//   - "no changes are expected|needed|required" stays a judgement but drops
//     the changed criterion.
//
// X must consist of nothing but paths or globs (backquoted or quoted tokens,
// or plain tokens containing "/", "." or "*"), the joiners "and", "or", ","
// and a few filler words ("the", "files", "anything in", "under", …).
// Anything else left over, an absolute path, a parenthesis, or a conditional
// or softening word anywhere in the sentence ("if", "unless", "except",
// "when", "avoid", "try", "ideally", …) makes the item a judgement instead:
// "update README.md to describe X" or "do not change the behaviour of
// parse.go" never become rules.
//
// # Grading
//
//   - Mechanical criteria (verify, changed, unchanged, only) are graded by the
//     hub from Facts alone, By "hub"; a grader never sees them, and anything a
//     grader says about them is ignored.
//   - verify passes iff the verify command ran, exited 0 and did not time out
//     ("exit 0 on <commit>", "exit 1 on <commit>: <last output line>", "timed
//     out on <commit>", "did not run: …"). No verify fact, or a fact about a
//     different command, counts as did not run.
//   - changed passes iff at least one file changed between base and head.
//   - unchanged fails naming each changed path matching one of its paths;
//     only fails naming each changed path outside all of its paths. A rename
//     touches both its old and its new path; a copy only its new path.
//   - Paths match like .gitignore entries: rooted at the repository top
//     ("go.mod" is the top-level go.mod only), covering everything below a
//     matching directory ("docs", "docs/", "hub/*"); "*", "?" and "[…]" match
//     within one segment, a "**" segment matches any number of segments, and
//     a glob without "/" ("*.md", "*_test.go") matches a name at any depth.
//   - Judgement criteria go to the grader, once, and only they do. With no
//     grader, or when the grader fails, they are unknown with By "" and the
//     reason; a grader error is also kept in Result.GraderError. Judgements
//     for IDs not asked about are ignored; a missing judgement, or one with an
//     invalid status, is unknown. A model's pass or fail is By "model"; every
//     unknown has By "".
//   - Verdict: failed if a verify criterion fails (failed, timed out, did not
//     run) or a changed criterion fails (a write job changed nothing);
//     otherwise needs_revision if any criterion fails; otherwise unknown if
//     any criterion could not be checked (Line names them); otherwise
//     satisfied. Satisfied means every criterion passed, never "nothing
//     failed that anyone looked at".
//   - Results keep the order of the criteria given.
//
// Facts.Write is context for a grader; what it implies is already encoded in
// the criteria that Criteria built from the same Spec.
package rubric

import "context"

// Kind says how a criterion is checked.
type Kind string

const (
	// KindVerify: the verify command exits 0 on the head commit.
	KindVerify Kind = "verify"
	// KindChanged: the job changes at least one file.
	KindChanged Kind = "changed"
	// KindUnchanged: no file matching Paths changes ("**": nothing changes).
	KindUnchanged Kind = "unchanged"
	// KindOnly: every change stays within Paths.
	KindOnly Kind = "only"
	// KindJudgement: needs a reader; a model grader, else unknown.
	KindJudgement Kind = "judgement"
)

// mechanical reports whether the hub grades kind k itself.
func (k Kind) mechanical() bool {
	switch k {
	case KindVerify, KindChanged, KindUnchanged, KindOnly:
		return true
	}
	return false
}

// Criterion is one checkable part of the definition of done.
type Criterion struct {
	ID      string // c1, c2, … in a stable order
	Text    string // what the definition says (or the hub's wording)
	Kind    Kind
	Paths   []string `json:",omitempty"` // paths/globs, for unchanged and only
	Command string   `json:",omitempty"` // for verify
	// Covers are the definition's sentences a verify criterion stands for
	// ("All tests pass."), as written.
	Covers []string `json:",omitempty"`
	// NoChanges marks a judgement that only says no change is expected
	// ("No changes are needed."): hub passes it when nothing changed; a
	// change is for a grader to judge.
	NoChanges bool `json:",omitempty"`
}

// Spec is what the caller asked for.
type Spec struct {
	DefinitionOfDone string
	Verify           string // shell command the hub runs on the head commit; "" for none
	Write            bool   // a write job must change files; a read job must not
	// Claim marks DefinitionOfDone as what someone says they did (hub
	// step), not what a job must do: no criterion about whether files
	// change is added (Write is then ignored).
	Claim bool
}

// FileChange is one file changed between the base and head commits. Change
// is one of added, modified, deleted, renamed, copied, type_changed; OldPath
// is set for renamed and copied.
type FileChange struct {
	Path, OldPath, Change string
}

// VerifyFact is the hub's own record of running the verify command.
type VerifyFact struct {
	Command    string
	Ran        bool // false: it could not be started; OutputTail may say why
	ExitCode   int
	TimedOut   bool
	OutputTail string
	Commit     string // the commit it ran on
}

// Facts is what the hub observed itself.
type Facts struct {
	Verify *VerifyFact  // nil: no verify result
	Files  []FileChange // base..head
	Write  bool
}

// Status is the outcome of one criterion.
type Status string

const (
	StatusPass    Status = "pass"
	StatusFail    Status = "fail"
	StatusUnknown Status = "unknown"
)

// Who graded a criterion (CriterionResult.By); "" when it is unknown.
const (
	ByHub   = "hub"
	ByModel = "model"
)

// Judgement is a grader's view of one criterion.
type Judgement struct {
	ID       string
	Status   Status
	Evidence string
}

// Grader is an optional model grader. Implementations live elsewhere; they
// get read-only tools over the diff and the verify output. Grade passes it
// the judgement criteria only (copies), and calls it at most once.
type Grader interface {
	Judge(ctx context.Context, crit []Criterion, facts Facts) ([]Judgement, error)
}

// Verdict is the overall outcome.
type Verdict string

const (
	VerdictSatisfied     Verdict = "satisfied"
	VerdictNeedsRevision Verdict = "needs_revision"
	VerdictFailed        Verdict = "failed"
	// VerdictUnknown: nothing failed, but a criterion could not be checked
	// (a judgement with no grader, or one the grader could not tell).
	VerdictUnknown Verdict = "unknown"
)

// CriterionResult is one graded criterion.
type CriterionResult struct {
	Criterion
	Status   Status
	Evidence string
	By       string // ByHub, ByModel, or "" when unknown
}

// Result is a graded rubric.
type Result struct {
	Verdict     Verdict
	Criteria    []CriterionResult
	GraderError string `json:",omitempty"`
}
