package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/demo"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestBuiltinTraceOfTheDemo: the demo's delegation (its sample repository,
// task, verify and definition of done, and the demo model's script played
// by a scripted server on loopback) run by the real daemon and shim. Its
// trace lists every model call (as many as the model got requests, each
// with its tokens and cost) and every tool call the script made, nested
// under the worker's entry in the run phase; the phases follow one another
// and add up to the job's running time (started → ended) within 5%, and
// each entry's children cover it less the gap the trace shows.
func TestBuiltinTraceOfTheDemo(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	sc, err := demo.Script()
	if err != nil {
		t.Fatal(err)
	}
	script := sc.Turns
	b := newBuiltinWorld(t, ctx, openaiWire, true, script...)
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "sample"), demo.Files)
	r := b.start(ctx, protocol.StartParams{Repo: repo, Task: demo.Task, Verify: demo.Verify, DefinitionOfDone: demo.DefinitionOfDone})
	st := b.waitEnd(ctx, r.ID)
	if st.State != protocol.StateSucceeded {
		t.Fatalf("the demo job ended %s: %s", st.State, st.Error)
	}
	tr := hubtest.Daemon(t, b.c).JobTrace(ctx, protocol.TraceParams{ID: r.ID})

	// Every model call: one a request, each with the tokens and cost the provider gave.
	requests := len(b.model.Requests())
	wantTools := 0
	for _, turn := range script[:requests] {
		wantTools += len(turn.ToolCalls)
	}
	var models, tools []protocol.TraceEntry
	phases := map[string]protocol.TraceEntry{}
	var tokens int64
	var usd float64
	for _, e := range tr.Entries {
		switch e.Kind {
		case protocol.TraceModel:
			models = append(models, e)
			tokens += e.TokensIn + e.TokensOut
			usd += e.USD
			if e.TokensIn == 0 || e.TokensOut == 0 || e.CostUnknown || e.Name != modelName {
				t.Errorf("model call %s: %+v", e.ID, e)
			}
		case protocol.TraceTool:
			tools = append(tools, e)
		case protocol.TracePhase:
			phases[e.Name] = e
		}
		switch {
		case e.ID == "worker":
			if e.Parent != protocol.PhaseRun || e.Kind != protocol.TraceCommand || e.ExitCode == nil || *e.ExitCode != 0 {
				t.Errorf("the worker's entry: %+v", e)
			}
		case e.Kind != protocol.TracePhase && e.Parent != "worker":
			t.Errorf("step %s (%s %s) nests under %q, not the worker", e.ID, e.Kind, e.Name, e.Parent)
		}
		if len([]rune(e.Args)) > protocol.TraceSummaryMax || len([]rune(e.Result)) > protocol.TraceSummaryMax {
			t.Errorf("step %s carries a summary over %d characters", e.ID, protocol.TraceSummaryMax)
		}
	}
	if len(models) != requests || requests == 0 {
		t.Errorf("the trace has %d model calls; the model got %d requests", len(models), requests)
	}
	if len(tools) != wantTools || wantTools == 0 {
		t.Errorf("the trace has %d tool calls; the script made %d", len(tools), wantTools)
	}
	// The script's tool calls, in order, are the trace's.
	var want, got []string
	for _, turn := range script[:requests] {
		for _, c := range turn.ToolCalls {
			want = append(want, c.Name)
		}
	}
	for _, e := range tools {
		got = append(got, e.Name)
	}
	if strings.Join(want, " ") != strings.Join(got, " ") {
		t.Errorf("tool calls in the trace:\n%v\nthe script's:\n%v", got, want)
	}
	ev := b.evidence(ctx, r.ID).Evidence
	if tokens != st.Cost.Tokens || usd <= 0 || !near(usd, st.Cost.USD) {
		t.Errorf("the model calls add up to %d tokens and $%.6f; the job %d and $%.6f", tokens, usd, st.Cost.Tokens, st.Cost.USD)
	}
	if ev.Cost.Calls != requests {
		t.Errorf("the evidence counts %d calls, the model got %d requests", ev.Cost.Calls, requests)
	}

	// The phases, one after another, cover the running time.
	for _, name := range []string{protocol.PhaseLaunch, protocol.PhasePrepare, protocol.PhaseRun, protocol.PhaseCommit, protocol.PhaseVerify, protocol.PhaseFinish} {
		if _, ok := phases[name]; !ok {
			t.Errorf("no %s phase in the trace", name)
		}
	}
	j, err := storeJob(t, b.world, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	running := j.EndedAt.Sub(j.PreparingAt)
	if tr.Started == nil || tr.Ended == nil || !tr.Started.Equal(j.PreparingAt) || !tr.Ended.Equal(j.EndedAt) {
		t.Errorf("the trace runs %v → %v; the job %v → %v", tr.Started, tr.Ended, j.PreparingAt, j.EndedAt)
	}
	var sum time.Duration
	for _, e := range tr.Entries {
		if e.Parent == "" {
			sum += time.Duration(e.DurationUS) * time.Microsecond
		}
	}
	off := (sum - running).Seconds() / running.Seconds()
	t.Logf("demo job %s: running %s (started → ended); phases add up to %s (%+.2f%%); trace gap %s", r.ID,
		running, sum.Round(time.Microsecond), 100*off, time.Duration(tr.PhaseGapUS)*time.Microsecond)
	if off > 0.05 || off < -0.05 {
		t.Errorf("the phases add up to %s, the running time is %s: %.1f%% off", sum, running, 100*off)
	}
	// The worker covers the run less hub's own work around it; the worker's
	// steps cover the worker less its gap.
	byID := map[string]protocol.TraceEntry{}
	for _, e := range tr.Entries {
		byID[e.ID] = e
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	run, worker := byID[protocol.PhaseRun], byID["worker"]
	if d := us(run.DurationUS - run.GapUS - worker.DurationUS); d > 0 || d < 0 {
		t.Errorf("the run (%s, gap %s) is not the worker (%s) and its gap", us(run.DurationUS), us(run.GapUS), us(worker.DurationUS))
	}
	// The time the worker's steps cover: steps that ran side by side (the
	// model's parallel tool calls) count once, as the gap counts them.
	type span struct{ from, to time.Time }
	var spans []span
	for _, e := range tr.Entries {
		if e.Parent == "worker" {
			spans = append(spans, span{e.Start, e.Start.Add(us(e.DurationUS))})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var steps time.Duration
	var end time.Time
	for _, sp := range spans {
		if sp.from.After(end) {
			steps += sp.to.Sub(sp.from)
		} else if sp.to.After(end) {
			steps += sp.to.Sub(end)
		}
		if sp.to.After(end) {
			end = sp.to
		}
	}
	t.Logf("run phase %s = worker %s + hub's work around it %s; worker = %d model calls + %d tool calls + self-check %s + the worker's own time %s (%.0f%% of it)",
		us(run.DurationUS), us(worker.DurationUS), us(run.GapUS), len(models), len(tools), steps, us(worker.GapUS),
		100*us(worker.GapUS).Seconds()/us(worker.DurationUS).Seconds())
	if d := us(worker.DurationUS-worker.GapUS) - steps; d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("the worker's steps add up to %s; the worker less its gap is %s", steps, us(worker.DurationUS-worker.GapUS))
	}
	if worker.GapUS <= 0 || worker.GapUS >= worker.DurationUS || run.GapUS <= 0 {
		t.Errorf("gaps: the worker's %s of %s, the run's %s", us(worker.GapUS), us(worker.DurationUS), us(run.GapUS))
	}

	// The supervisor's way: result with trace, through hub mcp, one page.
	cs, _ := b.mcpSession(ctx, "2025-06-18")
	text := contentText(callTool(t, ctx, cs, "result", map[string]any{"id": r.ID, "trace": 1}))
	rows := strings.Count(text, "\n") - 1 // less the header and the sums
	if rows != tr.Total || strings.Contains(text, "more:") || !strings.Contains(text, fmt.Sprintf("%d model calls", requests)) {
		t.Errorf("result trace=1 has %d rows for %d steps:\n%s", rows, tr.Total, text)
	}
}

// near reports whether two dollar figures agree to a micro-dollar.
func near(a, b float64) bool { d := a - b; return d < 1e-6 && d > -1e-6 }

// TestBuiltinTraceRedactsKeys: a tool call whose arguments and output
// carry the profile's key is in the trace without it — in job/trace, in
// the journal's raw trace events, and in the store.
func TestBuiltinTraceRedactsKeys(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	u := scripted.Usage{Input: 10, Output: 5}
	// The key is made with the world; the script that quotes it comes after.
	b := newBuiltinWorld(t, ctx, openaiWire, false, textTurn(u, "replaced"))
	if err := b.model.SetScript(modelName, &scripted.Script{Turns: []scripted.Turn{
		toolTurn(u, "run_shell", map[string]any{"command": "echo token " + b.key}),
		toolTurn(u, "write_file", map[string]any{"path": "notes.txt", "content": "the key is " + b.key + "\n"}),
		textTurn(u, "done"),
	}}); err != nil {
		t.Fatal(err)
	}
	r := b.start(ctx, protocol.StartParams{Task: "note the key"})
	if st := b.waitEnd(ctx, r.ID); st.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s", st.State, st.Error)
	}
	tr := hubtest.Daemon(t, b.c).JobTrace(ctx, protocol.TraceParams{ID: r.ID})
	raw, _ := json.Marshal(tr)
	var shell *protocol.TraceEntry
	for i, e := range tr.Entries {
		if e.Name == "run_shell" {
			shell = &tr.Entries[i]
		}
	}
	if shell == nil || !strings.Contains(shell.Args, "echo token [REDACTED]") || !strings.Contains(shell.Result, "[REDACTED]") {
		t.Fatalf("the shell call in the trace: %+v", shell)
	}
	for _, e := range b.events(ctx, r.ID) {
		if e.Kind == protocol.EventTrace {
			raw = append(raw, e.Data...)
			raw = append(raw, e.Text...)
		}
	}
	if strings.Contains(string(raw), b.key) || strings.Contains(string(raw), b.key[:12]) {
		t.Fatalf("the key is in the trace:\n%s", raw)
	}
}

// tracedCommand finds the command cmd in job id's trace, under the
// worker's entry, and fails unless it is there with a duration (the engine said
// when it started) and, when want is set, that exit code.
func tracedCommand(t *testing.T, b *builtinWorld, id, cmd string, want *int) protocol.TraceEntry {
	t.Helper()
	tr := hubtest.Daemon(t, b.c).JobTrace(hubtest.Deadline(t, 10*time.Second), protocol.TraceParams{ID: id})
	for _, e := range tr.Entries {
		if e.Kind != protocol.TraceCommand || e.Name != cmd {
			continue
		}
		if e.Parent != "worker" || e.DurationUS <= 0 || e.Start.IsZero() ||
			want != nil && (e.ExitCode == nil || *e.ExitCode != *want || e.Failed != (*want != 0)) {
			t.Errorf("the traced command: %+v", e)
		}
		t.Logf("traced command %q: exit %s, %s", cmd, exitText(e.ExitCode), time.Duration(e.DurationUS)*time.Microsecond)
		return e
	}
	all, _ := json.MarshalIndent(tr.Entries, "", " ")
	t.Errorf("no command %q in the trace:\n%s", cmd, all)
	return protocol.TraceEntry{}
}
