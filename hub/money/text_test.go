package money

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

var t0 = time.Date(2026, 12, 3, 14, 5, 0, 0, time.UTC)

func TestLedgerText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  protocol.LedgerResult
		want string
	}{
		{
			name: "open, closed with its cost, charged in full with an overrun",
			res: protocol.LedgerResult{Month: "2026-12", Entries: []protocol.LedgerEntry{
				{ID: "ab12cd34", Engine: "claude", State: "succeeded", ReservedUSD: 2, ChargedUSD: 0.42,
					OpenedAt: t0, ClosedAt: t0.Add(time.Minute), CostKnown: true},
				{ID: "ef56gh78", Engine: "codex", State: "failed", ReservedUSD: 2, ChargedUSD: 2, OverrunUSD: 0.5,
					OpenedAt: t0, ClosedAt: t0.Add(time.Hour)},
				{ID: "jk90mn12", Engine: "opencode", State: "needs_input", ReservedUSD: 20, Open: true,
					OpenedAt: t0.Add(2 * time.Hour)},
			}, SpentUSD: 2.42, ReservedUSD: 20, MonthlyCapUSD: 100, LeftUSD: 77.58},
			want: `
job       engine    state        reserved  charged  cost     reservation (UTC)
ab12cd34  claude    succeeded       $2.00    $0.42  known    closed 12-03 14:06
ef56gh78  codex     failed          $2.00    $2.00  in full  closed 12-03 15:05
jk90mn12  opencode  needs_input    $20.00        —  —        open   12-03 16:05
ef56gh78 overran its reservation by $0.50
2026-12: $2.42 spent · $20.00 still reserved · cap $100.00 · $77.58 left
`,
		},
		{
			name: "nothing kept",
			res:  protocol.LedgerResult{Month: "2027-01", MonthlyCapUSD: 100, LeftUSD: 100},
			want: `
no reservations to show for 2027-01
2027-01: $0.00 spent · $0.00 still reserved · cap $100.00 · $100.00 left
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LedgerText(tc.res)
			if diff := cmp.Diff(strings.TrimPrefix(tc.want, "\n"), got); diff != "" {
				t.Errorf("LedgerText (-want +got):\n%s", diff)
			}
			fits(t, got)
		})
	}
}

func TestROIText(t *testing.T) {
	res := protocol.ROIResult{Since: t0, Until: t0.Add(DefaultWindow),
		Rows: []protocol.ROIRow{
			{Engine: "claude", Kind: "write", Jobs: 12, Verified: 9, Unverified: 1, Failed: 2, SpentUSD: 7.31,
				VerifiedPerUSD: 9 / 7.31, MedianMS: 250_000, P90MS: 912_000},
			{Engine: "codex", Kind: "read", Jobs: 3, Unverified: 3, SpentUSD: 0.12, MedianMS: 40_000, P90MS: 61_000},
			{Engine: "codex", Kind: "write", Jobs: 8, Verified: 5, Failed: 3, SpentUSD: 1.2, VerifiedPerUSD: 5 / 1.2,
				MedianMS: 180_000, P90MS: 400_000},
			{Engine: "exec", Kind: "write", Jobs: 4, Verified: 3, Failed: 1, Free: true, MedianMS: 850, P90MS: 1200},
			{Engine: "opencode", Kind: "write", Jobs: 2, Failed: 2, SpentUSD: 1234.5, MedianMS: 7_260_000, P90MS: 7_300_000},
		},
		Engines: []protocol.ROIRow{
			{Engine: "claude", Jobs: 12, Verified: 9, SpentUSD: 7.31, VerifiedPerUSD: 9 / 7.31},
			{Engine: "codex", Jobs: 11, Verified: 5, SpentUSD: 1.32, VerifiedPerUSD: 5 / 1.32},
			{Engine: "exec", Jobs: 4, Verified: 3, Free: true},
			{Engine: "opencode", Jobs: 2, SpentUSD: 1234.5},
		},
	}
	want := `
jobs that ended since 2026-12-03 14:05 UTC
engine   kind  jobs verified unverified failed    spend verified/$ median    p90
claude   write   12        9          1      2    $7.31       1.23  4m10s 15m12s
codex    read     3        0          3      0    $0.12       0.00    40s  1m01s
codex    write    8        5          0      3    $1.20       4.17  3m00s  6m40s
exec     write    4        3          0      1    $0.00       free  850ms     1s
opencode write    2        0          0      2 $1234.50       0.00  2h01m  2h01m

verified successes per dollar
codex    ██████████████████████████████████████████████████ 3.79
claude   ████████████████▎                                  1.23
opencode                                                    0.00
exec     free: 3 verified of 4, nothing spent
`
	got := ROIText(res)
	if diff := cmp.Diff(strings.TrimPrefix(want, "\n"), got); diff != "" {
		t.Errorf("ROIText (-want +got):\n%s", diff)
	}
	fits(t, got)

	empty := ROIText(protocol.ROIResult{Since: t0, Until: t0.Add(time.Hour), Rows: []protocol.ROIRow{}})
	if want := "no job ended since 2026-12-03 14:05 UTC\n"; empty != want {
		t.Errorf("ROIText(no rows) = %q, want %q", empty, want)
	}
}

func TestChart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		engines []protocol.ROIRow
		width   int
		want    string
	}{
		{
			name: "only free engines: no scale, no infinity, by name",
			engines: []protocol.ROIRow{
				{Engine: "exec", Jobs: 2, Verified: 2, Free: true},
				{Engine: "builtin", Jobs: 1, Free: true},
			},
			width: 80,
			want:  "builtin free: 0 verified of 1, nothing spent\nexec    free: 2 verified of 2, nothing spent\n",
		},
		{
			name: "narrow: bars shrink to fit, eighths show the rest",
			engines: []protocol.ROIRow{
				{Engine: "a", Verified: 1, SpentUSD: 1, VerifiedPerUSD: 1},
				{Engine: "b", Verified: 4, SpentUSD: 1, VerifiedPerUSD: 4},
				{Engine: "c", Verified: 1, SpentUSD: 1000, VerifiedPerUSD: 0.001},
			},
			width: 12,
			want:  "b █████ 4.00\na █▎    1.00\nc ▏     0.00\n",
		},
		{
			name:    "spent, nothing verified",
			engines: []protocol.ROIRow{{Engine: "codex", Jobs: 3, Failed: 3, SpentUSD: 2}},
			width:   80,
			want:    "codex " + strings.Repeat(" ", maxBar) + " 0.00\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Chart(tc.engines, tc.width)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Chart (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlocks(t *testing.T) {
	for _, tc := range []struct {
		n    float64
		want string
	}{
		{0, ""},
		{0.01, "▏"},
		{0.5, "▌"},
		{1, "█"},
		{2.375, "██▍"},
		{2.99, "███"},
	} {
		if got := blocks(tc.n); got != tc.want {
			t.Errorf("blocks(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// fits fails when a line of s is wider than the terminal.
func fits(t *testing.T, s string) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(line); n > Width {
			t.Errorf("line of %d columns, over %d: %q", n, Width, line)
		}
	}
}
