package codex

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/model"
)

// events records what the parser reports, one line per call.
type events struct{ got []string }

func (e *events) Session(id string)       { e.add("session %s", id) }
func (e *events) Said(text string)        { e.add("said %q", text) }
func (e *events) Tool(name, input string) { e.add("tool %s %s", name, input) }
func (e *events) Command(cmd string, code *int, _ time.Time) {
	c := "?"
	if code != nil {
		c = fmt.Sprint(*code)
	}
	e.add("command exit %s: %s", c, cmd)
}
func (e *events) Tokens(u model.Usage) { e.Usage(u) }

func (e *events) Usage(u model.Usage) {
	e.add("usage in %d cached %d out %d", u.Input, u.CachedInput, u.Output)
}
func (e *events) Cost(usd float64)       { e.add("cost %g", usd) }
func (e *events) Final(text string)      { e.add("final %q", text) }
func (e *events) Failed(msg string)      { e.add("failed %s", msg) }
func (e *events) add(f string, a ...any) { e.got = append(e.got, fmt.Sprintf(f, a...)) }

// parseFile runs a recorded stream through a fresh parser; a line the
// parser does not know is recorded as "unknown <line number>".
func parseFile(t *testing.T, name, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parse := newParser(dir)
	ev := &events{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if !parse(sc.Bytes(), ev) {
			ev.add("unknown %d", n)
		}
	}
	return ev.got
}

// The streams in testdata were recorded from Codex 0.169.0 (codex exec
// --json) against hub's scripted model server; the model slug "m" is
// unknown to Codex, hence the model-metadata warning each starts with.
func TestParseRecorded(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"edit.jsonl", []string{
			"session 01a2386f-f8ea-76e1-9ddd-92ca27cd9958",
			"unknown 2", // the model-metadata warning: logged, never fatal
			"tool shell echo fixed > bug.txt",
			"command exit 0: echo fixed > bug.txt",
			`said "Fixed bug.txt."`,
			"usage in 10394 cached 0 out 15",
			`final "Fixed bug.txt."`,
		}},
		{"command_failed.jsonl", []string{ // login false: bash -c, and quotes inside the command
			"session 01a23872-b700-7981-a954-769b26d64477",
			"unknown 2",
			`tool shell echo "it's" > q.txt && printf %s "$HOME" | wc -c; env | grep -c HUB_CODEX_KEY; exit 3`,
			`command exit 3: echo "it's" > q.txt && printf %s "$HOME" | wc -c; env | grep -c HUB_CODEX_KEY; exit 3`,
			`said "Fixed bug.txt."`,
			"usage in 10394 cached 0 out 36",
			`final "Fixed bug.txt."`,
		}},
		{"patch.jsonl", []string{ // apply_patch through the shell tool: a file_change item
			"session 01a23877-cb31-70f0-8071-2ebeecab2f6f",
			"unknown 2",
			"tool apply_patch update bug.txt, add new.txt (completed)",
			`said "Fixed bug.txt."`,
			"usage in 10437 cached 0 out 43",
			`final "Fixed bug.txt."`,
		}},
		{"ask.jsonl", []string{
			"session 01a23870-cac4-7581-83b6-4fe8649660a1",
			"unknown 2",
			`tool mcp__hub__ask_supervisor {"question":"which word?"}`,
			`said "got: Wall time: 0.0030 seconds\nOutput:\nSupervisor's answer: teal"`,
			"usage in 10391 cached 0 out 26",
			`final "got: Wall time: 0.0030 seconds\nOutput:\nSupervisor's answer: teal"`,
		}},
		{"ask_timeout.jsonl", []string{ // a failed MCP call is the model's to handle, not the run's end
			"session 01a23870-fbe1-7521-aa23-c12b09b13d8e",
			"unknown 2",
			"tool mcp__hub__ask_supervisor {\"question\":\"which word?\"} → failed: tool call error: tool call failed for `hub/ask_supervisor`\n\nCaused by:\n    timed out awaiting tools/call after 1s",
			"said \"got: Wall time: 1.5041 seconds\\nOutput:\\ntool call error: tool call failed for `hub/ask_supervisor`\\n\\nCaused by:\\n    timed out awaiting tools/call after 1s\"",
			"usage in 10413 cached 0 out 48",
			"final \"got: Wall time: 1.5041 seconds\\nOutput:\\ntool call error: tool call failed for `hub/ask_supervisor`\\n\\nCaused by:\\n    timed out awaiting tools/call after 1s\"",
		}},
		{"resume.jsonl", []string{ // codex exec resume: the same thread id again
			"session 01a23877-f446-7c60-9761-bbb342a807e9",
			"unknown 2",
			`said "resumed ok"`,
			"usage in 15938 cached 0 out 18",
			`final "resumed ok"`,
		}},
		{"stopped.jsonl", []string{ // killed while the model was slow: no final
			"session 01a23872-9376-7b72-8d05-d3959f10e41f",
			"unknown 2",
			"tool shell echo half > half.txt",
			"command exit 0: echo half > half.txt",
		}},
		{"bad_request.jsonl", []string{ // HTTP 400: the endpoint's message out of its JSON body, reported once
			"session 01a23871-6d10-74a0-af2a-0155c8781b8d",
			"unknown 2",
			"failed Codex: bad request from lab (invalid_request_error)",
		}},
		{"server_error.jsonl", []string{ // HTTP 500, retried: the reconnect notices are logged, not fatal
			"session 01a23871-888d-76e2-9c41-4425c6ba43d1",
			"unknown 2",
			"unknown 4",
			"unknown 5",
			"failed Codex: We’re currently experiencing high demand, which may cause temporary errors.",
		}},
		{"not_found.jsonl", []string{ // HTTP 404 on /responses: an endpoint without the Responses API
			"session 01a23873-b547-7702-8021-72fae61ffa34",
			"unknown 2",
			"unknown 4",
			"unknown 5",
			"failed Codex: unexpected status 404 Not Found: Not Found, url: http://127.0.0.1:33347/v1/responses — the endpoint does not serve the OpenAI Responses API, the only one Codex speaks",
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseFile(t, tc.file, "/tmp/codexlab/t24/wt")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// Shapes Codex documents but a scripted model cannot make it emit
// (reasoning, plans, web search), and lines that are not events.
func TestParseLines(t *testing.T) {
	lines := []string{
		`not json`,
		`{"type":"thread.started","thread_id":"t1"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}`,
		`{"type":"item.started","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
		`{"type":"item.updated","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":true}]}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"web_search","query":"go 1.26"}}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"first"}}`,
		`{"type":"item.completed","item":{"id":"item_4","type":"collab_tool_call","tool":"spawn"}}`,
		`{"type":"item.completed","item":{"id":"item_5","type":"agent_message","text":"  "}}`,
		`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"reasoning_output_tokens":3}}`,
		`{"type":"turn.started"}`,
		`{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}`,
		`{"type":"error","message":"Reconnecting... 1/2 (stream disconnected)"}`,
		`{"type":"turn.failed","error":{}}`,
		`{"type":"something.new"}`,
	}
	parse := newParser("/w")
	ev := &events{}
	for i, l := range lines {
		if !parse([]byte(l), ev) {
			ev.add("unknown %d", i+1)
		}
	}
	want := []string{
		"unknown 1",
		"session t1",
		"tool web_search go 1.26",
		`said "first"`,
		"unknown 9",
		`said "  "`,
		"usage in 100 cached 40 out 7",
		`final "first"`,
		"usage in 1 cached 0 out 1", // a turn without a message has no final answer
		"unknown 14",
		"failed Codex: the turn failed without a message",
		"unknown 16",
	}
	if diff := cmp.Diff(want, ev.got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestShellScript(t *testing.T) {
	for in, want := range map[string]string{
		`/bin/bash -lc 'echo fixed > bug.txt'`:                                 "echo fixed > bug.txt",
		`/bin/bash -c "echo \"it's\" > q.txt && printf %s \""'$HOME" | wc -c'`: `echo "it's" > q.txt && printf %s "$HOME" | wc -c`,
		`bash -lc 'a'\''b'`:          `a'b`,
		`/usr/bin/zsh -lc ls`:        "ls",
		`sh -c "a \$HOME \\ \x"`:     `a $HOME \ \x`,
		`ls -la`:                     "ls -la",
		`/bin/bash -lc 'unclosed`:    `/bin/bash -lc 'unclosed`,
		`/bin/bash -lc "unclosed`:    `/bin/bash -lc "unclosed`,
		`/bin/bash -lc ls trailing\`: `/bin/bash -lc ls trailing\`,
		`/bin/bash -x 'echo'`:        `/bin/bash -x 'echo'`,
		`python3 -c 'print(1)'`:      `python3 -c 'print(1)'`,
		`/bin/bash -lc 'a' extra`:    `/bin/bash -lc 'a' extra`,
		``:                           ``,
	} {
		if got := shellScript(in); got != want {
			t.Errorf("shellScript(%s) = %q, want %q", in, got, want)
		}
	}
}
