package e2e

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestMCPDelegation is the foundation's acceptance test: a go-sdk MCP client,
// pinned to each protocol version real agents speak, drives `hub mcp` over
// stdio: start_many three exec jobs (one fixes and passes verify, one fails
// verify, one asks a question answered with reply), wait, result.
func TestMCPDelegation(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) { testMCPDelegation(t, version) })
	}
}

func testMCPDelegation(t *testing.T, version string) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	repo := sampleRepo(t, "a repo with spaces ünïcode")
	userHead := hubtest.Git(t, repo, "rev-parse", "HEAD")

	cs, _ := w.mcpSession(ctx, version)
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	want := []string{"start", "start_many", "wait", "status", "result", "reply", "steer", "stop", "land", "cleanup", "engines", "profiles", "step"}
	if diff := cmp.Diff(sortStrings(want), sortStrings(names)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	fix := `printf 'fixed\n' > bug.txt && git add bug.txt && git commit -q -m "fix the bug" && echo "fixed bug.txt"`
	nofix := `printf 'still broken\n' > bug.txt; hub progress "tried"; echo "could not fix it"`
	asks := `ans=$(hub ask "which colour?") && printf '%s\n' "$ans" > colour.txt && echo "wrote the colour"`
	verify := `grep -qx fixed bug.txt`
	startRes := callTool(t, ctx, cs, "start_many", map[string]any{"jobs": []map[string]any{
		{"task": "fix bug.txt", "repo": repo, "engine": "exec", "exec": fix, "verify": verify},
		{"task": "fail to fix bug.txt", "repo": repo, "engine": "exec", "exec": nofix, "verify": verify},
		{"task": "write the colour the supervisor names", "repo": repo, "engine": "exec", "exec": asks, "verify": "test -s colour.txt"},
	}})
	var started protocol.StartManyResult
	decodeStructured(t, startRes, &started)
	if len(started.Results) != 3 {
		t.Fatalf("start_many returned %d results: %+v", len(started.Results), started)
	}
	var ids []string
	for i, r := range started.Results {
		if r.Error != nil || r.StartResult == nil {
			t.Fatalf("item %d refused: %+v", i, r.Error)
		}
		ids = append(ids, r.ID)
	}

	// The first wait returns once two jobs ended and the third asks.
	waitRes := callToolMeta(t, ctx, cs, "wait", map[string]any{"ids": ids, "timeout_s": 60}, mcp.Meta{"progressToken": "w1"})
	var wr protocol.WaitResult
	decodeStructured(t, waitRes, &wr)
	if !wr.Done {
		t.Fatalf("wait timed out: %+v", wr)
	}
	byID := map[string]protocol.JobStatus{}
	for _, st := range wr.Jobs {
		byID[st.ID] = st
	}
	q := byID[ids[2]]
	if q.State != protocol.StateNeedsInput || q.Question == nil || q.Question.Text != "which colour?" {
		t.Fatalf("asking job: %+v", q)
	}
	callTool(t, ctx, cs, "reply", map[string]any{"id": ids[2], "text": "blue"})

	waitRes = callTool(t, ctx, cs, "wait", map[string]any{"ids": ids, "timeout_s": 60, "since": wr.Cursor})
	decodeStructured(t, waitRes, &wr)
	if !wr.Done {
		t.Fatalf("second wait timed out: %+v", wr)
	}
	wantStates := []protocol.State{protocol.StateSucceeded, protocol.StateFailed, protocol.StateSucceeded}
	for i, id := range ids {
		var st protocol.JobStatus
		for _, s := range wr.Jobs {
			if s.ID == id {
				st = s
			}
		}
		if st.State != wantStates[i] {
			t.Errorf("job %d (%s) ended %s (%s), want %s", i, id, st.State, st.Error, wantStates[i])
		}
	}

	wantVerify := []int{0, 1, 0}
	wantFile := []struct{ path, body string }{{"bug.txt", "fixed"}, {"bug.txt", "still broken"}, {"colour.txt", "blue"}}
	for i, id := range ids {
		res := callTool(t, ctx, cs, "result", map[string]any{"id": id, "evidence": true})
		var rr protocol.ResultResult
		decodeStructured(t, res, &rr)
		ev := rr.Evidence
		if ev == nil {
			t.Fatalf("job %s: no evidence", id)
		}
		branchHead := hubtest.Git(t, repo, "rev-parse", "hub/"+id)
		if ev.Head != branchHead || len(ev.Head) != 40 || ev.Base != userHead {
			t.Errorf("job %s: evidence base %s head %s; branch at %s, base should be %s", id, ev.Base, ev.Head, branchHead, userHead)
		}
		if ev.Verify == nil || ev.Verify.ExitCode != wantVerify[i] || ev.Verify.Commit != ev.Head {
			t.Errorf("job %s: verify %+v, want exit %d on %s", id, ev.Verify, wantVerify[i], ev.Head)
		}
		found := false
		for _, f := range ev.Files {
			found = found || f.Path == wantFile[i].path
		}
		if !found {
			t.Errorf("job %s: files %+v lack %s", id, ev.Files, wantFile[i].path)
		}
		if got := hubtest.Git(t, repo, "show", "hub/"+id+":"+wantFile[i].path); got != wantFile[i].body {
			t.Errorf("job %s: branch has %s = %q, want %q", id, wantFile[i].path, got, wantFile[i].body)
		}
		if n := len(strings.Split(rr.Summary, "\n")); n > 10 {
			t.Errorf("summary has %d lines:\n%s", n, rr.Summary)
		}
	}
	if st := hubtest.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("user's checkout is not clean:\n%s", st)
	}
	if h := hubtest.Git(t, repo, "rev-parse", "HEAD"); h != userHead {
		t.Errorf("user's HEAD moved from %s to %s", userHead, h)
	}
	if b := hubtest.Git(t, repo, "branch", "--show-current"); b != "main" {
		t.Errorf("user's branch is %s", b)
	}
	// An unknown tool call is a tool error with a sentence, not a crash.
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"id": "nosuchjb"}})
	if err != nil || !bad.IsError {
		t.Errorf("status of unknown id: err %v result %+v", err, bad)
	}
}

func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	return callToolMeta(t, ctx, cs, name, args, nil)
}

func callToolMeta(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, contentText(res))
	}
	return res
}

func contentText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func decodeStructured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
