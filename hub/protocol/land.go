package protocol

import "time"

// Forecast is what hub predicts of landing a job's work: checked while the
// job runs (its work tree as it is, committed or not) and after it ends
// (its branch), against the target as it is now and against every other
// live job of the same repository, with git merge-tree (nothing checked
// out, no ref moved).
type Forecast struct {
	Target string `json:"target,omitempty"` // the branch the job would land on ("" when there is none: a detached base)
	// Behind counts the commits the target gained since the job's base:
	// landing it needs a merge (or a rebase) onto the new tip.
	Behind int `json:"behind,omitempty"`
	// Touched are the files the job changed so far, against its base (the
	// first 100, sorted; TouchedMore counts the rest).
	Touched     []string `json:"touched,omitempty"`
	TouchedMore int      `json:"touched_more,omitempty"`
	// Conflicts are the predicted conflicts, the target's first.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	At        time.Time  `json:"at"` // when it was worked out
}

// Conflict is one predicted conflict: landing the job together with With
// would leave Files in conflict.
type Conflict struct {
	With   string   `json:"with"`           // "target", or the other job's id
	Branch string   `json:"branch"`         // the other side's branch: the target, or hub/<id>
	Files  []string `json:"files"`          // the paths in conflict
	Line   string   `json:"line,omitempty"` // the conflict in one line, as status shows it
}

// Landing is the record of a job's work landed on a branch.
type Landing struct {
	Into   string    `json:"into"`   // the branch it landed on
	Commit string    `json:"commit"` // the branch's tip that holds it (a merge commit, the squashed commit, or the last replayed one)
	From   string    `json:"from"`   // the branch's tip before
	Head   string    `json:"head"`   // the job's commit that landed
	Mode   string    `json:"mode"`   // merge | squash | rebase
	At     time.Time `json:"at"`     // when the branch moved
	// Verified says how the integrated commit was checked before the branch moved.
	Verified string `json:"verified"`
}

// Land modes.
const (
	LandMerge  = "merge"  // a merge commit of the target's tip and the job's branch
	LandSquash = "squash" // one commit on the target's tip with the job's whole change
	LandRebase = "rebase" // the job's commits replayed on the target's tip, one by one
)

// Land orders.
const (
	OrderGiven = "given" // as the ids are listed
	OrderAuto  = "auto"  // fewest predicted conflicts first, then oldest first
)

// LandParams lands one job or a batch onto a target branch. Each job is
// integrated with the target's current tip in a scratch checkout, its
// verify (and the batch verify) runs on that commit, and only then does the
// target move; a conflict or a red check stops that job and leaves the
// target as it was.
type LandParams struct {
	IDs  []string `json:"ids"`            // the jobs to land (ended, with a branch)
	Into string   `json:"into,omitempty"` // the target branch (default: the branch the jobs' base was on)
	// Order is given (default) or auto: fewest predicted conflicts first.
	Order string `json:"order,omitempty"`
	Mode  string `json:"mode,omitempty"` // merge (default), squash or rebase
	// Verify is a batch check run on each integrated commit after the job's own.
	Verify string `json:"verify,omitempty"`
	// VerifyTimeoutS bounds each check (default: the job's verify_timeout_s, else 600).
	VerifyTimeoutS int `json:"verify_timeout_s,omitempty"`
	// Resolve starts a follow-up job, on the same engine, for each job stopped by a conflict: its task is the merge.
	Resolve bool `json:"resolve,omitempty"`
	// DryRun integrates and checks nothing: it says what would land, in which order, and what would conflict.
	DryRun bool `json:"dry_run,omitempty"`
	// Detach answers as soon as the landing is accepted, with its run's id
	// (result.run): it goes on without the request, and job/landWait
	// follows it. Without it the request waits for the landing's end.
	Detach bool `json:"detach,omitempty"`
}

// LandResult says what happened to each job, in the order they were tried.
type LandResult struct {
	Into string     `json:"into"` // the target branch
	From string     `json:"from"` // its tip before
	Tip  string     `json:"tip"`  // its tip after
	Jobs []LandItem `json:"jobs"` // one per job, in the order tried
	// Checkout is "updated" when the target is checked out (clean: one with
	// changes of its own is refused) and its files moved with it; "" when
	// it is not checked out, so the branch moved and no file did.
	Checkout string `json:"checkout,omitempty"`
	Line     string `json:"line"` // the outcome in one line
	// Run is the landing run's id (none for a dry run): job/landWait
	// takes it. A detached landing answers with it and nothing else yet.
	Run string `json:"run,omitempty"`
}

// LandRun is a landing as work: accepted, it has a record and an id, runs
// on its own under its repository's landing lock (not inside the request
// that asked for it), and ends once, done or failed; a daemon that stops
// under it interrupts it, its checks stopped, its target moved only by
// the jobs it had landed by then.
type LandRun struct {
	ID        string    `json:"id"`
	State     string    `json:"state"` // one of the LandRun* states
	Repo      string    `json:"repo"`  // the repository's top
	Into      string    `json:"into"`  // the target branch
	IDs       []string  `json:"ids"`   // the jobs, as asked
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Result is the landing's outcome, job by job: when done, and when
	// interrupted after it began (the jobs not tried are skipped, saying why).
	Result *LandResult `json:"result,omitempty"`
	// Error is why it failed (refused under the lock: the target's checkout
	// had changes, a job landed meanwhile…) or was interrupted, and what to do.
	Error string `json:"error,omitempty"`
}

// Landing run states.
const (
	LandRunRunning     = "running"     // waiting for its repository's landing lock, or landing
	LandRunDone        = "done"        // ended: Result says what landed
	LandRunFailed      = "failed"      // refused once it held the lock: nothing moved
	LandRunInterrupted = "interrupted" // the daemon stopped under it
)

// LandWaitParams waits for a landing run to end.
type LandWaitParams struct {
	Run string `json:"run"` // the run's id, from job/land
	// TimeoutS bounds the wait (default 300, at most 3600); a run still
	// going then is answered as it is, state running.
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// LandItem is one job's outcome.
type LandItem struct {
	ID       string   `json:"id"`
	Outcome  string   `json:"outcome"`             // one of the Land* outcomes
	Commit   string   `json:"commit,omitempty"`    // the target's tip with the job's work (landed), or the integrated commit that failed its check
	Files    []string `json:"files,omitempty"`     // the files in conflict
	Reason   string   `json:"reason,omitempty"`    // why it did not land
	Verify   *Verify  `json:"verify,omitempty"`    // the job's check on the integrated commit
	Batch    *Verify  `json:"batch,omitempty"`     // the batch check on it
	FollowUp string   `json:"follow_up,omitempty"` // the job started to resolve the conflict
}

// Land outcomes.
const (
	LandLanded   = "landed"   // the target moved to a commit with the job's work, checked
	LandConflict = "conflict" // the job's branch conflicts with the target's tip
	LandRed      = "red"      // a check failed on the integrated commit
	LandAlready  = "already"  // the target already holds the job's work; nothing moved
	LandWould    = "would"    // dry run: it would merge cleanly
	LandSkipped  = "skipped"  // not tried: an earlier failure stopped the batch, or the target moved under hub
)

// ReviewParams asks for a batch's review packet.
type ReviewParams struct {
	IDs      []string `json:"ids,omitempty"`       // the jobs; empty with all_ended: every ended job not landed
	AllEnded bool     `json:"all_ended,omitempty"` // every ended, unlanded job with work on its branch
	Repo     string   `json:"repo,omitempty"`      // only jobs of this repository (its top)
}

// ReviewResult is the packet: one line per job, sized for a supervisor.
type ReviewResult struct {
	Text string       `json:"text"` // the packet as text
	Jobs []ReviewItem `json:"jobs"` // the same, structured
}

// ReviewItem is one job in a review packet.
type ReviewItem struct {
	ID        string     `json:"id"`
	State     State      `json:"state"`
	Task      string     `json:"task"`                // first line, short
	Files     int        `json:"files"`               // files changed
	Added     int        `json:"added"`               // lines
	Deleted   int        `json:"deleted"`             // lines
	Verify    string     `json:"verify,omitempty"`    // pass | fail | none
	Rubric    string     `json:"rubric,omitempty"`    // the rubric's verdict
	CostUSD   float64    `json:"cost_usd"`            // what it spent
	Conflicts []Conflict `json:"conflicts,omitempty"` // predicted conflicts
	Risks     []string   `json:"risks,omitempty"`     // risk flags: outside files, tests deleted or skipped, lockfile, ci, secret
	Landed    *Landing   `json:"landed,omitempty"`    // when it already landed
	Next      string     `json:"next"`                // what to do next, in a few words
}
