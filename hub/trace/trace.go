// Package trace owns a job's trace: the entries hub's phases and the
// engines' steps leave in the journal (events of kind trace), made safe to
// store (redacted, then bounded), and read back as one ordered list with its
// sums, a page of it, or a table.
//
// How the sum is taken: the phases (launch, prepare, run, commit, verify,
// finish) follow one another from the moment hub took the job from its
// queue (started) to its end, so their durations add up to the running
// time less the moments between phases (phase_gap_us). Under the run phase
// is the worker's own entry (the engine from its start to its end: its gap
// in the run is hub's own work around it, such as the sweep for processes
// it left); under that, the steps the engine reported (a role's steps under
// the role's tool call). An entry's children cover it less its gap_us: for
// the worker, its own time between steps (starting up, building messages,
// reading the mailbox). Steps that ran side by side overlap, so children
// are summed as the union of their spans, never counted twice.
//
// It never stores or returns a summary it did not redact first, and never
// cuts before it redacts (a key cut in half would pass the redactor).
package trace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/internal/text"
)

// Clean makes an entry safe to store or show: its name and summaries
// redacted with red, then folded to one line and bounded
// (protocol.TraceSummaryMax characters each; the name 120).
func Clean(red *redact.Redactor, e protocol.TraceEntry) protocol.TraceEntry {
	e.Name = Short(red.String(e.Name), 120)
	e.Args = Short(red.String(e.Args), protocol.TraceSummaryMax)
	e.Result = Short(red.String(e.Result), protocol.TraceSummaryMax)
	return e
}

// Short folds s to one line of at most n characters, … marking a cut (text.OneLine).
func Short(s string, n int) string { return text.OneLine(s, n) }

// Line is an entry in one line, the text of its journal event.
func Line(e protocol.TraceEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", e.Kind, e.Name, Duration(e.DurationUS))
	if e.TokensIn+e.TokensOut > 0 {
		fmt.Fprintf(&b, " %d→%d tokens", e.TokensIn, e.TokensOut)
	}
	if e.Failed {
		b.WriteString(" failed")
	}
	return b.String()
}

// Duration shows microseconds the way a table does: 0.85ms, 12ms, 1.4s, 2m05s.
func Duration(us int64) string {
	d := time.Duration(us) * time.Microsecond
	switch {
	case us == 0:
		return "0ms"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(us)/1000)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// Decode reads the entries of a job's trace events; an event of another
// kind, or one it cannot read, is skipped.
func Decode(events []protocol.Event) []protocol.TraceEntry {
	var out []protocol.TraceEntry
	for _, ev := range events {
		if ev.Kind != protocol.EventTrace {
			continue
		}
		var e protocol.TraceEntry
		if json.Unmarshal(ev.Data, &e) == nil && e.ID != "" {
			out = append(out, e)
		}
	}
	return out
}

// Build orders entries into a job's trace: by start (a parent before its
// children at the same instant), numbered from 1, each parent's gap
// computed, and the phases summed against started → end (end is when the
// job ended, or now while it runs; a zero started gives no sums).
func Build(id string, state protocol.State, entries []protocol.TraceEntry, started, ended, now time.Time) protocol.TraceResult {
	es := slices.Clone(entries)
	depth := depths(es)
	slices.SortStableFunc(es, func(a, b protocol.TraceEntry) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(depth[a.ID], depth[b.ID])
	})
	children := map[string][]protocol.TraceEntry{}
	var top []protocol.TraceEntry
	for _, e := range es {
		if e.Parent == "" {
			top = append(top, e)
		} else {
			children[e.Parent] = append(children[e.Parent], e)
		}
	}
	for i := range es {
		es[i].Step = i + 1
		if kids := children[es[i].ID]; len(kids) > 0 {
			es[i].GapUS = max(es[i].DurationUS-covered(kids), 0)
		}
	}
	res := protocol.TraceResult{ID: id, State: state, Entries: es, Total: len(es)}
	if started.IsZero() {
		return res
	}
	end := now
	if !ended.IsZero() {
		end = ended
		e := ended.UTC()
		res.Ended = &e
	}
	s := started.UTC()
	res.Started = &s
	res.RunningUS = end.Sub(started).Microseconds()
	// started and ended are kept to the millisecond, the phases to the
	// microsecond: a gap under zero is that rounding, not time.
	res.PhaseGapUS = max(res.RunningUS-covered(top), 0)
	return res
}

// depths is how deep each entry nests (0: a phase).
func depths(es []protocol.TraceEntry) map[string]int {
	parent := map[string]string{}
	for _, e := range es {
		parent[e.ID] = e.Parent
	}
	d := map[string]int{}
	for _, e := range es {
		n, p := 0, e.Parent
		for p != "" && n < len(es) {
			n++
			p = parent[p]
		}
		d[e.ID] = n
	}
	return d
}

// covered is how much time the entries' spans cover, overlaps counted once.
func covered(es []protocol.TraceEntry) int64 {
	type span struct{ from, to time.Time }
	var ss []span
	for _, e := range es {
		ss = append(ss, span{e.Start, e.Start.Add(time.Duration(e.DurationUS) * time.Microsecond)})
	}
	slices.SortFunc(ss, func(a, b span) int { return a.from.Compare(b.from) })
	var total time.Duration
	var cur span
	for i, s := range ss {
		switch {
		case i == 0:
			cur = s
		case s.from.After(cur.to):
			total += cur.to.Sub(cur.from)
			cur = s
		case s.to.After(cur.to):
			cur.to = s.to
		}
	}
	if len(ss) > 0 {
		total += cur.to.Sub(cur.from)
	}
	return total.Microseconds()
}

// Page keeps the entries from step from (1 when 0), at most limit of them
// (0: all), and says where the next page starts.
func Page(res protocol.TraceResult, from, limit int) protocol.TraceResult {
	from = max(from, 1)
	all := res.Entries
	lo := min(from-1, len(all))
	hi := len(all)
	if limit > 0 && lo+limit < hi {
		hi = lo + limit
		res.Next = hi + 1
	}
	res.Entries = all[lo:hi]
	return res
}
