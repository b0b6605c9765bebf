package trace_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/trace"
)

const key = "sk-live-0123456789abcdefXYZ"

// Clean redacts before it cuts: a key anywhere in a long argument, even
// across the cut, leaves not one of its characters' runs behind.
func TestCleanRedactsThenBounds(t *testing.T) {
	red := redact.New(key)
	for _, at := range []int{0, 50, 185, 195, 199, 400} {
		args := strings.Repeat("a", at) + key + strings.Repeat(" b", 300)
		e := trace.Clean(red, protocol.TraceEntry{ID: "t1", Kind: protocol.TraceTool, Name: "run_shell " + key,
			Args: args, Result: "out\n\n" + key + "\n" + strings.Repeat("z", 500)})
		for _, s := range []string{e.Name, e.Args, e.Result} {
			if strings.Contains(s, key[:8]) {
				t.Errorf("key at %d: %q keeps a piece of the key", at, s)
			}
			if n := len([]rune(s)); n > protocol.TraceSummaryMax {
				t.Errorf("key at %d: %d characters", at, n)
			}
		}
		if !strings.HasPrefix(e.Result, "out [REDACTED] zzz") || !strings.HasSuffix(e.Result, "…") {
			t.Errorf("result %q", e.Result)
		}
		if at < 150 && !strings.Contains(e.Args, "[REDACTED]") {
			t.Errorf("key at %d: the marker is gone: %q", at, e.Args)
		}
	}
	short := trace.Clean(red, protocol.TraceEntry{Args: `{"path":"a.txt"}`})
	if short.Args != `{"path":"a.txt"}` {
		t.Errorf("a short argument changed: %q", short.Args)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func entry(id, parent string, kind protocol.TraceKind, start, ms int) protocol.TraceEntry {
	return protocol.TraceEntry{ID: id, Parent: parent, Kind: kind, Name: id, Start: at(start), DurationUS: int64(ms) * 1000}
}

// Build orders by start (a parent before a child that starts with it),
// numbers the steps, gives each parent the time its children leave
// uncovered (side-by-side children counted once), and sums the phases
// against started → ended.
func TestBuild(t *testing.T) {
	in := []protocol.TraceEntry{ // in the order they are journaled: as they end
		entry("launch", "", protocol.TracePhase, 0, 10),
		entry("prepare", "", protocol.TracePhase, 10, 40),
		entry("m1", "run", protocol.TraceModel, 55, 10),
		entry("t2", "run", protocol.TraceTool, 65, 20), // side by side with t3
		entry("t3", "run", protocol.TraceTool, 70, 20),
		entry("m5", "t4", protocol.TraceModel, 90, 5), // a role's sub-loop
		entry("t4", "run", protocol.TraceTool, 90, 10),
		entry("run", "", protocol.TracePhase, 50, 100),
		entry("finish", "", protocol.TracePhase, 150, 48),
	}
	res := trace.Build("j1", protocol.StateSucceeded, in, t0, at(200), time.Time{})
	type row struct {
		Step      int
		ID        string
		GapUS     int64
		DurationU int64
	}
	var got []row
	for _, e := range res.Entries {
		got = append(got, row{e.Step, e.ID, e.GapUS, e.DurationUS})
	}
	want := []row{
		{1, "launch", 0, 10000}, {2, "prepare", 0, 40000}, {3, "run", 100000 - 45000, 100000},
		{4, "m1", 0, 10000}, {5, "t2", 0, 20000}, {6, "t3", 0, 20000}, {7, "t4", 5000, 10000}, {8, "m5", 0, 5000},
		{9, "finish", 0, 48000},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	if res.RunningUS != 200000 || res.PhaseGapUS != 2000 || res.Total != 9 || res.Next != 0 {
		t.Errorf("sums: running %d, phase gap %d, total %d, next %d", res.RunningUS, res.PhaseGapUS, res.Total, res.Next)
	}
	if !res.Started.Equal(t0) || !res.Ended.Equal(at(200)) {
		t.Errorf("started %v ended %v", res.Started, res.Ended)
	}
	// A running job's trace runs to now.
	live := trace.Build("j1", protocol.StateRunning, in[:2], t0, time.Time{}, at(80))
	if live.Ended != nil || live.RunningUS != 80000 || live.PhaseGapUS != 30000 {
		t.Errorf("live: ended %v, running %d, gap %d", live.Ended, live.RunningUS, live.PhaseGapUS)
	}
	// A queued job has no sums.
	if q := trace.Build("j1", protocol.StateQueued, nil, time.Time{}, time.Time{}, at(5)); q.Started != nil || q.RunningUS != 0 {
		t.Errorf("queued: %+v", q)
	}
}

func TestPage(t *testing.T) {
	var in []protocol.TraceEntry
	for i := range 7 {
		in = append(in, entry(string(rune('a'+i)), "", protocol.TracePhase, i*10, 10))
	}
	all := trace.Build("j1", protocol.StateSucceeded, in, t0, at(70), time.Time{})
	for _, c := range []struct {
		from, limit int
		steps       []int
		next        int
	}{
		{0, 0, []int{1, 2, 3, 4, 5, 6, 7}, 0},
		{1, 3, []int{1, 2, 3}, 4},
		{4, 3, []int{4, 5, 6}, 7},
		{7, 3, []int{7}, 0},
		{6, 2, []int{6, 7}, 0},
		{9, 3, nil, 0},
	} {
		p := trace.Page(all, c.from, c.limit)
		var steps []int
		for _, e := range p.Entries {
			steps = append(steps, e.Step)
		}
		if !cmp.Equal(steps, c.steps) || p.Next != c.next || p.Total != 7 {
			t.Errorf("from %d limit %d: steps %v next %d total %d; want %v next %d", c.from, c.limit, steps, p.Next, p.Total, c.steps, c.next)
		}
	}
}

// Decode reads trace events and skips every other kind and a broken one.
func TestDecode(t *testing.T) {
	e := entry("m1", "run", protocol.TraceModel, 0, 3)
	data, _ := json.Marshal(e)
	got := trace.Decode([]protocol.Event{
		{Kind: protocol.EventCost, Data: json.RawMessage(`{"usd":1}`)},
		{Kind: protocol.EventTrace, Data: data},
		{Kind: protocol.EventTrace, Data: json.RawMessage(`{"id":`)},
	})
	if d := cmp.Diff([]protocol.TraceEntry{e}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestTable(t *testing.T) {
	code := 1
	in := []protocol.TraceEntry{
		entry("launch", "", protocol.TracePhase, 0, 10),
		entry("run", "", protocol.TracePhase, 10, 1500),
		{ID: "m1", Parent: "run", Kind: protocol.TraceModel, Name: "gpt-x", Start: at(20), DurationUS: 1200000, TokensIn: 1000, TokensOut: 50,
			USD: 0.0125, Args: "lead: 2 messages, 13 tools", Result: "→ run_shell"},
		{ID: "t2", Parent: "run", Kind: protocol.TraceTool, Name: "run_shell", Start: at(1300), DurationUS: 850, Args: `{"command":"make test"}`,
			Result: "exit code 1 " + strings.Repeat("x", 150), Failed: true},
		{ID: "c3", Parent: "run", Kind: protocol.TraceCommand, Name: "go test ./...", Start: at(1400), DurationUS: 100000, ExitCode: &code, Failed: true},
	}
	res := trace.Build("j1", protocol.StateFailed, in, t0, at(1520), time.Time{})
	var b bytes.Buffer
	if err := trace.Table(&b, res, 60); err != nil {
		t.Fatal(err)
	}
	want := `STEP  KIND     NAME             START  TOOK              TOKENS IN/OUT  COST     SUMMARY
1     phase    launch           +0ms   10ms
2     phase    run              +10ms  1.5s (gap 199ms)
3     model      gpt-x          +20ms  1.2s              1000/50        $0.0125  lead: 2 messages, 13 tools ⇒ → run_shell
4     tool       run_shell      +1.3s  0.85ms                                    FAILED · {"command":"make test"} ⇒ exit code 1 xxxxxxxxxxxx…
5     command    go test ./...  +1.4s  100ms                                     FAILED · exit 1
running 1.5s, phases cover 1.5s (gap 10ms) · 1 model call (1000→50 tokens, $0.0125), 1 tool call, 1 command
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s\n%s", d, b.String())
	}
	b.Reset()
	if err := trace.Table(&b, trace.Page(res, 2, 2), 60); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "· steps 2–3 of 5; next page from step 4\n") {
		t.Errorf("a page's table:\n%s", b.String())
	}
}
