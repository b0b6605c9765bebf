package money

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

// Width is the terminal width the text views fit in.
const Width = 80

// LedgerText renders the ledger for a person: a line per reservation,
// then the month's totals.
func LedgerText(res protocol.LedgerResult) string {
	var b strings.Builder
	if len(res.Entries) == 0 {
		fmt.Fprintf(&b, "no reservations to show for %s\n", res.Month)
	} else {
		t := table{right: []bool{false, false, false, true, true}}
		t.add("job", "engine", "state", "reserved", "charged", "cost", "reservation (UTC)")
		for _, e := range res.Entries {
			charged, cost, when := "—", "—", "open   "+stamp(e.OpenedAt)
			if !e.Open {
				charged, cost, when = dollars(e.ChargedUSD), "known", "closed "+stamp(e.ClosedAt)
				if !e.CostKnown {
					cost = "in full"
				}
			}
			t.add(e.ID, e.Engine, string(e.State), dollars(e.ReservedUSD), charged, cost, when)
		}
		t.write(&b, "  ")
		for _, e := range res.Entries {
			if e.OverrunUSD > 0 {
				fmt.Fprintf(&b, "%s overran its reservation by %s\n", e.ID, dollars(e.OverrunUSD))
			}
		}
	}
	fmt.Fprintf(&b, "%s: %s spent · %s still reserved · cap %s · %s left\n", res.Month,
		dollars(res.SpentUSD), dollars(res.ReservedUSD), dollars(res.MonthlyCapUSD), dollars(res.LeftUSD))
	return b.String()
}

// ROIText renders the return on spend for a person: a line per engine and
// kind, then a bar chart of verified successes per dollar per engine.
func ROIText(res protocol.ROIResult) string {
	var b strings.Builder
	since := res.Since.UTC().Format("2006-01-02 15:04")
	if len(res.Rows) == 0 {
		fmt.Fprintf(&b, "no job ended since %s UTC\n", since)
		return b.String()
	}
	fmt.Fprintf(&b, "jobs that ended since %s UTC\n", since)
	t := table{right: []bool{false, false, true, true, true, true, true, true, true, true}}
	t.add("engine", "kind", "jobs", "verified", "unverified", "failed", "spend", "verified/$", "median", "p90")
	for _, r := range res.Rows {
		t.add(r.Engine, string(r.Kind), fmt.Sprint(r.Jobs), fmt.Sprint(r.Verified), fmt.Sprint(r.Unverified), fmt.Sprint(r.Failed),
			dollars(r.SpentUSD), perDollar(r), elapsed(r.MedianMS), elapsed(r.P90MS))
	}
	t.write(&b, " ")
	b.WriteString("\nverified successes per dollar\n")
	b.WriteString(Chart(res.Engines, Width))
	return b.String()
}

// Chart draws verified successes per dollar, one bar per engine, best
// first, in at most width columns (bars of at most 50). An engine that spent nothing cannot be
// scaled against the others: it shows "free" and its count instead of a bar.
func Chart(engines []protocol.ROIRow, width int) string {
	rows := slices.Clone(engines)
	slices.SortStableFunc(rows, func(a, b protocol.ROIRow) int {
		if a.Free != b.Free {
			if a.Free {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.VerifiedPerUSD, a.VerifiedPerUSD), cmp.Compare(a.Engine, b.Engine))
	})
	nameW, valW := 0, 0
	var top float64
	for _, r := range rows {
		nameW = max(nameW, utf8.RuneCountInString(r.Engine))
		if !r.Free {
			valW = max(valW, len(perDollar(r)))
			top = max(top, r.VerifiedPerUSD)
		}
	}
	barW := min(max(width-nameW-valW-2, 1), maxBar)
	var b strings.Builder
	for _, r := range rows {
		name := pad(r.Engine, nameW, false)
		if r.Free {
			fmt.Fprintf(&b, "%s free: %d verified of %d, nothing spent\n", name, r.Verified, r.Jobs)
			continue
		}
		bar := ""
		if top > 0 {
			bar = blocks(r.VerifiedPerUSD / top * float64(barW))
		}
		fmt.Fprintf(&b, "%s %s %s\n", name, pad(bar, barW, false), pad(perDollar(r), valW, true))
	}
	return b.String()
}

// maxBar is the longest bar, in cells.
const maxBar = 50

// eighths are the partial blocks, by eighths of a cell.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// blocks draws a bar n cells long, to an eighth of a cell; any n above 0
// shows at least a sliver.
func blocks(n float64) string {
	units := int(n*8 + 0.5)
	if units == 0 && n > 0 {
		units = 1
	}
	return strings.Repeat("█", units/8) + eighths[units%8]
}

func perDollar(r protocol.ROIRow) string {
	v := r.VerifiedPerUSD
	switch {
	case r.Free:
		return "free"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func dollars(usd float64) string { return fmt.Sprintf("$%.2f", usd) }

func elapsed(n int64) string {
	if n == 0 {
		return "—"
	}
	return view.Duration(time.Duration(n) * time.Millisecond)
}

func stamp(t time.Time) string { return t.UTC().Format("01-02 15:04") }

// table lines up cells in columns, left or right aligned.
type table struct {
	right []bool // per column
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder, gap string) {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range t.rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = pad(c, widths[i], i < len(t.right) && t.right[i])
		}
		b.WriteString(strings.TrimRight(strings.Join(cells, gap), " "))
		b.WriteByte('\n')
	}
}

// pad fills s with spaces to n runes, on the left when right-aligned.
func pad(s string, n int, right bool) string {
	fill := strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
	if right {
		return fill + s
	}
	return s + fill
}
