// Package money owns the money views: the month's ledger as a person reads
// it, and the return on spend per engine (roi), aggregated from the jobs the
// store recorded, with their text renderings. Amounts stay integer
// micro-dollars until the view turns them into dollars for the wire.
//
// It only reads what it is given: it never writes to the store, and never
// talks to a process, a socket or the clock (the caller passes the time).
package money
