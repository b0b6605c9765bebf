package rubric

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCriteria(t *testing.T) {
	verifyC := func(id, text string, covers ...string) Criterion {
		return Criterion{ID: id, Kind: KindVerify, Text: text, Command: goTest, Covers: covers}
	}
	tests := []struct {
		name string
		spec Spec
		want []Criterion
	}{
		{
			name: "empty write job",
			spec: Spec{Write: true},
			want: []Criterion{changedC("c1")},
		},
		{
			name: "a claim (hub step)",
			spec: Spec{Claim: true, Write: true, Verify: goTest, DefinitionOfDone: "Fixed the loader. All tests pass."},
			want: []Criterion{verifyC("c1", "`"+goTest+"` exits 0 on the head commit (covers \"All tests pass.\")", "All tests pass."),
				{ID: "c2", Kind: KindJudgement, Text: "Fixed the loader."}},
		},
		{
			name: "empty read job",
			spec: Spec{},
			want: []Criterion{{ID: "c1", Kind: KindUnchanged, Text: "no files changed", Paths: []string{"**"}}},
		},
		{
			name: "markdown list",
			spec: Spec{Write: true, Verify: "  " + goTest + "\n", DefinitionOfDone: `
## Done when

The work is done when:

- [ ] ` + "`rubric.Grade`" + ` grades every criterion.
* Do not change go.mod or go.sum.
1. Only touch rubric/.
2) All tests pass.

---
`},
			want: []Criterion{
				verifyC("c1", "`go test ./...` exits 0 on the head commit (covers \"All tests pass.\")", "All tests pass."),
				changedC("c2"),
				{ID: "c3", Kind: KindJudgement, Text: "`rubric.Grade` grades every criterion."},
				{ID: "c4", Kind: KindUnchanged, Text: "Do not change go.mod or go.sum.", Paths: []string{"go.mod", "go.sum"}},
				{ID: "c5", Kind: KindOnly, Text: "Only touch rubric/.", Paths: []string{"rubric/"}},
			},
		},
		{
			name: "one paragraph splits into sentences",
			spec: Spec{Write: true, Verify: goTest, DefinitionOfDone: "Add a --json flag to `hub list`. It prints one object per line. Do not touch go.mod. `go test ./...` passes."},
			want: []Criterion{
				verifyC("c1", "`go test ./...` exits 0 on the head commit (covers \"`go test ./...` passes.\")", "`go test ./...` passes."),
				changedC("c2"),
				{ID: "c3", Kind: KindJudgement, Text: "Add a --json flag to `hub list`."},
				{ID: "c4", Kind: KindJudgement, Text: "It prints one object per line."},
				{ID: "c5", Kind: KindUnchanged, Text: "Do not touch go.mod.", Paths: []string{"go.mod"}},
			},
		},
		{
			name: "lines, and sentences of an item stay together around a rule",
			spec: Spec{Write: true, DefinitionOfDone: "Add the flag. Keep it small. Do not touch go.mod. Document it.\nUpdate README.md to describe the flag\n"},
			want: []Criterion{
				changedC("c1"),
				{ID: "c2", Kind: KindJudgement, Text: "Add the flag. Keep it small."},
				{ID: "c3", Kind: KindUnchanged, Text: "Do not touch go.mod.", Paths: []string{"go.mod"}},
				{ID: "c4", Kind: KindJudgement, Text: "Document it."},
				{ID: "c5", Kind: KindJudgement, Text: "Update README.md to describe the flag"},
			},
		},
		{
			name: "tests pass without a verify command is a judgement",
			spec: Spec{Write: true, DefinitionOfDone: "- tests pass"},
			want: []Criterion{changedC("c1"), {ID: "c2", Kind: KindJudgement, Text: "tests pass"}},
		},
		{
			name: "several covered items",
			spec: Spec{Write: true, Verify: goTest, DefinitionOfDone: "- Tests pass\n- `go test ./...` exits 0"},
			want: []Criterion{
				verifyC("c1", "`go test ./...` exits 0 on the head commit (covers \"Tests pass\"; \"`go test ./...` exits 0\")", "Tests pass", "`go test ./...` exits 0"),
				changedC("c2"),
			},
		},
		{
			name: "write job where no changes are expected",
			spec: Spec{Write: true, DefinitionOfDone: "- Find out why the test is flaky.\n- No changes are expected."},
			want: []Criterion{
				{ID: "c1", Kind: KindJudgement, Text: "Find out why the test is flaky."},
				{ID: "c2", Kind: KindJudgement, Text: "No changes are expected.", NoChanges: true},
			},
		},
		{
			name: "write job told to change nothing",
			spec: Spec{Write: true, DefinitionOfDone: "Report the cause. Do not change anything."},
			want: []Criterion{
				{ID: "c1", Kind: KindJudgement, Text: "Report the cause."},
				{ID: "c2", Kind: KindUnchanged, Text: "Do not change anything.", Paths: []string{"**"}},
			},
		},
		{
			name: "read job that already forbids changes gets no duplicate",
			spec: Spec{DefinitionOfDone: "- Make no changes\n- Explain the lock order"},
			want: []Criterion{
				{ID: "c1", Kind: KindUnchanged, Text: "Make no changes", Paths: []string{"**"}},
				{ID: "c2", Kind: KindJudgement, Text: "Explain the lock order"},
			},
		},
		{
			name: "read job with verify",
			spec: Spec{Verify: goTest, DefinitionOfDone: "List the callers of gitx.DiffFiles."},
			want: []Criterion{
				verifyC("c1", "`go test ./...` exits 0 on the head commit"),
				{ID: "c2", Kind: KindUnchanged, Text: "no files changed", Paths: []string{"**"}},
				{ID: "c3", Kind: KindJudgement, Text: "List the callers of gitx.DiffFiles."},
			},
		},
		{
			name: "bullet ending in a colon takes its sub-bullets",
			spec: Spec{Write: true, DefinitionOfDone: "- Do not change these files:\n  - go.mod\n  - `go.sum`\n- Add the flag"},
			want: []Criterion{
				changedC("c1"),
				{ID: "c2", Kind: KindUnchanged, Text: "Do not change these files: go.mod, `go.sum`", Paths: []string{"go.mod", "go.sum"}},
				{ID: "c3", Kind: KindJudgement, Text: "Add the flag"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Criteria(tt.spec)); diff != "" {
				t.Errorf("Criteria (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitItems(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      []string
		paragraph bool
	}{
		{"empty", " \n\n", nil, false},
		{"one line", "Add the flag. Test it.", []string{"Add the flag. Test it."}, true},
		{"hard-wrapped paragraph", "Add a flag that prints\nthe output as JSON, and\nDocument it.", []string{"Add a flag that prints the output as JSON, and Document it."}, true},
		{"lines", "Add the flag\nDo not touch go.mod\n\nDocument it", []string{"Add the flag", "Do not touch go.mod", "Document it"}, false},
		{"CRLF lines", "Add the flag.\r\nDocument it.\r\n", []string{"Add the flag.", "Document it."}, false},
		{"headings and rules are ignored", "# Done\n\nAdd it\n\n***\n\nSetext\n======\nKeep it\n\nAlso\n---\n", []string{"Add it", "Keep it"}, false},
		{
			"bullets with wrapped lines",
			"- Add a flag that\n  prints JSON\n- Document it\nin the README\n\n  and the man page\n* [x] Done item\n+ plus item\n10. ten\n-\n",
			[]string{"Add a flag that prints JSON", "Document it in the README and the man page", "Done item", "plus item", "ten"},
			false,
		},
		{"tab-indented continuation", "- Add a flag\n\n\tthat prints JSON\n- Next", []string{"Add a flag that prints JSON", "Next"}, false},
		{"lead-in line dropped", "Done when:\n- a.go exists\n- b.go exists", []string{"a.go exists", "b.go exists"}, false},
		{"colon line without a list stays", "Note: go.mod is shared.", []string{"Note: go.mod is shared."}, true},
		{"sub-bullets of a plain bullet stay items", "- Add X\n  - with Y\n- Add Z", []string{"Add X", "with Y", "Add Z"}, false},
		{"sub-bullets join a colon bullet", "- Keep:\n  - a.go\n    - b.go\n- Next", []string{"Keep: a.go, b.go", "Next"}, false},
		{"fenced block joins the item before it", "- Output looks like:\n```\n{\"ok\": true}\n- not a bullet\n```\n- Next", []string{"Output looks like:\n{\"ok\": true}\n- not a bullet", "Next"}, false},
		{"unterminated fence", "```\ncode", []string{"code"}, false},
		{"numbers that are not bullets", "1.5 seconds at most", []string{"1.5 seconds at most"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, paragraph := splitItems(tt.in)
			var got []string
			for _, it := range items {
				got = append(got, it.text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("splitItems(%q) (-want +got):\n%s", tt.in, diff)
			}
			if paragraph != tt.paragraph {
				t.Errorf("splitItems(%q) paragraph = %v, want %v", tt.in, paragraph, tt.paragraph)
			}
		})
	}
}

func TestFencedItemIsAJudgement(t *testing.T) {
	got := Criteria(Spec{Write: true, DefinitionOfDone: "Do not change go.mod:\n```\ngo.mod\n```"})
	want := []Criterion{changedC("c1"), {ID: "c2", Kind: KindJudgement, Text: "Do not change go.mod:\ngo.mod"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Criteria (-want +got):\n%s", diff)
	}
}

func changedC(id string) Criterion { return Criterion{ID: id, Kind: KindChanged, Text: textChanged} }

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One.", []string{"One."}},
		{"One. Two! Three? four", []string{"One.", "Two!", "Three? four"}},
		{"Edit go.mod. Then stop.", []string{"Edit go.mod.", "Then stop."}},
		{"Use e.g. The parser. Or i.e. This.", []string{"Use e.g. The parser.", "Or i.e. This."}},
		{"Run `go test ./... . Now` here. Done", []string{"Run `go test ./... . Now` here.", "Done"}},
		{"Run `go test ./...`. `go vet` too.", []string{"Run `go test ./...`.", "`go vet` too."}},
		{"He said \"stop.\" Then left.", []string{"He said \"stop.\"", "Then left."}},
		{"Version 1.2 is out.  2 tests remain.", []string{"Version 1.2 is out.", "2 tests remain."}},
		{"Wait... then go.", []string{"Wait... then go."}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, splitSentences(tt.in)); diff != "" {
			t.Errorf("splitSentences(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
