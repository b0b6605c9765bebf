package view

import (
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

func TestSummaryAtMostTenLines(t *testing.T) {
	var files []protocol.FileChange
	for i := 0; i < 40; i++ {
		files = append(files, protocol.FileChange{Path: strings.Repeat("d/", 3) + string(rune('a'+i%26)), Change: "modified", Added: 2, Deleted: 1})
	}
	st := protocol.JobStatus{ID: "abcdefgh", State: protocol.StateFailed, Engine: "exec", ElapsedMS: 61000, Salvaged: true,
		Error: "verify failed: `go test` exited 1"}
	ev := &protocol.Evidence{Kind: protocol.KindWrite, Branch: "hub/abcdefgh", Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40),
		Files: files, Commits: make([]protocol.Commit, 3), Salvaged: true, Error: st.Error,
		Claimed:  protocol.Claimed{Report: "one\ntwo\nthree\nfour\nfive"},
		Verify:   &protocol.Verify{Command: "go test ./...", ExitCode: 1, OutputTail: "--- FAIL: TestX\nFAIL", Commit: strings.Repeat("b", 40)},
		Observed: protocol.Observed{UserCheckoutDirty: true}}
	got := Summary(st, ev)
	lines := strings.Split(got, "\n")
	if len(lines) > 10 {
		t.Fatalf("%d lines:\n%s", len(lines), got)
	}
	for _, want := range []string{"abcdefgh failed · exec · 1m01s", "files: 40 changed (+80 -40)", "+34 more",
		"verify: `go test ./...` exit 1", "verify output: --- FAIL: TestX", "partial work is committed on hub/abcdefgh", "uncommitted changes"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestLine(t *testing.T) {
	zero, one := 0, 1
	for _, tc := range []struct {
		st   protocol.JobStatus
		want string
	}{
		{protocol.JobStatus{ID: "a", State: protocol.StateSucceeded, Engine: "exec", ElapsedMS: 850, Cost: protocol.Cost{Known: true}, VerifyExit: &zero}, "a succeeded · exec · 850ms · $0.00 · verified"},
		{protocol.JobStatus{ID: "a", State: protocol.StateFailed, Engine: "exec", ElapsedMS: 12000, VerifyExit: &one, Error: "verify failed", Cost: protocol.Cost{USD: 0.126, Known: true}},
			"a failed · exec · 12s · $0.13 · verify failed (exit 1) · verify failed"},
		{protocol.JobStatus{ID: "a", State: protocol.StateNeedsInput, Engine: "exec", ElapsedMS: 3 * 3600 * 1000,
			Question: &protocol.Question{Text: "which one?\nmore"}}, "a needs_input · exec · 3h00m · $? · asks: which one? more"},
		{protocol.JobStatus{ID: "a", State: protocol.StateRunning, Engine: "exec", Progress: "step 2", Cost: protocol.Cost{Known: true}}, "a running · exec · 0ms · $0.00 · step 2"},
		{protocol.JobStatus{ID: "a", State: protocol.StateSucceeded, Engine: "exec", Progress: "step 2", Cost: protocol.Cost{Known: true}, Salvaged: true}, "a succeeded · exec · 0ms · $0.00 · salvaged"},
	} {
		if got := Line(tc.st); got != tc.want {
			t.Errorf("Line = %q, want %q", got, tc.want)
		}
	}
}
