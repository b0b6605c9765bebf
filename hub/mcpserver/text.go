package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// jobLine is "abc12345 succeeded · exec · 12s · $0.00 · verified", with what
// the supervisor must act on appended: a question, an error, the progress.
func jobLine(st *protocol.JobStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s · %s · %s · %s", st.ID, st.State, st.Engine,
		duration(time.Duration(st.ElapsedMS)*time.Millisecond), cost(st.CostUSD, st.CostKnown))
	if st.VerifyExit != nil {
		if *st.VerifyExit == 0 {
			b.WriteString(" · verified")
		} else {
			fmt.Fprintf(&b, " · verify failed (exit %d)", *st.VerifyExit)
		}
	}
	if st.Salvaged {
		b.WriteString(" · salvaged")
	}
	switch {
	case st.State == protocol.StateNeedsInput && st.Question != nil:
		fmt.Fprintf(&b, " · asks: %s", oneLine(st.Question.Text, 200))
	case st.Error != "":
		fmt.Fprintf(&b, " · %s", oneLine(st.Error, 200))
	case !st.State.Terminal() && st.Progress != "":
		fmt.Fprintf(&b, " · %s", oneLine(st.Progress, 120))
	}
	return b.String()
}

func cost(usd float64, known bool) string {
	if !known {
		return "$?"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// duration is 850ms → "0s", 12.4s → "12s", 6m3s → "6m3s", 2h5m → "2h5m".
func duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		d = d.Truncate(time.Second)
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		d = d.Truncate(time.Minute)
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// oneLine folds s onto one line of at most max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// firstLines keeps at most n lines of s.
func firstLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n")
}
