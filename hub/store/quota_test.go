//go:build unix

package store

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

func TestQuotaUpsert(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if got, err := s.Quotas(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an empty store has quota %+v (%v)", got, err)
	}
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	sig := func(engine, name string, pct float64, readAt time.Time) protocol.QuotaSignal {
		return protocol.QuotaSignal{Engine: engine, Name: name, UsedPct: pct, ResetsAt: t0.Add(5 * time.Hour),
			Source: "test", ReadAt: readAt, Confidence: protocol.ConfidenceHigh}
	}
	steps := []struct {
		name string
		put  []protocol.QuotaSignal
		want []protocol.QuotaSignal
	}{
		{"first readings", []protocol.QuotaSignal{sig("codex", "weekly", 12, t0), sig("claude", "seven_day", 30, t0), sig("codex", "5h", 40, t0)},
			[]protocol.QuotaSignal{sig("claude", "seven_day", 30, t0), sig("codex", "5h", 40, t0), sig("codex", "weekly", 12, t0)}},
		{"a newer reading replaces", []protocol.QuotaSignal{sig("codex", "5h", 55, t0.Add(time.Minute))},
			[]protocol.QuotaSignal{sig("claude", "seven_day", 30, t0), sig("codex", "5h", 55, t0.Add(time.Minute)), sig("codex", "weekly", 12, t0)}},
		{"an older reading does not", []protocol.QuotaSignal{sig("codex", "5h", 41, t0.Add(30*time.Second))},
			[]protocol.QuotaSignal{sig("claude", "seven_day", 30, t0), sig("codex", "5h", 55, t0.Add(time.Minute)), sig("codex", "weekly", 12, t0)}},
		{"the later of two read at once wins", []protocol.QuotaSignal{sig("claude", "seven_day", 31, t0), sig("claude", "seven_day", 32, t0)},
			[]protocol.QuotaSignal{sig("claude", "seven_day", 32, t0), sig("codex", "5h", 55, t0.Add(time.Minute)), sig("codex", "weekly", 12, t0)}},
		{"nothing", nil,
			[]protocol.QuotaSignal{sig("claude", "seven_day", 32, t0), sig("codex", "5h", 55, t0.Add(time.Minute)), sig("codex", "weekly", 12, t0)}},
	}
	for _, st := range steps {
		if err := s.PutQuota(ctx, st.put); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.Quotas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: quota (-want +got):\n%s", st.name, diff)
		}
	}

	// Every field comes back as it went in: exhausted, no reset time, times in UTC.
	full := protocol.QuotaSignal{Engine: "claude", Name: "five_hour", UsedPct: 100, Exhausted: true,
		Source: "claude rate_limit_event", ReadAt: time.Date(2026, 3, 14, 10, 0, 0, 123e6, time.FixedZone("x", 3600)), Confidence: protocol.ConfidenceMedium}
	if err := s.PutQuota(ctx, []protocol.QuotaSignal{full}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full.ReadAt = full.ReadAt.UTC()
	if diff := cmp.Diff(full, got[0]); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// A bad signal fails the whole batch: nothing of it is written.
func TestPutQuotaRefuses(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	good := protocol.QuotaSignal{Engine: "codex", Name: "5h", UsedPct: 5, ReadAt: now}
	for _, tc := range []struct {
		name string
		bad  protocol.QuotaSignal
		want string
	}{
		{"no engine", protocol.QuotaSignal{Name: "5h", ReadAt: now}, "needs an engine and a name"},
		{"no name", protocol.QuotaSignal{Engine: "codex", ReadAt: now}, "needs an engine and a name"},
		{"not a number", protocol.QuotaSignal{Engine: "codex", Name: "weekly", UsedPct: math.NaN(), ReadAt: now}, "codex/weekly"},
	} {
		err := s.PutQuota(ctx, []protocol.QuotaSignal{good, tc.bad})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if got, err := s.Quotas(ctx); err != nil || len(got) != 0 {
		t.Errorf("a refused batch wrote %+v (%v)", got, err)
	}
}
