package rubric

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func judged(text string) part  { return part{kind: KindJudgement, text: text} }
func covered(text string) part { return part{kind: KindVerify, text: text} }
func unchanged(text string, paths ...string) part {
	return part{kind: KindUnchanged, text: text, paths: paths}
}
func only(text string, paths ...string) part { return part{kind: KindOnly, text: text, paths: paths} }
func nothing(text string) part {
	return part{kind: KindUnchanged, text: text, paths: []string{"**"}, noChanges: true}
}

const goTest = "go test ./..."

func TestRecognise(t *testing.T) {
	tests := []struct {
		in, verify string
		want       []part
	}{
		// unchanged
		{"Do not change go.mod.", "", []part{unchanged("Do not change go.mod.", "go.mod")}},
		{"Do not modify go.mod or go.sum", "", []part{unchanged("Do not modify go.mod or go.sum", "go.mod", "go.sum")}},
		{"do NOT EDIT go.mod, go.sum, and docs/", "", []part{unchanged("do NOT EDIT go.mod, go.sum, and docs/", "go.mod", "go.sum", "docs/")}},
		{"Don't touch `Makefile`.", "", []part{unchanged("Don't touch `Makefile`.", "Makefile")}},
		{"Don’t touch go.mod", "", []part{unchanged("Don’t touch go.mod", "go.mod")}},
		{"Never touch ./hub/gitx/", "", []part{unchanged("Never touch ./hub/gitx/", "hub/gitx/")}},
		{"You must not alter the files in vendor/", "", []part{unchanged("You must not alter the files in vendor/", "vendor/")}},
		{"The change must not touch *.pb.go files", "", []part{unchanged("The change must not touch *.pb.go files", "*.pb.go")}},
		{"Do not make any changes to `docs/**`", "", []part{unchanged("Do not make any changes to `docs/**`", "docs/**")}},
		{"Do not touch go.mod at all!", "", []part{unchanged("Do not touch go.mod at all!", "go.mod")}},
		{"Leave docs/ untouched.", "", []part{unchanged("Leave docs/ untouched.", "docs/")}},
		{"Leave go.mod alone", "", []part{unchanged("Leave go.mod alone", "go.mod")}},
		{"Keep \"LICENSE\" as is", "", []part{unchanged("Keep \"LICENSE\" as is", "LICENSE")}},
		{"go.mod must not change", "", []part{unchanged("go.mod must not change", "go.mod")}},
		{"go.mod and go.sum should not be modified.", "", []part{unchanged("go.mod and go.sum should not be modified.", "go.mod", "go.sum")}},
		{"Files in vendor/ must never change", "", []part{unchanged("Files in vendor/ must never change", "vendor/")}},
		{"go.mod stays unchanged", "", []part{unchanged("go.mod stays unchanged", "go.mod")}},
		{"`go.sum` remains untouched", "", []part{unchanged("`go.sum` remains untouched", "go.sum")}},
		{"go.mod unchanged", "", []part{unchanged("go.mod unchanged", "go.mod")}},
		{"Make sure that README.md is unchanged.", "", []part{unchanged("Make sure that README.md is unchanged.", "README.md")}},
		{"migrations/ is off-limits", "", []part{unchanged("migrations/ is off-limits", "migrations/")}},
		{"**Do not** touch `docs/**`", "", []part{unchanged("**Do not** touch `docs/**`", "docs/**")}},
		{"IMPORTANT: do not edit **/*.gen.go", "", []part{unchanged("IMPORTANT: do not edit **/*.gen.go", "**/*.gen.go")}},
		{"Do not touch if.go", "", []part{unchanged("Do not touch if.go", "if.go")}},
		{"Without changing go.mod.", "", []part{unchanged("Without changing go.mod", "go.mod")}},
		{"Fix the bug without changing go.mod", "", []part{judged("Fix the bug"), unchanged("without changing go.mod", "go.mod")}},
		{"Add the flag, without touching `cmd/` or `hub/cli/`.", "", []part{judged("Add the flag"), unchanged("without touching `cmd/` or `hub/cli/`", "cmd/", "hub/cli/")}},
		{"Add the flag and do not touch go.mod", "", []part{judged("Add the flag"), unchanged("do not touch go.mod", "go.mod")}},
		{"Add the flag; go.sum must not change.", "", []part{judged("Add the flag"), unchanged("go.sum must not change", "go.sum")}},
		{"Do not change go.mod and go.sum, and add a test for the parser", "", []part{unchanged("Do not change go.mod and go.sum", "go.mod", "go.sum"), judged("add a test for the parser")}},
		{"Do not change go.mod; do not change go.sum.", "", []part{unchanged("Do not change go.mod", "go.mod"), unchanged("do not change go.sum", "go.sum")}},
		{"Only change rubric/, and do not touch rubric/testdata/", "", []part{only("Only change rubric/", "rubric/"), unchanged("do not touch rubric/testdata/", "rubric/testdata/")}},
		{"Don't touch anything in docs/", "", []part{unchanged("Don't touch anything in docs/", "docs/")}},

		// only
		{"Only change files under rubric/", "", []part{only("Only change files under rubric/", "rubric/")}},
		{"You may only touch `rubric/` and `docs/rubric.md`.", "", []part{only("You may only touch `rubric/` and `docs/rubric.md`.", "rubric/", "docs/rubric.md")}},
		{"Change only rubric/*.go", "", []part{only("Change only rubric/*.go", "rubric/*.go")}},
		{"Changes limited to rubric/", "", []part{only("Changes limited to rubric/", "rubric/")}},
		{"All changes must be confined to hub/gitx/ and hub/job/", "", []part{only("All changes must be confined to hub/gitx/ and hub/job/", "hub/gitx/", "hub/job/")}},
		{"Changes stay within rubric/", "", []part{only("Changes stay within rubric/", "rubric/")}},
		{"touch nothing outside rubric/", "", []part{only("touch nothing outside rubric/", "rubric/")}},
		{"Do not change anything outside of rubric/.", "", []part{only("Do not change anything outside of rubric/.", "rubric/")}},
		{"Don't modify files outside docs/", "", []part{only("Don't modify files outside docs/", "docs/")}},
		{"No changes outside rubric/", "", []part{only("No changes outside rubric/", "rubric/")}},
		{"Nothing outside rubric/ may change", "", []part{only("Nothing outside rubric/ may change", "rubric/")}},
		{"Only files in rubric/ may be changed", "", []part{only("Only files in rubric/ may be changed", "rubric/")}},
		{"Write the package and only touch rubric/", "", []part{judged("Write the package"), only("only touch rubric/", "rubric/")}},

		// nothing may change
		{"Do not change anything.", "", []part{nothing("Do not change anything.")}},
		{"Don't modify any files", "", []part{nothing("Don't modify any files")}},
		{"Make no changes", "", []part{nothing("Make no changes")}},
		{"Change nothing.", "", []part{nothing("Change nothing.")}},
		{"No files may be changed", "", []part{nothing("No files may be changed")}},
		{"Leave the repository unchanged", "", []part{nothing("Leave the repository unchanged")}},
		{"This is a read-only task.", "", []part{nothing("This is a read-only task.")}},
		{"No changes are expected.", "", []part{{kind: KindJudgement, text: "No changes are expected.", noChanges: true, expects: true}}},
		{"No code changes needed", "", []part{{kind: KindJudgement, text: "No code changes needed", noChanges: true, expects: true}}},
		{"Report the root cause; no changes are expected", "", []part{judged("Report the root cause"), {kind: KindJudgement, text: "no changes are expected", noChanges: true, expects: true}}},

		// covered by verify
		{"`go test ./...` passes", goTest, []part{covered("`go test ./...` passes")}},
		{"`go test  ./...` exits 0.", goTest, []part{covered("`go test  ./...` exits 0.")}},
		{"Running `go test ./...` succeeds", goTest, []part{covered("Running `go test ./...` succeeds")}},
		{"`go vet ./...` must pass", "go vet ./... && go test ./...", []part{covered("`go vet ./...` must pass")}},
		{"Tests pass", goTest, []part{covered("Tests pass")}},
		{"All existing tests still pass.", goTest, []part{covered("All existing tests still pass.")}},
		{"The verify command passes", goTest, []part{covered("The verify command passes")}},
		{"Fix the bug; tests pass", goTest, []part{judged("Fix the bug"), covered("tests pass")}},
		{"Do not touch go.mod and tests pass", goTest, []part{unchanged("Do not touch go.mod", "go.mod"), covered("tests pass")}},

		// false positives to avoid: all judgement
		{"Update README.md to describe the flag", "", []part{judged("Update README.md to describe the flag")}},
		{"Update go.mod and go.sum", "", []part{judged("Update go.mod and go.sum")}},
		{"Do not change the behaviour of parse.go", "", []part{judged("Do not change the behaviour of parse.go")}},
		{"Don't modify the public API in api.go", "", []part{judged("Don't modify the public API in api.go")}},
		{"Don't change main.go's exported names", "", []part{judged("Don't change main.go's exported names")}},
		{"Do not change go.mod unless a dependency is needed", "", []part{judged("Do not change go.mod unless a dependency is needed")}},
		{"If the tests fail, do not touch go.mod", "", []part{judged("If the tests fail, do not touch go.mod")}},
		{"Except for docs/, do not change anything", "", []part{judged("Except for docs/, do not change anything")}},
		{"Avoid changing go.mod", "", []part{judged("Avoid changing go.mod")}},
		{"Try not to touch go.mod", "", []part{judged("Try not to touch go.mod")}},
		{"Do not touch go.mod (it is generated)", "", []part{judged("Do not touch go.mod (it is generated)")}},
		{"Do not change go.mod in any way other than adding cmp", "", []part{judged("Do not change go.mod in any way other than adding cmp")}},
		{"Do not touch Makefile", "", []part{judged("Do not touch Makefile")}},
		{"Do not change the tests", "", []part{judged("Do not change the tests")}},
		{"Do not change e.g. the parser", "", []part{judged("Do not change e.g. the parser")}},
		{"Do not bump the version to 1.2.3", "", []part{judged("Do not bump the version to 1.2.3")}},
		{"Do not change 1.2.3", "", []part{judged("Do not change 1.2.3")}},
		{"Do not touch https://example.com/x", "", []part{judged("Do not touch https://example.com/x")}},
		{"Do not touch ../other/repo", "", []part{judged("Do not touch ../other/repo")}},
		{"touch ONLY files under /work/main/rubric/", "", []part{judged("touch ONLY files under /work/main/rubric/")}},
		{"Do not change anything else", "", []part{judged("Do not change anything else")}},
		{"Make no other changes", "", []part{judged("Make no other changes")}},
		{"Do not delete go.mod", "", []part{judged("Do not delete go.mod")}},
		{"Only change the parser", "", []part{judged("Only change the parser")}},
		{"Only modify README.md to add a section", "", []part{judged("Only modify README.md to add a section")}},
		{"No changes outside the parser", "", []part{judged("No changes outside the parser")}},
		{"Changes are in line with the style guide", "", []part{judged("Changes are in line with the style guide")}},
		{"Keep the changes in rubric/ small", "", []part{judged("Keep the changes in rubric/ small")}},
		{"Only README.md should mention the flag", "", []part{judged("Only README.md should mention the flag")}},
		{"The parser handles files in docs/ that do not change", "", []part{judged("The parser handles files in docs/ that do not change")}},
		{"Explain why go.mod must not change", "", []part{judged("Explain why go.mod must not change")}},
		{"Refactor without changing behaviour", "", []part{judged("Refactor without changing behaviour")}},
		{"Do not touch go.mod without asking", "", []part{judged("Do not touch go.mod without asking")}},
		{"Never edit generated code in gen/", "", []part{judged("Never edit generated code in gen/")}},
		{"Explain the failure and why tests pass", goTest, []part{judged("Explain the failure and why tests pass")}},
		{"Tests pass", "", []part{judged("Tests pass")}},
		{"New tests pass", goTest, []part{judged("New tests pass")}},
		{"Tests pass on Windows", goTest, []part{judged("Tests pass on Windows")}},
		{"Fix the bug so that tests pass", goTest, []part{judged("Fix the bug so that tests pass")}},
		{"`go vet ./...` passes", goTest, []part{judged("`go vet ./...` passes")}},
		{"`go vet ./...` passes", "go vet ./... | tee log && go test ./...", []part{judged("`go vet ./...` passes")}},
		{"`go test ./...` passes", "", []part{judged("`go test ./...` passes")}},
		{"No changes are expected if the bug is already fixed", "", []part{judged("No changes are expected if the bug is already fixed")}},
	}
	for _, tt := range tests {
		got := recognise(tt.in, tt.verify)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(part{})); diff != "" {
			t.Errorf("recognise(%q, %q) (-want +got):\n%s", tt.in, tt.verify, diff)
		}
	}
}

func TestParsePaths(t *testing.T) {
	tests := []struct {
		in   string
		want []string // nil: not a list of paths
	}{
		{"go.mod", []string{"go.mod"}},
		{"the go.mod file", []string{"go.mod"}},
		{"`Makefile`, \"LICENSE\" and ./docs/", []string{"Makefile", "LICENSE", "docs/"}},
		{"go.mod and go.mod", []string{"go.mod"}},
		{"anything under hub/ or cmd/*", []string{"hub/", "cmd/*"}},
		{"these files: go.mod, go.sum", []string{"go.mod", "go.sum"}},
		{"*_test.go", []string{"*_test.go"}},
		{"the files", nil},
		{"Makefile", nil},
		{"`go test ./...`", nil},
		{"`unterminated", nil},
		{"docs/[", nil},
		{"/etc/passwd", nil},
		{"~/x.go", nil},
		{"--json", nil},
		{"a//b.go", nil},
		{"v1.2.3", nil},
		{"etc.", nil},
		{"go.mod's", nil},
		{"x.go (generated)", nil},
	}
	for _, tt := range tests {
		got, ok := parsePaths(tt.in)
		if ok != (tt.want != nil) {
			t.Errorf("parsePaths(%q) ok = %v, want %v", tt.in, ok, tt.want != nil)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parsePaths(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestCoveredBy(t *testing.T) {
	tests := []struct {
		cmd, verify string
		want        bool
	}{
		{"go test ./...", "go test ./...", true},
		{"go  test ./...", " go test ./... ", true},
		{"go vet ./...", "go vet ./... && go test ./...", true},
		{"go test ./...", "go vet ./... && go test ./...", true},
		{"go vet", "go vet ./...", false},
		{"go vet ./...", "go vet ./... || true", false},
		{"go vet ./...", "go vet ./...; go test ./...", false},
		{"go vet ./...", "go vet ./... | tee x && go test ./...", false},
		{"go vet ./...", "(go vet ./... && go test ./...)", false},
		{"", "go test ./...", false},
	}
	for _, tt := range tests {
		if got := coveredBy(tt.cmd, tt.verify); got != tt.want {
			t.Errorf("coveredBy(%q, %q) = %v, want %v", tt.cmd, tt.verify, got, tt.want)
		}
	}
}
