package mcpserver

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

func ptr[T any](v T) *T { return &v }

// fullStartArgs sets every argument of start; fullStartParams is what the
// daemon must get for them (TestStartTakesEveryField keeps both complete).
var (
	fullStartArgs = map[string]any{"task": "fix bug.txt", "repo": "/r", "cwd": "/c", "base": "main", "kind": "write",
		"files": []string{"bug.txt"}, "engine": "exec", "exec": "make fix", "profile": "p", "model": "m",
		"effort": "high", "max_usd": 0, "max_turns": 7, "timeout_s": 60, "isolation": "sandbox",
		"verify": "make test", "definition_of_done": "tests pass", "ask_timeout_s": 30,
		"verify_timeout_s": 20, "stall_timeout_s": 40, "setup": "make deps", "deps": "off", "setup_timeout_s": 90, "queue": "far"}
	fullStartParams = protocol.StartParams{Task: "fix bug.txt", Repo: "/r", Cwd: "/c", Base: "main", Kind: "write",
		Files: []string{"bug.txt"}, Engine: "exec", Exec: "make fix", Profile: "p", Model: "m", Effort: "high",
		MaxUSD: ptr(0.0), MaxTurns: 7, TimeoutS: 60, Isolation: "sandbox", Verify: "make test",
		DefinitionOfDone: "tests pass", AskTimeoutS: 30, VerifyTimeoutS: 20, StallTimeoutS: 40,
		Setup: "make deps", Deps: "off", SetupTimeoutS: 90, Queue: "far"}
)

var (
	t0     = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	doneAt = t0.Add(12 * time.Second)
)

// TestForward checks that each tool calls the right daemon method with the
// right params, and answers with the daemon's result and a short text.
func TestForward(t *testing.T) {
	isolate(t)
	succeeded := protocol.JobStatus{ID: "abc12345", State: protocol.StateSucceeded, Kind: "write", Engine: "exec",
		Branch: "hub/abc12345", Task: "fix it", Cost: protocol.Cost{Known: true}, VerifyExit: ptr(0), CreatedAt: t0, EndedAt: &doneAt,
		ElapsedMS: 12_400, Cursor: 9}
	asking := protocol.JobStatus{ID: "def67890", State: protocol.StateNeedsInput, Kind: "write", Engine: "exec",
		Task: "colour", Cost: protocol.Cost{Known: true}, ElapsedMS: 3000, Cursor: 7,
		Question: &protocol.Question{ID: "q1", Kind: "question", Text: "which colour?", AskedAt: t0, ExpiresAt: t0.Add(time.Minute), Cursor: 7}}
	failed := protocol.JobStatus{ID: "0badf00d", State: protocol.StateFailed, Kind: "write", Engine: "claude", Task: "x",
		Cost: protocol.Cost{USD: 0.412, Known: true}, VerifyExit: ptr(1), Error: "verify failed", ElapsedMS: 6*60_000 + 3000, Cursor: 5}
	ev := &protocol.Evidence{ID: "abc12345", State: protocol.StateSucceeded, Kind: "write", Engine: "exec",
		Base: "1111", Head: "2222", Isolation: "worktree", Files: []protocol.FileChange{{Path: "bug.txt", Change: "modified", Added: 1, Deleted: 1}}}

	tests := []struct {
		name       string
		tool       string
		args       map[string]any
		wantMethod string
		wantParams any
		result     any
		wantText   string
		out        func() any // a fresh value to decode the structured output into
	}{
		{
			name: "start", tool: "start",
			args:       fullStartArgs,
			wantMethod: protocol.MethodJobStart,
			wantParams: fullStartParams,
			result: protocol.StartResult{ID: "abc12345", State: protocol.StateQueued, Engine: "exec", Branch: "hub/abc12345",
				Base: "1111", Isolation: "sandbox", Notes: []string{"uncommitted changes are not carried"}},
			wantText: "abc12345 queued · exec · branch hub/abc12345 · sandbox\n  note: uncommitted changes are not carried",
			out:      func() any { return &protocol.StartResult{} },
		},
		{
			name: "step", tool: "step",
			args:       map[string]any{"claim": "Fixed it. Tests pass.", "repo": "/r", "since": "abc", "check": "make test"},
			wantMethod: protocol.MethodStep,
			wantParams: protocol.StepParams{Claim: "Fixed it. Tests pass.", Repo: "/r", Since: "abc", Check: "make test"},
			result: protocol.StepResult{ID: "5tep0001", State: protocol.StateSucceeded, Disagree: true,
				Text: "disagrees: \"Tests pass.\" — `make test` exit 2 (hub)", Cost: protocol.Cost{USD: 0.0012, Known: true}},
			wantText: "disagrees: \"Tests pass.\" — `make test` exit 2 (hub)\n(job 5tep0001, $0.00)",
			out:      func() any { return &protocol.StepResult{} },
		},
		{
			name: "start defaults", tool: "start",
			args:       map[string]any{"task": "look", "kind": "read", "cwd": "/c"},
			wantMethod: protocol.MethodJobStart,
			wantParams: protocol.StartParams{Task: "look", Kind: "read", Cwd: "/c"}, // max_usd omitted stays nil
			result:     protocol.StartResult{ID: "abc12345", State: protocol.StateQueued, Engine: "exec", Isolation: "worktree"},
			wantText:   "abc12345 queued · exec",
			out:        func() any { return &protocol.StartResult{} },
		},
		{
			name: "start_many", tool: "start_many",
			args: map[string]any{"jobs": []map[string]any{
				{"task": "a", "repo": "/r", "max_usd": 1.5}, {"task": "b", "repo": "/r", "isolation": "bogus"}}},
			wantMethod: protocol.MethodStartMany,
			wantParams: protocol.StartManyParams{Jobs: []protocol.StartParams{
				{Task: "a", Repo: "/r", MaxUSD: ptr(1.5)}, {Task: "b", Repo: "/r", Isolation: "bogus"}}},
			result: protocol.StartManyResult{Results: []protocol.StartManyItem{
				{StartResult: &protocol.StartResult{ID: "abc12345", State: protocol.StateQueued, Engine: "exec", Branch: "hub/abc12345", Isolation: "worktree"}},
				{Error: &protocol.ItemError{Code: protocol.CodeInvalidParams, Message: `unknown isolation level "bogus"`, Field: "isolation",
					Hint: "use one of worktree, sandbox, isolated, untrusted"}},
			}},
			wantText: "abc12345 queued · exec · branch hub/abc12345\n" +
				`#2 refused: unknown isolation level "bogus". Use one of worktree, sandbox, isolated, untrusted.`,
			out: func() any { return &protocol.StartManyResult{} },
		},
		{
			name: "wait", tool: "wait",
			args:       map[string]any{"ids": []string{"abc12345", "def67890", "0badf00d", "nosuch"}, "any": true, "since": 4},
			wantMethod: protocol.MethodJobWait,
			wantParams: protocol.WaitParams{IDs: []string{"abc12345", "def67890", "0badf00d", "nosuch"}, TimeoutS: 300, Any: true, Since: 4},
			result: protocol.WaitResult{Jobs: []protocol.JobStatus{succeeded, asking, failed},
				Unknown: []string{"nosuch"}, Done: true, Cursor: 9},
			wantText: "abc12345 succeeded · exec · 12s · $0.00 · verified\n" +
				"def67890 needs_input · exec · 3s · $0.00 · asks: which colour?\n" +
				"0badf00d failed · claude · 6m03s · $0.41 · verify failed (exit 1) · verify failed\n" +
				"unknown ids: nosuch\n" +
				"cursor 9",
			out: func() any { return &protocol.WaitResult{} },
		},
		{
			name: "wait timeout", tool: "wait",
			args:       map[string]any{"ids": []string{"abc12345"}, "timeout_s": 0.5},
			wantMethod: protocol.MethodJobWait,
			wantParams: protocol.WaitParams{IDs: []string{"abc12345"}, TimeoutS: 0.5},
			result: protocol.WaitResult{Jobs: []protocol.JobStatus{{ID: "abc12345", State: protocol.StateRunning, Engine: "exec",
				Progress: "running tests", ElapsedMS: 61_000}}, Cursor: 3},
			wantText: "abc12345 running · exec · 1m01s · $? · running tests\ntimeout · cursor 3",
			out:      func() any { return &protocol.WaitResult{} },
		},
		{
			name: "status", tool: "status", args: map[string]any{"id": "abc12345"},
			wantMethod: protocol.MethodJobStatus, wantParams: protocol.IDParams{ID: "abc12345"},
			result:   succeeded,
			wantText: "abc12345 succeeded · exec · 12s · $0.00 · verified",
			out:      func() any { return &protocol.JobStatus{} },
		},
		{
			name: "result", tool: "result", args: map[string]any{"id": "abc12345"},
			wantMethod: protocol.MethodJobResult, wantParams: protocol.ResultParams{ID: "abc12345"},
			result: protocol.ResultResult{ID: "abc12345", State: protocol.StateSucceeded,
				Summary: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12"},
			wantText: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10",
			out:      func() any { return &protocol.ResultResult{} },
		},
		{
			name: "result full", tool: "result", args: map[string]any{"id": "abc12345", "full": true},
			wantMethod: protocol.MethodJobResult, wantParams: protocol.ResultParams{ID: "abc12345", Full: true},
			result:   protocol.ResultResult{ID: "abc12345", State: protocol.StateSucceeded, Summary: "short", Full: "the\nwhole\ntext"},
			wantText: "the\nwhole\ntext",
			out:      func() any { return &protocol.ResultResult{} },
		},
		{
			name: "result evidence", tool: "result", args: map[string]any{"id": "abc12345", "evidence": true},
			wantMethod: protocol.MethodJobResult, wantParams: protocol.ResultParams{ID: "abc12345", Evidence: true},
			result:   protocol.ResultResult{ID: "abc12345", State: protocol.StateSucceeded, Summary: "short", Evidence: ev},
			wantText: string(mustJSON(ev)),
			out:      func() any { return &protocol.ResultResult{} },
		},
		{
			name: "result of several", tool: "result", args: map[string]any{"ids": []string{"abc12345", "0badf00d"}},
			wantMethod: protocol.MethodJobReview, wantParams: protocol.ReviewParams{IDs: []string{"abc12345", "0badf00d"}},
			result: protocol.ReviewResult{Text: "2 jobs: 1 ready to land, 0 with conflicts, 1 failed, 0 landed\n" +
				"abc12345 succeeded 1f +1-1 v:pass $0.00 · land\n0badf00d failed 2f +9-0 v:fail $0.41 · read its result; fix or retry",
				Jobs: []protocol.ReviewItem{{ID: "abc12345", State: protocol.StateSucceeded, Files: 1, Added: 1, Deleted: 1, Verify: "pass", Next: "land"},
					{ID: "0badf00d", State: protocol.StateFailed, Files: 2, Added: 9, Verify: "fail", CostUSD: 0.41, Next: "read its result; fix or retry"}}},
			wantText: "2 jobs: 1 ready to land, 0 with conflicts, 1 failed, 0 landed\n" +
				"abc12345 succeeded 1f +1-1 v:pass $0.00 · land\n0badf00d failed 2f +9-0 v:fail $0.41 · read its result; fix or retry",
			out: func() any { return &protocol.ReviewResult{} },
		},
		{
			name: "land", tool: "land",
			args: map[string]any{"ids": []string{"abc12345", "def67890", "0badf00d", "feedf00d"}, "into": "main", "order": "auto", "squash": true,
				"verify": "make test", "resolve": true, "dry_run": false},
			wantMethod: protocol.MethodJobLand,
			wantParams: protocol.LandParams{IDs: []string{"abc12345", "def67890", "0badf00d", "feedf00d"}, Into: "main", Order: "auto", Mode: "squash",
				Verify: "make test", Resolve: true},
			result: protocol.LandResult{Into: "main", From: "1111111111aa", Tip: "2222222222bb", Checkout: "updated",
				Line: "1 landed, 1 conflict, 1 red, 1 skipped; main 1111111111 → 2222222222, checkout updated",
				Jobs: []protocol.LandItem{
					{ID: "abc12345", Outcome: protocol.LandLanded, Commit: "2222222222bb"},
					{ID: "def67890", Outcome: protocol.LandConflict, Files: []string{"a.go", "b.go"}, Reason: "hub/def67890 conflicts with main in a.go, b.go", FollowUp: "fe11ow00"},
					{ID: "0badf00d", Outcome: protocol.LandRed, Commit: "3333333333cc", Reason: "the batch verify on the integrated commit 3333333333: exit 1"},
					{ID: "feedf00d", Outcome: protocol.LandSkipped, Reason: "main moved under hub"},
				}},
			wantText: "1 landed, 1 conflict, 1 red, 1 skipped; main 1111111111 → 2222222222, checkout updated\n" +
				"abc12345 landed · 2222222222\n" +
				"def67890 conflict · a.go, b.go · follow-up fe11ow00\n" +
				"0badf00d red · the batch verify on the integrated commit 3333333333: exit 1\n" +
				"feedf00d skipped · main moved under hub",
			out: func() any { return &protocol.LandResult{} },
		},
		{
			name: "land defaults", tool: "land", args: map[string]any{"ids": []string{"abc12345"}, "dry_run": true},
			wantMethod: protocol.MethodJobLand, wantParams: protocol.LandParams{IDs: []string{"abc12345"}, DryRun: true},
			result: protocol.LandResult{Into: "main", From: "1111111111aa", Tip: "1111111111aa", Line: "dry run: 1 would; nothing moved",
				Jobs: []protocol.LandItem{{ID: "abc12345", Outcome: protocol.LandWould, Commit: "2222222222bb"}}},
			wantText: "dry run: 1 would; nothing moved\nabc12345 would · 2222222222",
			out:      func() any { return &protocol.LandResult{} },
		},
		{
			name: "reply", tool: "reply", args: map[string]any{"id": "def67890", "text": "blue"},
			wantMethod: protocol.MethodJobReply, wantParams: protocol.ReplyParams{ID: "def67890", Text: "blue"},
			result:   protocol.ReplyResult{ID: "def67890", QuestionID: "q1", Delivered: true},
			wantText: "def67890: answer to q1 delivered; wait again with since=cursor",
			out:      func() any { return &protocol.ReplyResult{} },
		},
		{
			name: "reply to a question", tool: "reply", args: map[string]any{"id": "def67890", "text": "blue", "question_id": "q1"},
			wantMethod: protocol.MethodJobReply, wantParams: protocol.ReplyParams{ID: "def67890", QuestionID: "q1", Text: "blue"},
			result:   protocol.ReplyResult{ID: "def67890", QuestionID: "q1"},
			wantText: "def67890: answer to q1 recorded, not yet delivered; wait again with since=cursor",
			out:      func() any { return &protocol.ReplyResult{} },
		},
		{
			name: "steer", tool: "steer", args: map[string]any{"id": "abc12345", "text": "only touch bug.txt"},
			wantMethod: protocol.MethodJobSteer, wantParams: protocol.SteerParams{ID: "abc12345", Text: "only touch bug.txt"},
			result:   protocol.SteerResult{ID: "abc12345", Queued: true},
			wantText: "abc12345: steering queued; it reaches the worker at its next progress report or tool result",
			out:      func() any { return &protocol.SteerResult{} },
		},
		{
			name: "stop", tool: "stop", args: map[string]any{"id": "abc12345"},
			wantMethod: protocol.MethodJobStop, wantParams: protocol.IDParams{ID: "abc12345"},
			result:   protocol.JobStatus{ID: "abc12345", State: protocol.StateCancelled, Engine: "exec", Cost: protocol.Cost{Known: true}, Salvaged: true, ElapsedMS: 2000},
			wantText: "abc12345 cancelled · exec · 2s · $0.00 · salvaged",
			out:      func() any { return &protocol.JobStatus{} },
		},
		{
			name: "cleanup", tool: "cleanup", args: map[string]any{"id": "abc12345", "delete_branch": true},
			wantMethod: protocol.MethodJobCleanup, wantParams: protocol.CleanupParams{ID: "abc12345", DeleteBranch: true},
			result:   protocol.CleanupResult{ID: "abc12345", WorktreeRemoved: true, BranchDeleted: true, Branch: "hub/abc12345"},
			wantText: "abc12345: worktree removed · branch hub/abc12345 deleted",
			out:      func() any { return &protocol.CleanupResult{} },
		},
		{
			name: "cleanup keeps the branch", tool: "cleanup", args: map[string]any{"id": "abc12345"},
			wantMethod: protocol.MethodJobCleanup, wantParams: protocol.CleanupParams{ID: "abc12345"},
			result:   protocol.CleanupResult{ID: "abc12345", WorktreeRemoved: true, Branch: "hub/abc12345"},
			wantText: "abc12345: worktree removed · branch hub/abc12345 kept",
			out:      func() any { return &protocol.CleanupResult{} },
		},
		{
			name: "engines", tool: "engines",
			wantMethod: protocol.MethodEngineList, wantParams: protocol.Empty{},
			result: protocol.EnginesResult{Engines: []protocol.EngineInfo{
				{Name: "exec", Available: true, Version: "1", Capabilities: protocol.EngineCapabilities{Isolation: []protocol.Isolation{protocol.IsolationWorktree, protocol.IsolationIsolated}, Pays: protocol.PaysFree}},
				{Name: "claude", Reason: "claude not on PATH"}},
				Month: "2026-05", SpentUSD: 1.25, ReservedUSD: 2, MonthlyCapUSD: 180, Running: 1, MaxRunning: 4},
			wantText: "exec ready 1 · free · worktree,isolated\nclaude unavailable: claude not on PATH\n" +
				"2026-05: spent $1.25, reserved $2.00 of $180.00 · running 1/4 · queued 0",
			out: func() any { return &protocol.EnginesResult{} },
		},
	}
	for _, v := range append(versions, "") {
		name := v
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					fd := &fakeDaemon{handle: canned(tc.result)}
					cs := connect(t, New(fd, Options{}), v, nil)
					res, err := cs.CallTool(deadline(t, 10*time.Second), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
					if err != nil {
						t.Fatal(err)
					}
					if res.IsError {
						t.Fatalf("tool error: %s", contentText(res))
					}
					if diff := cmp.Diff([]fakeCall{{tc.wantMethod, tc.wantParams}}, fd.Calls()); diff != "" {
						t.Errorf("daemon calls (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(tc.wantText, contentText(res)); diff != "" {
						t.Errorf("text (-want +got):\n%s", diff)
					}
					got := tc.out()
					decode(t, res, got)
					want := tc.out()
					remarshal(t, tc.result, want)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("structured output (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestDaemonErrors checks that a daemon failure is a tool result with
// IsError and a sentence saying what to do, never a protocol error.
// TestStartTakesEveryField: the start tool's schema lists every field of
// job/start's params but limits (the user's, in hub's config), and the
// forwarding case above sets each one.
func TestStartTakesEveryField(t *testing.T) {
	sch := startSchema()
	rt := reflect.TypeFor[protocol.StartParams]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		_, ok := sch.Properties[name]
		if name == "limits" {
			if ok {
				t.Errorf("the start tool takes limits, which are the user's to set")
			}
			continue
		}
		if !ok {
			t.Errorf("the start tool does not take %s", name)
		}
	}
	v := reflect.ValueOf(fullStartParams)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "limits" {
			continue
		}
		if _, ok := fullStartArgs[name]; !ok || v.Field(i).IsZero() {
			t.Errorf("TestForward's start case does not set %s", name)
		}
	}
}

func TestDaemonErrors(t *testing.T) {
	isolate(t)
	notFound := errorWith(protocol.CodeNotFound, "no job \"nosuch\"", protocol.ErrorData{Hint: "check the id with wait or engines"})
	wrongState := errorWith(protocol.CodeWrongState, "job abc12345 is running", protocol.ErrorData{Hint: "stop it first, or wait for it to end"})
	badField := errorWith(protocol.CodeInvalidParams, "task is empty", protocol.ErrorData{Field: "task", Hint: "say what the worker should do"})
	noHint := errorWith(protocol.CodeInternal, "boom", protocol.ErrorData{})
	tests := []struct {
		tool string
		args map[string]any
		err  error
		want string
	}{
		{"status", map[string]any{"id": "nosuch"}, notFound, `no job "nosuch". Check the id with wait or engines.`},
		{"cleanup", map[string]any{"id": "abc12345"}, wrongState, "job abc12345 is running. Stop it first, or wait for it to end."},
		{"start", map[string]any{"task": " "}, badField, "task is empty. Say what the worker should do."},
		{"stop", map[string]any{"id": "abc12345"}, noHint, "boom."},
		{"wait", map[string]any{"ids": []string{"a"}}, notFound, `no job "nosuch". Check the id with wait or engines.`},
		{"engines", nil, errClosed, "hub daemon unreachable"},
		{"land", map[string]any{"ids": []string{"abc12345"}}, wrongState, "job abc12345 is running. Stop it first, or wait for it to end."},
		{"result", map[string]any{"ids": []string{"nosuch"}}, notFound, `no job "nosuch". Check the id with wait or engines.`},
		{"start_many", map[string]any{"jobs": []map[string]any{}}, errorWith(protocol.CodeInvalidParams, "the list is empty", protocol.ErrorData{Field: "jobs"}), "the list is empty (field jobs)."},
	}
	for _, v := range versions {
		for _, tc := range tests {
			t.Run(v+"/"+tc.tool, func(t *testing.T) {
				fd := &fakeDaemon{handle: func(context.Context, string, any) (any, error) { return nil, tc.err }}
				cs := connect(t, New(fd, Options{}), v, nil)
				res, err := cs.CallTool(deadline(t, 10*time.Second), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err != nil {
					t.Fatalf("protocol error %v; want a tool error", err)
				}
				if !res.IsError {
					t.Fatalf("IsError false: %s", contentText(res))
				}
				if got := contentText(res); !strings.HasPrefix(got, tc.want) {
					t.Errorf("text %q, want it to start with %q", got, tc.want)
				}
				if res.StructuredContent != nil {
					t.Errorf("error result has structured content %v", res.StructuredContent)
				}
			})
		}
	}
}

// TestBadArguments checks that arguments the schema refuses are a tool
// error too, and reach no daemon.
func TestBadArguments(t *testing.T) {
	isolate(t)
	fd := &fakeDaemon{handle: canned(struct{}{})}
	cs := connect(t, New(fd, Options{}), versions[0], nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // in the message
	}{
		{"start", map[string]any{}, "task"},
		{"start", map[string]any{"task": 3}, "task"},
		// The schema leaves unknown arguments to checkArgs, which names
		// the ones the tool takes.
		{"start", map[string]any{"task": "x", "bogus": 1}, `unknown argument "bogus"; start takes task, repo, cwd,`},
		{"start_many", map[string]any{"jobs": []any{map[string]any{"task": "x", "engnie": "exec"}}},
			`unknown argument "engnie"; start_many takes jobs; each of jobs takes task, repo,`},
		{"start_many", map[string]any{"jobs": []any{"not an object"}}, "jobs"},
		{"status", map[string]any{"id": "a", "verbose": true}, `unknown argument "verbose"; status takes id.`},
		{"result", map[string]any{}, "pass id, or ids for several jobs"},
		{"result", map[string]any{"id": "a", "ids": []string{"b"}}, "not both"},
		{"result", map[string]any{"ids": []string{"a", "b"}, "evidence": true}, "not both"},
		{"land", map[string]any{}, "ids"},
		{"land", map[string]any{"ids": []string{"a"}, "mode": "squash"}, `unknown argument "mode"; land takes ids, into, order, squash,`},
	} {
		res, err := cs.CallTool(deadline(t, 10*time.Second), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: protocol error %v", tc.tool, tc.args, err)
		}
		if !res.IsError {
			t.Errorf("%s %v: not a tool error: %s", tc.tool, tc.args, contentText(res))
		} else if !strings.Contains(contentText(res), tc.want) {
			t.Errorf("%s %v: %q does not say %q", tc.tool, tc.args, contentText(res), tc.want)
		}
	}
	if calls := fd.Calls(); len(calls) != 0 {
		t.Errorf("daemon got %v", calls)
	}
}
