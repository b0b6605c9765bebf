package protocol

import "time"

// LedgerParams picks reservations for ledger/list: one month's (default the
// current month, UTC), only the open ones, or one job's whatever its month.
type LedgerParams struct {
	// Month is "2026-12" (UTC); empty means this month. Ignored with Job.
	Month string `json:"month,omitempty"`
	// Open keeps only reservations not yet closed.
	Open bool `json:"open,omitempty"`
	// Job keeps only this job's reservation; the totals are of its month.
	Job string `json:"job,omitempty"`
}

// LedgerEntry is one job's reservation: booked when the job was admitted,
// closed once when it ended with what it cost.
type LedgerEntry struct {
	ID string `json:"id"` // the job's id
	// OldJobID is id under its name before 0.2, still sent for this release; read id.
	OldJobID string `json:"job_id,omitempty"`
	Engine   string `json:"engine"`
	Kind     Kind   `json:"kind"`
	State    State  `json:"state"`
	Month    string `json:"month"`
	// ReservedUSD is the reservation: what the job asked for, plus OverrunUSD.
	ReservedUSD float64 `json:"reserved_usd"`
	// ChargedUSD is what the closed reservation was charged (0 while open).
	ChargedUSD float64 `json:"charged_usd"`
	// OverrunUSD is what the job cost beyond what it asked for; the
	// reservation grew by it when it closed.
	OverrunUSD float64   `json:"overrun_usd,omitempty"`
	Open       bool      `json:"open"`
	OpenedAt   time.Time `json:"opened_at"`
	ClosedAt   time.Time `json:"closed_at,omitzero"`
	// CostKnown: the engine reported the real cost; false on a closed
	// reservation means the whole reservation was charged.
	CostKnown bool `json:"cost_known"`
}

// LedgerResult lists reservations oldest first, with the month's totals.
// The totals are the whole month's, whatever the filter kept.
type LedgerResult struct {
	Month   string        `json:"month"`
	Entries []LedgerEntry `json:"entries"`
	// SpentUSD is charged by closed reservations; ReservedUSD is still held
	// by open ones; LeftUSD is what the cap leaves for new reservations.
	SpentUSD      float64 `json:"spent_usd"`
	ReservedUSD   float64 `json:"reserved_usd"`
	MonthlyCapUSD float64 `json:"monthly_cap_usd"`
	LeftUSD       float64 `json:"left_usd"`
}

// ROIParams picks the jobs roi/report counts: those that ended since Since
// (default 30 days ago).
type ROIParams struct {
	Since time.Time `json:"since,omitzero"`
}

// ROIRow is what one engine (for one kind of job, or every kind when Kind
// is empty) gave for its spend.
type ROIRow struct {
	Engine string `json:"engine"`
	Kind   Kind   `json:"kind,omitempty"`
	Jobs   int    `json:"jobs"`
	// Verified: succeeded, and the caller's verify passed on the result.
	Verified int `json:"verified"`
	// Unverified: succeeded with no verify run.
	Unverified int `json:"unverified"`
	// Failed: failed, timed out or cancelled.
	Failed   int     `json:"failed"`
	SpentUSD float64 `json:"spent_usd"`
	// Free: nothing was spent, so VerifiedPerUSD is 0 and means nothing.
	Free           bool    `json:"free"`
	VerifiedPerUSD float64 `json:"verified_per_usd"`
	// MedianMS and P90MS are of the time from preparing to the end, over
	// the jobs that were admitted (0 when none was).
	MedianMS int64 `json:"median_ms"`
	P90MS    int64 `json:"p90_ms"`
}

// ROIResult is the return on spend of the jobs that ended in [Since, Until].
type ROIResult struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Rows are per engine and kind, by engine then kind.
	Rows []ROIRow `json:"rows"`
	// Engines are per engine, every kind together, by engine.
	Engines []ROIRow `json:"engines"`
}
