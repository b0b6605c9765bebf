package acp

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
)

// Updates as Qwen Code 0.24.4 and the protocol's schema write them.
var updateSeeds = []string{
	`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"call_1","status":"pending","title":"Shell","content":[],"locations":[],"kind":"execute","rawInput":{},"_meta":{"toolName":"run_shell_command"}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Command: echo fixed > bug.txt\nDirectory: (root)\nOutput: (empty)\nExit Code: 2\n"}}],"rawOutput":{"type":"shell_result","exitCode":0}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":9090,"outputTokens":19,"totalTokens":9109,"cachedReadTokens":90},"durationMs":516}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":9140,"size":262144,"cost":{"amount":0.25,"currency":"USD"}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"completed"},{"content":"b","priority":"low","status":"pending"}]}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"e","title":"Edit","kind":"edit","locations":[{"path":"/x/a.go","line":3}],"rawInput":{"file_path":"b.go"}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"something_new","x":[1,2]}}`,
	`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"(no output)","metadata":{"exit":3}}}}`,
	`{"sessionId":"s","update":{"sessionUpdate":7}}`,
	`{"update":null}`,
	`[]`,
}

func TestParseUpdate(t *testing.T) {
	u := parseUpdate([]byte(updateSeeds[1]))
	if u.kind != "tool_update" || u.command != "echo fixed > bug.txt" || u.exitCode == nil || *u.exitCode != 0 {
		t.Errorf("shell result: %+v (rawOutput's exit code wins over the text's)", u)
	}
	u = parseUpdate([]byte(updateSeeds[2]))
	if u.kind != "message" || u.usage == nil || u.usage.Input != 9090 || u.usage.Output != 19 || u.usage.CachedInput != 90 {
		t.Errorf("usage in _meta: %+v %+v", u, u.usage)
	}
	u = parseUpdate([]byte(updateSeeds[3]))
	if u.kind != "usage" || u.costUSD == nil || *u.costUSD != 0.25 {
		t.Errorf("cost: %+v", u)
	}
	u = parseUpdate([]byte(updateSeeds[4]))
	if u.text != "plan (1/2 done): a; b" {
		t.Errorf("plan: %q", u.text)
	}
	u = parseUpdate([]byte(updateSeeds[5]))
	if !slices.Equal(u.paths, []string{"/x/a.go", "b.go"}) {
		t.Errorf("paths: %q", u.paths)
	}
	if u := parseUpdate([]byte(updateSeeds[7])); u.exitCode == nil || *u.exitCode != 3 {
		t.Errorf("OpenCode's exit: %+v", u)
	}
	for i, want := range map[int]string{6: "something_new", 8: "7", 9: "(unreadable)", 10: "(unreadable)"} {
		if u := parseUpdate([]byte(updateSeeds[i])); u.kind != "unknown" || u.text != want {
			t.Errorf("seed %d: %+v, want unknown %q", i, u, want)
		}
	}
}

// FuzzParseUpdate: no update an agent sends makes hub fail, and what it
// reads of one is bounded.
func FuzzParseUpdate(f *testing.F) {
	for _, s := range updateSeeds {
		f.Add([]byte(s))
	}
	rec := agentcli.NewRecorder(context.Background(), engine.Spec{Output: io.Discard}, agentcli.Pricing{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		u := parseUpdate(raw)
		switch u.kind {
		case "message", "thought", "tool", "tool_update", "plan", "usage", "quiet", "unknown":
		default:
			t.Fatalf("kind %q", u.kind)
		}
		if u.kind == "unknown" && len(u.text) > 400 {
			t.Fatalf("an unknown update's name is %d bytes", len(u.text))
		}
		if len(u.input) > 1200 {
			t.Fatalf("input %d bytes", len(u.input))
		}
		if u.usage != nil && (u.usage.Input < 0 || u.usage.Output < 0 || u.usage.CachedInput > u.usage.Input) {
			t.Fatalf("usage %+v", u.usage)
		}
		s := newState(rec, func(string) {})
		s.take(raw)
		s.endTurn()
		s.flush()
	})
}
