package money

import (
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// Ledger builds the ledger view of month: the reservations kept, and the
// month's totals against capMicros.
func Ledger(month string, entries []store.LedgerEntry, tot store.MonthTotals, capMicros int64) protocol.LedgerResult {
	res := protocol.LedgerResult{
		Month:         month,
		Entries:       make([]protocol.LedgerEntry, 0, len(entries)),
		SpentUSD:      config.USD(tot.ChargedMicros),
		ReservedUSD:   config.USD(tot.ReservedMicros),
		MonthlyCapUSD: config.USD(capMicros),
		LeftUSD:       config.USD(max(0, capMicros-tot.ChargedMicros-tot.ReservedMicros)),
	}
	for _, e := range entries {
		res.Entries = append(res.Entries, protocol.LedgerEntry{
			ID: e.JobID, OldJobID: e.JobID, Engine: e.Engine, Kind: e.Kind, State: e.State, Month: e.Month,
			ReservedUSD: config.USD(e.ReservedMicros), ChargedUSD: config.USD(e.ChargedMicros),
			OverrunUSD: config.USD(e.OverrunMicros), Open: !e.Closed, OpenedAt: e.OpenedAt, ClosedAt: e.ClosedAt,
			CostKnown: e.CostKnown,
		})
	}
	return res
}
