package money

import (
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// Ledger builds the ledger view of month: the reservations kept, and the
// month's totals against capMicros.
func Ledger(month string, entries []store.LedgerEntry, tot store.MonthTotals, capMicros micros.Micros) protocol.LedgerResult {
	res := protocol.LedgerResult{
		Month:         month,
		Entries:       make([]protocol.LedgerEntry, 0, len(entries)),
		SpentUSD:      tot.ChargedMicros.USD(),
		ReservedUSD:   tot.ReservedMicros.USD(),
		MonthlyCapUSD: capMicros.USD(),
		LeftUSD:       (max(0, capMicros-tot.ChargedMicros-tot.ReservedMicros)).USD(),
	}
	for _, e := range entries {
		res.Entries = append(res.Entries, protocol.LedgerEntry{
			ID: e.JobID, OldJobID: e.JobID, Engine: e.Engine, Kind: e.Kind, State: e.State, Month: e.Month,
			ReservedUSD: e.ReservedMicros.USD(), ChargedUSD: e.ChargedMicros.USD(),
			OverrunUSD: e.OverrunMicros.USD(), Open: !e.Closed, OpenedAt: e.OpenedAt, ClosedAt: e.ClosedAt,
			CostKnown: e.CostKnown,
		})
	}
	return res
}
