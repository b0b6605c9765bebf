package job

import (
	"context"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/micros"
)

// End is how a job ended, as the code that ended it knows it: the shim at
// the end of a run or when it could not prepare, the daemon's Settle of a
// job whose shim died, the daemon stopping a queued job or failing to
// start its shim. Close turns it into the one record every ending leaves.
type End struct {
	State    protocol.State // terminal
	Category string         // why it did not succeed; "" derives it from State
	// Reason is why it did not succeed (the job's error and its last state
	// event's reason); "" when it succeeded.
	Reason   string
	Head     string // the commit it ended on (its base when nothing was committed)
	Salvaged bool   // hub committed what the worker left after an unclean end
	// CostMicros is what it cost when CostKnown; otherwise the whole
	// reservation is charged.
	CostMicros micros.Micros
	CostKnown  bool
	Tokens     int64
	// Evidence is what the shim observed of the run (commands, rubric,
	// verify, the worker's words…); nil means only what the record and git
	// say. Either way Close fills in the ending's own fields.
	Evidence *protocol.Evidence
}

// Close ends j: its evidence — the files and commits of base..head when
// none was built, the ending's state, category, error and cost — then, in
// one store transaction, the terminal state, the reservation closed once
// (with the cost, or the whole reservation when the cost is unknown), the
// slot freed, pending questions expired and the phases timed from the
// journal. It reports whether this call closed a reservation; a job that
// already ended gets store.ErrWrongState and nothing changes.
func Close(ctx context.Context, st *store.Store, j *store.Job, e End, now time.Time) (bool, error) {
	e.Category = protocol.CategoryOf(e.State, e.Category)
	ev := e.Evidence
	if ev == nil {
		ev = Evidence(ctx, j, e.Head)
	}
	ev.Category, ev.Error, ev.Salvaged, ev.Head = e.Category, e.Reason, e.Salvaged, e.Head // its state: store.Finish
	ev.Cost.Known, ev.Cost.Tokens, ev.Cost.ReservedUSD = e.CostKnown, e.Tokens, j.MaxMicros.USD()
	if e.CostKnown {
		ev.Cost.USD = e.CostMicros.USD()
	} else {
		ev.Cost.USD = j.MaxMicros.USD()
	}
	verdict := ""
	if ev.Rubric != nil {
		verdict = ev.Rubric.Verdict
	}
	return st.Finish(context.WithoutCancel(ctx), j.ID, store.Ending{State: e.State, HeadSHA: e.Head, Salvaged: e.Salvaged,
		Error: e.Reason, Category: e.Category, Summary: ev.Claimed.Report, CostMicros: e.CostMicros, CostKnown: e.CostKnown,
		Tokens: e.Tokens, Evidence: ev, Text: e.Reason, Rubric: verdict, Alerts: view.Alerts(ev)}, now)
}

// Fail ends j as failed before anything of it ran: at its base, with
// nothing spent, category saying at which step.
func Fail(ctx context.Context, st *store.Store, j *store.Job, category, reason string, now time.Time) (bool, error) {
	return Close(ctx, st, j, End{State: protocol.StateFailed, Category: category, Reason: reason, Head: j.BaseSHA, CostKnown: true}, now)
}

// Evidence is what the record and git say of j ended on head: who ran it
// and where, and for a write job the files and commits of base..head. The
// ending's own fields (state, error, cost, timings) are Close's to fill.
func Evidence(ctx context.Context, j *store.Job, head string) *protocol.Evidence {
	ev := &protocol.Evidence{ID: j.ID, Kind: j.Kind, Engine: j.Engine, Model: j.Model, Repo: j.Repo,
		Base: j.BaseSHA, Head: head, Branch: j.Branch, Isolation: j.Isolation, Files: []protocol.FileChange{},
		Commits: []protocol.Commit{}, Notes: j.Notes}
	ev.Observed.Commands = []protocol.ObservedCommand{}
	for _, n := range j.Notes {
		if n == NoteDirty {
			ev.Observed.UserCheckoutDirty = true
		}
	}
	if j.Kind != protocol.KindWrite || j.Repo == "" || head == "" || head == j.BaseSHA {
		return ev
	}
	if files, commits, err := Changes(ctx, j.Repo, j.ID, j.BaseSHA, head); err == nil {
		ev.Files, ev.Commits = files, commits
	}
	return ev
}
