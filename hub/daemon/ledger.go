package daemon

import (
	"context"
	"errors"

	"github.com/hub-agents/hub/hub/money"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// LedgerList lists a month's reservations (or one job's) with the month's totals.
func (s *Server) LedgerList(ctx context.Context, p protocol.LedgerParams) (*protocol.LedgerResult, error) {
	set, err := s.settings()
	if err != nil {
		return nil, err
	}
	f := store.LedgerFilter{OnlyOpen: p.Open, JobID: p.Job}
	month := s.now().Format("2006-01")
	switch {
	case p.Job != "":
		if _, err := s.st.Job(ctx, p.Job); err != nil {
			return nil, notFound(p.Job, err)
		}
		row, err := s.st.Ledger(ctx, p.Job)
		if errors.Is(err, store.ErrNotFound) {
			return nil, wrongState("a job gets its reservation when it is admitted; `hub status "+p.Job+"` says where it is",
				"job %s has no reservation: it was never admitted", p.Job)
		}
		if err != nil {
			return nil, internal(err)
		}
		month = row.Month
	case p.Month != "":
		if month, err = money.ParseMonth(p.Month); err != nil {
			return nil, invalid("month", "give the month as YYYY-MM, such as 2026-12", "%v", err)
		}
		f.Month = month
	default:
		f.Month = month
	}
	entries, err := s.st.LedgerEntries(ctx, f)
	if err != nil {
		return nil, internal(err)
	}
	tot, err := s.st.MonthTotals(ctx, month)
	if err != nil {
		return nil, internal(err)
	}
	res := money.Ledger(month, entries, tot, micros.FromUSD(set.MonthlyCapUSD))
	return &res, nil
}
