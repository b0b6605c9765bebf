package money

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

func TestROI(t *testing.T) {
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(DefaultWindow)
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	ok := func(engine string, kind protocol.Kind, verified bool, cost micros.Micros, d time.Duration) store.Run {
		return store.Run{Engine: engine, Kind: kind, State: protocol.StateSucceeded, Verified: verified, HadVerify: verified,
			CostMicros: cost, CostKnown: true, Duration: d}
	}
	ended := func(engine string, st protocol.State, cost micros.Micros, d time.Duration) store.Run {
		return store.Run{Engine: engine, Kind: protocol.KindWrite, State: st, CostMicros: cost, Duration: d}
	}
	for _, tc := range []struct {
		name          string
		runs          []store.Run
		rows, engines []protocol.ROIRow
	}{
		{name: "no runs", rows: []protocol.ROIRow{}, engines: []protocol.ROIRow{}},
		{
			name: "free engine",
			runs: []store.Run{ok("exec", "write", true, 0, sec(2)), ok("exec", "write", false, 0, sec(4))},
			rows: []protocol.ROIRow{{Engine: "exec", Kind: "write", Jobs: 2, Verified: 1, Unverified: 1, Free: true,
				MedianMS: 2000, P90MS: 4000}},
			engines: []protocol.ROIRow{{Engine: "exec", Jobs: 2, Verified: 1, Unverified: 1, Free: true,
				MedianMS: 2000, P90MS: 4000}},
		},
		{
			name: "paid engine: every ending counts, only verified successes pay back",
			runs: []store.Run{
				ok("claude", "write", true, 500_000, sec(60)),
				ok("claude", "write", true, 250_000, sec(30)),
				ended("claude", protocol.StateFailed, 150_000, sec(90)),
				ended("claude", protocol.StateTimedOut, 100_000, sec(1800)),
				ended("claude", protocol.StateCancelled, 0, 0), // cancelled while queued: no time
			},
			rows: []protocol.ROIRow{{Engine: "claude", Kind: "write", Jobs: 5, Verified: 2, Failed: 3, SpentUSD: 1,
				VerifiedPerUSD: 2, MedianMS: 60_000, P90MS: 1_800_000}},
			engines: []protocol.ROIRow{{Engine: "claude", Jobs: 5, Verified: 2, Failed: 3, SpentUSD: 1,
				VerifiedPerUSD: 2, MedianMS: 60_000, P90MS: 1_800_000}},
		},
		{
			name: "spent without a verified success",
			runs: []store.Run{ok("codex", "read", false, 300_000, sec(10))},
			rows: []protocol.ROIRow{{Engine: "codex", Kind: "read", Jobs: 1, Unverified: 1, SpentUSD: 0.3,
				MedianMS: 10_000, P90MS: 10_000}},
			engines: []protocol.ROIRow{{Engine: "codex", Jobs: 1, Unverified: 1, SpentUSD: 0.3,
				MedianMS: 10_000, P90MS: 10_000}},
		},
		{
			name: "verify passed but the job failed later: a failure",
			runs: []store.Run{{Engine: "codex", Kind: "write", State: protocol.StateFailed, Verified: true, HadVerify: true,
				CostMicros: 100_000, Duration: sec(5)}},
			rows: []protocol.ROIRow{{Engine: "codex", Kind: "write", Jobs: 1, Failed: 1, SpentUSD: 0.1,
				MedianMS: 5000, P90MS: 5000}},
			engines: []protocol.ROIRow{{Engine: "codex", Jobs: 1, Failed: 1, SpentUSD: 0.1,
				MedianMS: 5000, P90MS: 5000}},
		},
		{
			name: "engines and kinds sorted, engines over every kind",
			runs: []store.Run{
				ok("exec", "write", true, 0, sec(1)),
				ok("codex", "write", true, 200_000, sec(20)),
				ok("codex", "read", false, 50_000, sec(3)),
				ok("codex", "write", true, 250_000, sec(40)),
			},
			rows: []protocol.ROIRow{
				{Engine: "codex", Kind: "read", Jobs: 1, Unverified: 1, SpentUSD: 0.05, MedianMS: 3000, P90MS: 3000},
				{Engine: "codex", Kind: "write", Jobs: 2, Verified: 2, SpentUSD: 0.45, VerifiedPerUSD: 2 / 0.45,
					MedianMS: 20_000, P90MS: 40_000},
				{Engine: "exec", Kind: "write", Jobs: 1, Verified: 1, Free: true, MedianMS: 1000, P90MS: 1000},
			},
			engines: []protocol.ROIRow{
				{Engine: "codex", Jobs: 3, Verified: 2, Unverified: 1, SpentUSD: 0.5, VerifiedPerUSD: 4,
					MedianMS: 20_000, P90MS: 40_000},
				{Engine: "exec", Jobs: 1, Verified: 1, Free: true, MedianMS: 1000, P90MS: 1000},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ROI(tc.runs, since, until)
			want := protocol.ROIResult{Since: since, Until: until, Rows: tc.rows, Engines: tc.engines}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ROI (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ds := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n)
		}
		return out
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{nil, 50, 0},
		{ds(7), 50, 7},
		{ds(7), 90, 7},
		{ds(1, 2), 50, 1},
		{ds(1, 2, 3), 50, 2},
		{ds(1, 2, 3, 4), 50, 2},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 90, 10},
		{ds(1, 2, 3), 100, 3},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}
