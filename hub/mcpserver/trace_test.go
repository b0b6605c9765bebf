package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/trace"
)

// result with trace pages a long trace: a compact table of tracePage steps
// from the step asked, and the trace= that reads on; the last page says
// no more. The daemon's side is played by the trace package's own paging.
func TestResultTracePages(t *testing.T) {
	isolate(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var entries []protocol.TraceEntry
	entries = append(entries, protocol.TraceEntry{ID: "run", Kind: protocol.TracePhase, Name: "run", Start: t0, DurationUS: 95_000_000})
	for i := 1; i < 95; i++ {
		entries = append(entries, protocol.TraceEntry{ID: fmt.Sprintf("t%d", i), Parent: "run", Kind: protocol.TraceTool, Name: "read_file",
			Start: t0.Add(time.Duration(i) * time.Second), DurationUS: 500_000,
			Args: fmt.Sprintf(`{"path":"f%d.go"}`, i), Result: strings.Repeat("line ", 100)})
	}
	full := trace.Build("abc12345", protocol.StateSucceeded, entries, t0, t0.Add(95*time.Second), time.Time{})
	d := &fakeDaemon{handle: func(_ context.Context, method string, params any) (any, error) {
		p := params.(protocol.TraceParams)
		return trace.Page(full, p.From, p.Limit), nil
	}}
	cs := connect(t, New(d, Options{}), versions[1], nil)
	page := func(from int) string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result", Arguments: map[string]any{"id": "abc12345", "trace": from}})
		if err != nil || res.IsError {
			t.Fatalf("trace=%d: %v %s", from, err, contentText(res))
		}
		if res.StructuredContent != nil {
			t.Errorf("trace=%d carries structured content too", from)
		}
		return contentText(res)
	}
	for _, c := range []struct {
		from, first, last int
		more              string
	}{
		{1, 1, 40, "more: trace=41"},
		{41, 41, 80, "more: trace=81"},
		{81, 81, 95, ""},
	} {
		text := page(c.from)
		lines := strings.Split(text, "\n")
		rows := lines[1:] // the header first
		for len(rows) > 0 && !startsWithStep(rows[len(rows)-1]) {
			rows = rows[:len(rows)-1]
		}
		if len(rows) != c.last-c.first+1 || !strings.HasPrefix(rows[0], fmt.Sprint(c.first)+" ") ||
			!strings.HasPrefix(rows[len(rows)-1], fmt.Sprint(c.last)+" ") {
			t.Errorf("trace=%d: rows %q … %q (%d)", c.from, rows[0], rows[len(rows)-1], len(rows))
		}
		last := lines[len(lines)-1]
		if c.more != "" && last != c.more || c.more == "" && strings.Contains(text, "more:") {
			t.Errorf("trace=%d ends %q, want %q", c.from, last, c.more)
		}
		for _, r := range rows {
			if n := len([]rune(r)); n > 160 {
				t.Errorf("trace=%d: a row of %d characters: %q", c.from, n, r)
			}
		}
		if len(text) > 6000 {
			t.Errorf("trace=%d: %d bytes for one page", c.from, len(text))
		}
	}
	var asked []protocol.TraceParams
	for _, c := range d.Calls() {
		asked = append(asked, c.Params.(protocol.TraceParams))
	}
	want := []protocol.TraceParams{{ID: "abc12345", From: 1, Limit: tracePage}, {ID: "abc12345", From: 41, Limit: tracePage}, {ID: "abc12345", From: 81, Limit: tracePage}}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("the daemon was asked %v, want %v", asked, want)
	}

	// Bad combinations say what to pass instead.
	for args, want := range map[string]map[string]any{
		"the step to start from": {"id": "abc12345", "trace": -1},
		"id and trace alone":     {"id": "abc12345", "trace": 1, "full": true},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result", Arguments: want})
		if err != nil || !res.IsError || !strings.Contains(contentText(res), args) {
			t.Errorf("%v: %v %s", want, err, contentText(res))
		}
	}
}

func startsWithStep(l string) bool { return l != "" && l[0] >= '0' && l[0] <= '9' }
