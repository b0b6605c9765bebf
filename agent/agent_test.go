package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/agent/tool"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/rubric"
)

// The loop is driven over real HTTP by the scripted model server, on both
// wire formats, with real tools in a temporary directory.

var wires = []string{model.OpenAI, model.Anthropic}

// mailbox is a test double of the job's mailbox: it answers questions from
// answers, hands out queued steering, and records what it heard.
type mailbox struct {
	mu       sync.Mutex
	answers  []agent.Answer
	asked    []string
	notes    []string
	steers   []string
	spent    []agent.Spend
	steps    []agent.Step
	onAsk    func()
	onSpent  func(agent.Spend)
	progress int
}

func (m *mailbox) Ask(ctx context.Context, kind, question, _ string) (agent.Answer, error) {
	m.mu.Lock()
	m.asked = append(m.asked, kind+": "+question)
	var a agent.Answer
	if len(m.answers) > 0 {
		a, m.answers = m.answers[0], m.answers[1:]
	} else {
		a = agent.Answer{TimedOut: true, Instruction: "go on with the most conservative choice"}
	}
	hook := m.onAsk
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	return a, nil
}

func (m *mailbox) Progress(ctx context.Context, note string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.progress++
	if note != "" {
		m.notes = append(m.notes, note)
	}
	s := m.steers
	m.steers = nil
	return s, nil
}

func (m *mailbox) Spent(ctx context.Context, s agent.Spend) {
	m.mu.Lock()
	m.spent = append(m.spent, s)
	hook := m.onSpent
	m.mu.Unlock()
	if hook != nil {
		hook(s)
	}
}

func (m *mailbox) Step(ctx context.Context, s agent.Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, s)
}

func (m *mailbox) steer(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steers = append(m.steers, s)
}

// rig is one loop under test: a model server, a client, a worktree.
type rig struct {
	t      *testing.T
	srv    *scripted.Server
	client *model.Client
	dir    string
	ws     *tool.Workspace
	mb     *mailbox
	seen   chan string // one line per request the server took
}

type rigOpts struct {
	wire    string
	model   string
	prices  string // prices.json content
	window  int
	maxTok  int
	files   map[string]string
	maxRead int
}

func newRig(t *testing.T, o rigOpts, turns ...scripted.Turn) *rig {
	t.Helper()
	if o.model == "" {
		o.model = "test-model"
	}
	r := &rig{t: t, dir: t.TempDir(), mb: &mailbox{}, seen: make(chan string, 256)}
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	r.srv = scripted.New(&scripted.Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done && strings.Contains(format, "turn %d") { // one line per request that took a turn
			select {
			case r.seen <- format:
			default:
			}
		}
	}})
	if err := r.srv.SetScript(o.model, &scripted.Script{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.srv.Close() })
	var tab *model.Table
	var err error
	if o.prices != "" {
		p := filepath.Join(t.TempDir(), "prices.json")
		if err := os.WriteFile(p, []byte(o.prices), 0o600); err != nil {
			t.Fatal(err)
		}
		if tab, err = model.Prices(p); err != nil {
			t.Fatal(err)
		}
	}
	wire := o.wire
	if wire == "" {
		wire = model.OpenAI
	}
	r.client, err = model.New(model.Options{Provider: wire, BaseURL: r.srv.URL() + "/v1", Key: "k", Models: []string{o.model},
		Prices: tab, ContextWindow: o.window, MaxTokens: o.maxTok,
		Retry: &model.Retry{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range o.files {
		p := filepath.Join(r.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.ws, err = tool.New(r.dir, &tool.Options{MaxRead: o.maxRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ws.Close() })
	return r
}

func (r *rig) config() agent.Config {
	return agent.Config{Model: r.client, Workspace: r.ws, Mailbox: r.mb, Log: zerolog.Nop(),
		Task: "do the thing", Write: true, BudgetMicros: 1_000_000_000}
}

func (r *rig) run(cfg agent.Config) agent.Result {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return agent.Run(ctx, cfg)
}

func call(name, args string) scripted.ToolCall {
	return scripted.ToolCall{Name: name, Args: json.RawMessage(args)}
}

func calls(cs ...scripted.ToolCall) scripted.Turn { return scripted.Turn{ToolCalls: cs} }

func final(text string) scripted.Turn { return scripted.Turn{Text: text} }

// results returns the tool results the model saw in request i, in order.
func (r *rig) results(i int) []scripted.ToolResult {
	r.t.Helper()
	reqs := r.srv.Requests()
	if i >= len(reqs) {
		r.t.Fatalf("request %d of %d", i, len(reqs))
	}
	var out []scripted.ToolResult
	for _, m := range reqs[i].Messages {
		out = append(out, m.ToolResults...)
	}
	return out
}

func lastResult(rs []scripted.ToolResult) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Content
}

func TestParallelToolCallsRoundTrip(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire, files: map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"}},
				calls(call("read_file", `{"path":"a.txt"}`), call("read_file", `{"path":"b.txt"}`)),
				final("read both"))
			var log strings.Builder
			cfg := r.config()
			cfg.Transcript = &log
			res := r.run(cfg)
			if res.Stop != agent.StopDone || res.Summary != "read both" || res.Turns != 2 {
				t.Fatalf("result %+v", res)
			}
			for _, want := range []string{`[lead] → read_file {"path":"a.txt"}`, "[lead] ← read_file:", "[lead] read both"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("transcript lacks %q:\n%s", want, log.String())
				}
			}
			got := r.results(1)
			if len(got) != 2 || !strings.Contains(got[0].Content, "alpha") || !strings.Contains(got[1].Content, "beta") {
				t.Fatalf("tool results %+v", got)
			}
			reqs := r.srv.Requests()
			var ids []string
			for _, m := range reqs[1].Messages {
				for _, tc := range m.ToolCalls {
					ids = append(ids, tc.ID)
				}
			}
			if len(ids) != 2 || got[0].CallID != ids[0] || got[1].CallID != ids[1] {
				t.Errorf("call ids %v, result ids %s %s", ids, got[0].CallID, got[1].CallID)
			}
		})
	}
}

func TestToolErrorGoesBackToTheModel(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire},
				calls(call("read_file", `{"path":"missing.txt"}`)),
				calls(call("read_file", `{"path":"../outside"}`)),
				calls(call("no_such_tool", `{}`)),
				calls(call("edit_file", `{"path":"x","bogus":1}`)),
				final("gave up"))
			res := r.run(r.config())
			if res.Stop != agent.StopDone {
				t.Fatalf("result %+v", res)
			}
			for i, want := range []string{"missing.txt", "outside the worktree", "no tool named", "bogus"} {
				got := lastResult(r.results(i + 1))
				if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, want) {
					t.Errorf("request %d: tool result %q, want an error mentioning %q", i+1, got, want)
				}
			}
		})
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire},
				scripted.Turn{Error: &scripted.HTTPError{Status: 429, Message: "slow down"}},
				final("done after a retry"))
			res := r.run(r.config())
			if res.Stop != agent.StopDone || res.Summary != "done after a retry" {
				t.Fatalf("result %+v", res)
			}
			if n := len(r.srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2 (the 429 and its retry)", n)
			}
			if res.Spend.Calls != 1 {
				t.Errorf("%d calls metered, want 1", res.Spend.Calls)
			}
		})
	}
}

// TestBudgetStopsBeforeTheCrossingCall: the loop never makes a call whose
// estimate could take the spend over the budget.
func TestBudgetStopsBeforeTheCrossingCall(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			// Each call could cost its full answer: 10k tokens at $10/M = $0.10.
			// The budget fits one estimate, not the spend of the first call
			// ($0.045) plus a second estimate.
			r := newRig(t, rigOpts{wire: wire, model: "priced", maxTok: 10_000,
				prices: `{"models":{"priced":{"input":10,"output":10}}}`},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_dir", `{}`)}, Usage: &scripted.Usage{Input: 4000, Output: 500}},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_dir", `{}`)}, Usage: &scripted.Usage{Input: 4000, Output: 500}},
				final("never reached"))
			cfg := r.config()
			first := micros.Micros(4500 * 10)
			cfg.BudgetMicros = 150_000
			res := r.run(cfg)
			if res.Stop != agent.StopBudget || !errors.Is(res.Err, agent.ErrBudget) {
				t.Fatalf("result %+v", res)
			}
			if n := len(r.srv.Requests()); n != 1 {
				t.Errorf("%d calls made, want 1", n)
			}
			if !res.Spend.Known || res.Spend.Micros != first || res.Spend.Micros > cfg.BudgetMicros {
				t.Errorf("spend %+v against budget %d", res.Spend, cfg.BudgetMicros)
			}
		})
	}
}

func TestNoBudgetNoCall(t *testing.T) {
	r := newRig(t, rigOpts{model: "priced", prices: `{"models":{"priced":{"input":1,"output":1}}}`}, final("never"))
	cfg := r.config()
	cfg.BudgetMicros = 0
	res := r.run(cfg)
	if res.Stop != agent.StopBudget || len(r.srv.Requests()) != 0 {
		t.Fatalf("with max_usd 0 a priced model was called: %+v", res)
	}
}

func TestUnknownPriceRunsAndSaysSo(t *testing.T) {
	r := newRig(t, rigOpts{model: "mystery"}, final("done"))
	cfg := r.config()
	cfg.BudgetMicros = 1
	res := r.run(cfg)
	if res.Stop != agent.StopDone || res.Spend.Known {
		t.Fatalf("result %+v", res)
	}
}

func TestAskSupervisor(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire},
				calls(call("ask_supervisor", `{"question":"UTC or local time?"}`)),
				calls(call("ask_supervisor", `{"question":"and the format?"}`)),
				final("used UTC"))
			r.mb.answers = []agent.Answer{{Text: "use UTC"}}
			res := r.run(r.config())
			if res.Stop != agent.StopDone {
				t.Fatalf("result %+v", res)
			}
			if got := lastResult(r.results(1)); !strings.Contains(got, "use UTC") {
				t.Errorf("the model did not see the answer: %q", got)
			}
			if got := lastResult(r.results(2)); !strings.Contains(got, "No answer came in time") || !strings.Contains(got, "conservative") {
				t.Errorf("a timed-out ask: %q", got)
			}
			if len(r.mb.asked) != 2 || r.mb.asked[0] != "question: UTC or local time?" {
				t.Errorf("asked %q", r.mb.asked)
			}
		})
	}
}

func TestBlockerWithoutAnswerStops(t *testing.T) {
	r := newRig(t, rigOpts{},
		calls(call("report_blocker", `{"blocker":"no access to the staging database"}`)),
		final("never reached"))
	res := r.run(r.config())
	if res.Stop != agent.StopBlocked || !strings.Contains(res.Summary, "staging database") {
		t.Fatalf("result %+v", res)
	}
	if len(r.srv.Requests()) != 1 {
		t.Errorf("the loop went on after an unanswered blocker")
	}
}

func TestSteerReachesTheNextToolResult(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire, files: map[string]string{"a.txt": "alpha\n"}},
				calls(call("read_file", `{"path":"a.txt"}`)),
				calls(call("report_progress", `{"note":"halfway"}`)),
				final("done"))
			r.mb.onSpent = func(s agent.Spend) {
				if s.Calls == 1 {
					r.mb.steer("use the v2 API instead")
				}
			}
			res := r.run(r.config())
			if res.Stop != agent.StopDone {
				t.Fatalf("result %+v", res)
			}
			got := lastResult(r.results(1))
			if !strings.Contains(got, "alpha") || !strings.Contains(got, "STEERING") || !strings.Contains(got, "overrides earlier guidance") ||
				!strings.Contains(got, "use the v2 API instead") {
				t.Errorf("tool result after the steer: %q", got)
			}
			if strings.Contains(lastResult(r.results(2)), "v2 API") {
				t.Error("the steer was delivered twice")
			}
			if len(r.mb.notes) != 1 || r.mb.notes[0] != "halfway" {
				t.Errorf("progress notes %q", r.mb.notes)
			}
		})
	}
}

func TestSteerAtTheEndIsHeard(t *testing.T) {
	r := newRig(t, rigOpts{}, final("done"), final("done, in Go this time"))
	r.mb.onSpent = func(s agent.Spend) {
		if s.Calls == 1 {
			r.mb.steer("write it in Go")
		}
	}
	res := r.run(r.config())
	if res.Stop != agent.StopDone || res.Summary != "done, in Go this time" {
		t.Fatalf("result %+v", res)
	}
	reqs := r.srv.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Text, "write it in Go") {
		t.Errorf("last message of request 2: %+v", last)
	}
}

func TestStopDuringAModelCall(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			r := newRig(t, rigOpts{wire: wire},
				calls(call("write_file", `{"path":"partial.txt","content":"half done\n"}`)),
				scripted.Turn{Text: "too late", DelayMS: 60_000})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := make(chan agent.Result, 1)
			go func() { out <- agent.Run(ctx, r.config()) }()
			for i := 0; i < 2; i++ { // the second request is the slow one
				select {
				case <-r.seen:
				case <-time.After(10 * time.Second):
					t.Fatal("the model was not called")
				}
			}
			cancel()
			var res agent.Result
			select {
			case res = <-out:
			case <-time.After(5 * time.Second):
				t.Fatal("the run did not end promptly after stop")
			}
			if res.Stop != agent.StopCancelled || !errors.Is(res.Err, context.Canceled) {
				t.Errorf("result %+v", res)
			}
			if b, _ := os.ReadFile(filepath.Join(r.dir, "partial.txt")); string(b) != "half done\n" {
				t.Errorf("the work before the stop is gone: %q", b)
			}
		})
	}
}

// TestContextOverflowIsSummarised: when the conversation nears the window,
// older turns are summarised by the model and the run goes on.
func TestContextOverflowIsSummarised(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			// Each read adds a tool result of 24 KiB (the loop's cap), ~6k
			// tokens; the window leaves 13k for input, compacted at 75%.
			big := func(c byte) string { return strings.Repeat(string(c)+"23456789\n", 3000) }
			r := newRig(t, rigOpts{wire: wire, window: 14_000, maxTok: 1000,
				files: map[string]string{"one.txt": big('A'), "two.txt": big('B')}},
				calls(call("read_file", `{"path":"one.txt"}`)),
				calls(call("read_file", `{"path":"two.txt"}`)),
				final("SUMMARY: one.txt is all A-lines; two.txt is being read."),
				final("done after the summary"))
			res := r.run(r.config())
			if res.Stop != agent.StopDone || res.Summary != "done after the summary" {
				t.Fatalf("result %+v", res)
			}
			reqs := r.srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			if !strings.Contains(reqs[2].System, "compress") || len(reqs[2].Tools) != 0 {
				t.Errorf("request 3 is not a summary call: system %q, tools %v", reqs[2].System, reqs[2].Tools)
			}
			var sawSummary, sawOne, sawTwo bool
			for _, m := range reqs[3].Messages {
				sawSummary = sawSummary || strings.Contains(m.Text, agent.SummaryMarker) && strings.Contains(m.Text, "all A-lines")
				for _, tr := range m.ToolResults {
					sawOne = sawOne || strings.Contains(tr.Content, "A23456789")
					sawTwo = sawTwo || strings.Contains(tr.Content, "B23456789")
				}
			}
			if !sawSummary || sawOne || !sawTwo {
				t.Errorf("after the summary: summary %v, first file still there %v, last file kept %v", sawSummary, sawOne, sawTwo)
			}
		})
	}
}

func TestMaxTurns(t *testing.T) {
	r := newRig(t, rigOpts{}, calls(call("list_dir", `{}`)), calls(call("list_dir", `{}`)), calls(call("list_dir", `{}`)))
	cfg := r.config()
	cfg.MaxTurns = 2
	res := r.run(cfg)
	if res.Stop != agent.StopMaxTurns || len(r.srv.Requests()) != 2 {
		t.Fatalf("result %+v after %d requests", res, len(r.srv.Requests()))
	}
}

func TestModelUnreachableEndsTheRun(t *testing.T) {
	r := newRig(t, rigOpts{}, scripted.Turn{Error: &scripted.HTTPError{Status: 401, Message: "bad key"}})
	res := r.run(r.config())
	if res.Stop != agent.StopError || res.Err == nil || !strings.Contains(res.Err.Error(), "401") {
		t.Fatalf("result %+v", res)
	}
}

func TestRolesRunTheirOwnLoops(t *testing.T) {
	r := newRig(t, rigOpts{},
		calls(call("implementer", `{"task":"create hello.txt saying hi","files":["README.md"]}`)),
		calls(call("write_file", `{"path":"hello.txt","content":"hi\n"}`)), // the implementer's turn
		final("created hello.txt"), // the implementer's report
		calls(call("reviewer", `{"task":"check hello.txt"}`)),
		calls(call("write_file", `{"path":"x.txt","content":"no"}`)), // the reviewer may not write
		final("no findings"),
		final("hello.txt is there"))
	cfg := r.config()
	cfg.Roles = true
	res := r.run(cfg)
	if res.Stop != agent.StopDone || res.Summary != "hello.txt is there" {
		t.Fatalf("result %+v", res)
	}
	reqs := r.srv.Requests()
	if !strings.Contains(reqs[1].System, "implementer") || strings.Contains(reqs[1].System, "senior software engineer working alone") {
		t.Errorf("the implementer's loop has the wrong prompt: %q", reqs[1].System)
	}
	if !strings.Contains(reqs[1].Messages[0].Text, "create hello.txt") || !strings.Contains(reqs[1].Messages[0].Text, "README.md") {
		t.Errorf("the implementer's task: %q", reqs[1].Messages[0].Text)
	}
	for _, n := range reqs[1].Tools {
		if n == "implementer" || n == "reviewer" {
			t.Errorf("a role was offered roles: %v", reqs[1].Tools)
		}
	}
	if got := lastResult(r.results(3)); !strings.Contains(got, "implementer's report") || !strings.Contains(got, "created hello.txt") {
		t.Errorf("the lead saw %q", got)
	}
	for _, n := range reqs[4].Tools {
		if n == "write_file" || n == "run_shell" || n == "edit_file" {
			t.Errorf("the reviewer was offered %s", n)
		}
	}
	if got := lastResult(r.results(5)); !strings.Contains(got, "no tool named \"write_file\"") {
		t.Errorf("the reviewer's write: %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "x.txt")); err == nil {
		t.Error("the read-only reviewer wrote a file")
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "hello.txt")); string(b) != "hi\n" {
		t.Errorf("hello.txt = %q", b)
	}
}

func TestReadJobGetsReadOnlyTools(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"a.go": "package a\n"}}, final("a.go declares package a"))
	cfg := r.config()
	cfg.Write = false
	cfg.Roles = true
	res := r.run(cfg)
	if res.Stop != agent.StopDone {
		t.Fatalf("result %+v", res)
	}
	for _, n := range r.srv.Requests()[0].Tools {
		switch n {
		case "write_file", "edit_file", "run_shell", "implementer", "tester", "reviewer":
			t.Errorf("a read job was offered %s", n)
		}
	}
}

// TestGradeThenRevise: the loop grades its own result against the
// definition of done and goes back to work when the hub's view says no.
func TestGradeThenRevise(t *testing.T) {
	r := newRig(t, rigOpts{}, final("all done, tests pass"), final("fixed for real"))
	var rounds int
	cfg := r.config()
	cfg.DefinitionOfDone = "- `sh test.sh` passes\n- do not change go.mod"
	cfg.Verify = "sh test.sh"
	cfg.Observe = func(ctx context.Context) (rubric.Facts, error) {
		rounds++
		f := rubric.Facts{Write: true, Files: []rubric.FileChange{{Path: "main.go", Change: "modified"}},
			Verify: &rubric.VerifyFact{Command: "sh test.sh", Ran: true, ExitCode: 1, OutputTail: "FAIL: want 2, got 3"}}
		if rounds > 1 {
			f.Verify.ExitCode, f.Verify.OutputTail = 0, "ok"
		}
		return f, nil
	}
	res := r.run(cfg)
	if res.Stop != agent.StopDone || res.Summary != "fixed for real" {
		t.Fatalf("result %+v", res)
	}
	if res.Rubric == nil || res.Rubric.Verdict != rubric.VerdictSatisfied || rounds != 2 {
		t.Fatalf("rubric %+v after %d rounds", res.Rubric, rounds)
	}
	reqs := r.srv.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Text, "does not meet the definition of done") || !strings.Contains(last.Text, "want 2, got 3") {
		t.Errorf("revision request: %+v", last)
	}
	if len(r.mb.notes) != 1 || !strings.Contains(r.mb.notes[0], "revising") {
		t.Errorf("progress notes %q", r.mb.notes)
	}
}

func TestRevisionsAreBounded(t *testing.T) {
	r := newRig(t, rigOpts{}, final("done"), final("done"), final("done"), final("never"))
	cfg := r.config()
	cfg.Verify = "false"
	cfg.Revisions = 2
	cfg.Observe = func(ctx context.Context) (rubric.Facts, error) {
		return rubric.Facts{Write: true, Files: []rubric.FileChange{{Path: "a", Change: "added"}},
			Verify: &rubric.VerifyFact{Command: "false", Ran: true, ExitCode: 1}}, nil
	}
	res := r.run(cfg)
	if res.Stop != agent.StopDone || len(r.srv.Requests()) != 3 || res.Rubric.Verdict != rubric.VerdictFailed {
		t.Fatalf("result %+v after %d requests", res, len(r.srv.Requests()))
	}
}

// TestModelGrader: judgement criteria go to a model grader with read-only
// tools; its word never overrules the hub's view of a mechanical criterion.
func TestModelGrader(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"README.md": "# tool\nUsage: tool --fast\n"}},
		final("documented the flag"),
		calls(call("read_file", `{"path":"README.md"}`)), // the grader looks
		final(`{"judgements":[{"id":"c3","status":"pass","evidence":"README.md line 2 documents --fast"},{"id":"c1","status":"pass","evidence":"trust me"}]}`))
	cfg := r.config()
	cfg.DefinitionOfDone = "The README documents the --fast flag."
	cfg.Verify = "sh test.sh"
	cfg.Grade = true
	cfg.Revisions = -1
	cfg.Observe = func(ctx context.Context) (rubric.Facts, error) {
		return rubric.Facts{Write: true, Files: []rubric.FileChange{{Path: "README.md", Change: "modified"}},
			Verify: &rubric.VerifyFact{Command: "sh test.sh", Ran: true, ExitCode: 1}}, nil
	}
	res := r.run(cfg)
	if res.Rubric == nil {
		t.Fatalf("no rubric: %+v", res)
	}
	byID := map[string]rubric.CriterionResult{}
	for _, c := range res.Rubric.Criteria {
		byID[c.ID] = c
	}
	if c := byID["c3"]; c.Kind != rubric.KindJudgement || c.Status != rubric.StatusPass || c.By != rubric.ByModel || !strings.Contains(c.Evidence, "--fast") {
		t.Errorf("judgement criterion: %+v", c)
	}
	for _, c := range res.Rubric.Criteria {
		if c.Kind == rubric.KindVerify && (c.Status != rubric.StatusFail || c.By != rubric.ByHub) {
			t.Errorf("the grader overruled verify: %+v", c)
		}
	}
	if res.Rubric.Verdict != rubric.VerdictFailed {
		t.Errorf("verdict %s with a failing verify", res.Rubric.Verdict)
	}
	reqs := r.srv.Requests()
	if !strings.Contains(reqs[1].System, "grade") {
		t.Errorf("request 2 is not the grader: %q", reqs[1].System)
	}
	for _, n := range reqs[1].Tools {
		if n == "write_file" || n == "edit_file" || n == "run_shell" {
			t.Errorf("the grader was offered %s", n)
		}
	}
}

func TestCostIsReportedAfterEveryCall(t *testing.T) {
	r := newRig(t, rigOpts{model: "priced", prices: `{"models":{"priced":{"input":2,"output":4}}}`},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_dir", `{}`)}, Usage: &scripted.Usage{Input: 1000, Output: 100}},
		scripted.Turn{Text: "done", Usage: &scripted.Usage{Input: 2000, Output: 50}})
	res := r.run(r.config())
	if res.Stop != agent.StopDone {
		t.Fatal(res)
	}
	want := []micros.Micros{2000 + 400, 2000 + 400 + 4000 + 200}
	if len(r.mb.spent) != 2 || r.mb.spent[0].Micros != want[0] || r.mb.spent[1].Micros != want[1] || !r.mb.spent[1].Known {
		t.Errorf("spent %+v, want micros %v", r.mb.spent, want)
	}
	if res.Spend.Micros != want[1] || res.Spend.Tokens != 3150 || res.Spend.Calls != 2 || len(res.Models) != 1 {
		t.Errorf("spend %+v models %v", res.Spend, res.Models)
	}
}
