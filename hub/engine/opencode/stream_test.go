package opencode

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/model"
)

// The testdata streams are recorded from OpenCode 1.18.33 (`opencode run
// --format json`) against a scripted model on loopback:
//
//	bash_exit3        the model runs `echo fixed > bug.txt; exit 3` with bash, then answers
//	edit              the model edits bug.txt with the edit tool, then answers
//	ask               the model calls hub_ask_supervisor (a stdio MCP server "hub")
//	ask_timeout       the same call, failed by OpenCode's default 60 s MCP timeout
//	api_error         the model endpoint answers 400
//	cached            one answer whose usage has 400 of 1000 prompt tokens cached
//	unavailable_tool  a read job's model calls bash, which its permissions took away
//	resumed           a run, then `--session` continuing it
//	stopped           a run killed by SIGTERM while the model was thinking
//	priced            bash_exit3 with a model cost in OpenCode's config

// events records what the parser reported, in order.
type events struct {
	calls    []string
	sessions []string
	said     []string
	tools    []string
	commands []string
	started  []time.Time
	usage    model.Usage
	usages   int
	cost     *float64
	final    string
	finals   int
	failed   string
}

func (e *events) Session(id string) {
	e.sessions = append(e.sessions, id)
	e.calls = append(e.calls, "session")
}
func (e *events) Said(text string) { e.said = append(e.said, text); e.calls = append(e.calls, "said") }
func (e *events) Tool(name, input string) {
	e.tools = append(e.tools, name+" "+input)
	e.calls = append(e.calls, "tool")
}
func (e *events) Command(cmd string, code *int, started time.Time) {
	e.started = append(e.started, started)
	c := "?"
	if code != nil {
		c = fmt.Sprint(*code)
	}
	e.commands = append(e.commands, c+": "+cmd)
	e.calls = append(e.calls, "command")
}
func (e *events) Tokens(u model.Usage) { e.Usage(u) }

func (e *events) Usage(u model.Usage) {
	e.usage = e.usage.Add(u)
	e.usages++
	e.calls = append(e.calls, "usage")
}
func (e *events) Cost(usd float64)  { e.cost = &usd; e.calls = append(e.calls, "cost") }
func (e *events) Final(text string) { e.final = text; e.finals++; e.calls = append(e.calls, "final") }
func (e *events) Failed(msg string) { e.failed = msg; e.calls = append(e.calls, "failed") }

// replay feeds a recorded stream to a fresh parser; every line must be known.
func replay(t *testing.T, name string) *events {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ev := &events{}
	parse := newParser()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if !parse(sc.Bytes(), ev) {
			t.Errorf("%s line %d is not known: %s", name, n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestBashCommandWithItsExitCode(t *testing.T) {
	ev := replay(t, "bash_exit3")
	if want := []string{"ses_dc78d6065ffecmzIQxgv49PddT"}; !reflect.DeepEqual(ev.sessions, want) {
		t.Errorf("sessions %v, want %v", ev.sessions, want)
	}
	if want := []string{"3: echo fixed > bug.txt; exit 3"}; !reflect.DeepEqual(ev.commands, want) {
		t.Errorf("commands %v, want %v", ev.commands, want)
	}
	// The command's start, as OpenCode timed it, for its duration in the trace.
	if want := []time.Time{time.UnixMilli(1796243373581)}; !reflect.DeepEqual(ev.started, want) {
		t.Errorf("the command started %v, want %v", ev.started, want)
	}
	if len(ev.tools) != 1 || !strings.HasPrefix(ev.tools[0], `bash {"command":"echo fixed > bug.txt; exit 3"`) {
		t.Errorf("tools %v", ev.tools)
	}
	if want := []string{"Running.", "Done: (no output)"}; !reflect.DeepEqual(ev.said, want) {
		t.Errorf("said %v, want %v", ev.said, want)
	}
	if ev.final != "Done: (no output)" || ev.finals != 1 || ev.failed != "" {
		t.Errorf("final %q (%d times), failed %q", ev.final, ev.finals, ev.failed)
	}
	if want := (model.Usage{Input: 2406 + 2427, Output: 20 + 5}); ev.usage != want || ev.usages != 2 {
		t.Errorf("usage %+v over %d steps, want %+v over 2", ev.usage, ev.usages, want)
	}
	// OpenCode reports cost 0 for a model without a price: not a cost.
	if ev.cost != nil {
		t.Errorf("cost %v reported for an unpriced model", *ev.cost)
	}
}

func TestEditIsAToolNotACommand(t *testing.T) {
	ev := replay(t, "edit")
	if len(ev.commands) != 0 {
		t.Errorf("commands %v", ev.commands)
	}
	if len(ev.tools) != 1 || !strings.HasPrefix(ev.tools[0], `edit {"filePath":"bug.txt"`) {
		t.Errorf("tools %v", ev.tools)
	}
	if ev.final != "Done: Edit applied successfully." {
		t.Errorf("final %q", ev.final)
	}
}

func TestHubToolCall(t *testing.T) {
	ev := replay(t, "ask")
	if want := []string{`hub_ask_supervisor {"question":"which word?"}`}; !reflect.DeepEqual(ev.tools, want) {
		t.Errorf("tools %v, want %v", ev.tools, want)
	}
	if ev.final != "Done: answer: which word?" {
		t.Errorf("final %q", ev.final)
	}
}

func TestFailedToolCallIsLoggedNotFatal(t *testing.T) {
	ev := replay(t, "ask_timeout")
	if want := []string{`hub_ask_supervisor {"question":"which word?"} (failed: MCP error -32001: Request timed out)`}; !reflect.DeepEqual(ev.tools, want) {
		t.Errorf("tools %v, want %v", ev.tools, want)
	}
	if ev.failed != "" || ev.final == "" {
		t.Errorf("failed %q, final %q", ev.failed, ev.final)
	}
}

func TestAPIErrorFailsTheRun(t *testing.T) {
	ev := replay(t, "api_error")
	if ev.failed != "OpenCode: APIError: bad model request (HTTP 400)" {
		t.Errorf("failed %q", ev.failed)
	}
	if ev.final != "" || len(ev.sessions) != 1 {
		t.Errorf("final %q, sessions %v", ev.final, ev.sessions)
	}
}

func TestCachedTokensCountAsInput(t *testing.T) {
	ev := replay(t, "cached")
	if want := (model.Usage{Input: 1000, Output: 50, CachedInput: 400}); ev.usage != want {
		t.Errorf("usage %+v, want %+v", ev.usage, want)
	}
}

func TestUnavailableToolIsOpenCodesInvalidTool(t *testing.T) {
	ev := replay(t, "unavailable_tool")
	if len(ev.commands) != 0 || len(ev.tools) != 1 || !strings.HasPrefix(ev.tools[0], `invalid {"tool":"bash"`) {
		t.Errorf("tools %v, commands %v", ev.tools, ev.commands)
	}
}

func TestResumedRunReportsItsSessionOnce(t *testing.T) {
	ev := replay(t, "resumed")
	if len(ev.sessions) != 1 || ev.finals != 2 || ev.usages != 2 {
		t.Errorf("sessions %v, finals %d, usages %d", ev.sessions, ev.finals, ev.usages)
	}
}

func TestStoppedRunHasNoFinal(t *testing.T) {
	ev := replay(t, "stopped")
	if ev.finals != 0 || len(ev.commands) != 1 || ev.usages != 1 {
		t.Errorf("finals %d, commands %v, usages %d", ev.finals, ev.commands, ev.usages)
	}
}

func TestOpenCodesOwnCostAddsUp(t *testing.T) {
	ev := replay(t, "priced")
	if ev.cost == nil || math.Abs(*ev.cost-(0.007512+0.00735)) > 1e-12 {
		t.Errorf("cost %v, want the sum of the steps' costs", ev.cost)
	}
}

func TestUnknownLines(t *testing.T) {
	parse := newParser()
	for _, line := range []string{
		`not json`,
		`{"type":"session.idle","sessionID":"ses_1"}`,
		`{"type":"text","sessionID":"ses_1"}`,
		`{"type":"tool_use","sessionID":"ses_1","part":{"tool":"bash"}}`,
		`{"type":"error","sessionID":"ses_1"}`,
		`[1,2]`,
	} {
		ev := &events{}
		if parse([]byte(line), ev) {
			t.Errorf("%s: known", line)
		}
		if ev.final != "" || ev.failed != "" || len(ev.tools) != 0 || ev.usages != 0 {
			t.Errorf("%s: reported %v", line, ev.calls)
		}
	}
}
