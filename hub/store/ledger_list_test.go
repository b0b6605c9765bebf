//go:build unix

package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

func TestLedgerEntries(t *testing.T) {
	ctx := context.Background()
	h := history{t: t, s: openTest(t), t0: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}

	// November: one closed reservation.
	h.create("nov", "claude", protocol.KindWrite, "", 100_000, -48*time.Hour)
	h.admit("nov", -48*time.Hour)
	h.finish("nov", Ending{State: protocol.StateSucceeded, CostKnown: true, CostMicros: 30_000}, -47*time.Hour)
	// December: one charged in full (cost unknown), with an overrun on record,
	h.create("full", "codex", protocol.KindWrite, "", 200_000, 0)
	h.admit("full", time.Minute)
	sqlExec(t, h.s, `UPDATE ledger SET overrun_micros = 5000 WHERE job_id = 'full'`)
	h.finish("full", Ending{State: protocol.StateFailed}, 2*time.Minute)
	// one still open,
	h.create("open", "exec", protocol.KindRead, "", 2_000_000, 0)
	h.admit("open", 3*time.Minute)
	// and a queued job, which has no reservation.
	h.create("queued", "exec", protocol.KindWrite, "", 1_000_000, 0)

	nov := LedgerEntry{JobID: "nov", Engine: "claude", Kind: "write", State: protocol.StateSucceeded, Month: "2026-11",
		ReservedMicros: 100_000, ChargedMicros: 30_000, OpenedAt: h.at(-48 * time.Hour),
		Closed: true, ClosedAt: h.at(-47 * time.Hour), CostKnown: true}
	full := LedgerEntry{JobID: "full", Engine: "codex", Kind: "write", State: protocol.StateFailed, Month: "2026-12",
		ReservedMicros: 200_000, ChargedMicros: 200_000, OverrunMicros: 5000, OpenedAt: h.at(time.Minute),
		Closed: true, ClosedAt: h.at(2 * time.Minute)}
	open := LedgerEntry{JobID: "open", Engine: "exec", Kind: "read", State: protocol.StatePreparing, Month: "2026-12",
		ReservedMicros: 2_000_000, OpenedAt: h.at(3 * time.Minute)}

	for _, tc := range []struct {
		name   string
		filter LedgerFilter
		want   []LedgerEntry
	}{
		{"everything, oldest first", LedgerFilter{}, []LedgerEntry{nov, full, open}},
		{"one month", LedgerFilter{Month: "2026-12"}, []LedgerEntry{full, open}},
		{"a month without reservations", LedgerFilter{Month: "2027-01"}, nil},
		{"open only", LedgerFilter{OnlyOpen: true}, []LedgerEntry{open}},
		{"open of a month", LedgerFilter{Month: "2026-11", OnlyOpen: true}, nil},
		{"one job", LedgerFilter{JobID: "nov"}, []LedgerEntry{nov}},
		{"one job in another month", LedgerFilter{JobID: "nov", Month: "2026-12"}, nil},
		{"a job never admitted", LedgerFilter{JobID: "queued"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.s.LedgerEntries(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LedgerEntries(%+v) (-want +got):\n%s", tc.filter, diff)
			}
		})
	}
}
