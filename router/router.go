// Package router picks the engine for a job and says why. Given what the
// caller asked for and a snapshot of the engines (what they can enforce,
// whether they are installed and ready, their quota, the month's money), it
// rejects every engine that cannot take the job, each with the reason and
// what would change it, and ranks the rest by an explicit utility:
//
//	expected success × value of the task − expected cost − expected time × its price − quota pressure
//
// with weights and per-engine history from routing.json. It is pure: no
// clock, no files, no processes. The caller builds the snapshot and acts on
// the decision.
package router

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/internal/micros"
)

// Job kinds and isolation levels, as hub's protocol spells them.
const (
	KindWrite = "write"
	KindRead  = "read"
)

// How an engine pays.
const (
	PaysFree         = "free"
	PaysAPI          = "api"
	PaysSubscription = "subscription"
)

// Request is what the caller asked for.
type Request struct {
	Kind      string `json:"kind"`      // write or read
	Isolation string `json:"isolation"` // worktree, sandbox, isolated, untrusted
	// ReadOnly: a read job in a plain directory, so the engine itself must
	// run without writing.
	ReadOnly bool `json:"read_only,omitempty"`
	// MaxMicros is the job's budget, reserved before work.
	MaxMicros micros.Micros `json:"max_micros"`
	Effort    string        `json:"effort,omitempty"` // low, medium, high
	// Engine is the engine the caller named ("" or "auto" lets the router pick).
	Engine  string `json:"engine,omitempty"`
	Profile string `json:"profile,omitempty"`
	// Files are the paths the job names as where it will work (its files).
	Files []string `json:"files,omitempty"`
}

// Auto is the engine name that lets the router pick.
const Auto = "auto"

// Auto reports whether the router picks the engine.
func (r Request) Auto() bool { return r.Engine == "" || r.Engine == Auto }

// Engine is one engine as the snapshot saw it.
type Engine struct {
	Name      string   `json:"name"`
	Isolation []string `json:"isolation"` // levels it can enforce here
	// IsolationWhyNot says why it cannot enforce a level here (level → reason).
	IsolationWhyNot map[string]string `json:"isolation_why_not,omitempty"`
	ReadOnly        bool              `json:"read_only"` // can run without writing
	Pays            string            `json:"pays"`      // free, api or subscription
	// Installed is false when the engine cannot run on this machine at all;
	// Why says why and what to do.
	Installed bool   `json:"installed"`
	Why       string `json:"why,omitempty"`
	// Refusal is the engine's own refusal of this request (no profile, no
	// key, a bad option), "" when it would take it.
	Refusal string  `json:"refusal,omitempty"`
	Quota   []Quota `json:"quota,omitempty"`
}

// Quota is one limit the engine is under, as last read.
type Quota struct {
	Name       string    `json:"name"`     // five_hour, seven_day, primary, …
	UsedPct    float64   `json:"used_pct"` // 0–100
	Exhausted  bool      `json:"exhausted,omitempty"`
	ResetsAt   time.Time `json:"resets_at,omitzero"`
	Source     string    `json:"source"`
	ReadAt     time.Time `json:"read_at"`
	Confidence string    `json:"confidence,omitempty"`
}

// Money is the month's ledger: what was charged, what open reservations
// hold, and the cap.
type Money struct {
	CapMicros      micros.Micros `json:"cap_micros"`
	ChargedMicros  micros.Micros `json:"charged_micros"`
	ReservedMicros micros.Micros `json:"reserved_micros"`
}

// Left is what a new reservation may take without crossing the cap.
func (m Money) Left() micros.Micros { return max(0, m.CapMicros-m.ChargedMicros-m.ReservedMicros) }

// Snapshot is everything the router knows at decision time.
type Snapshot struct {
	Now     time.Time `json:"now"`
	Engines []Engine  `json:"engines"`
	Money   Money     `json:"money"`
	// Live is the work in progress in the job's repository: what each
	// live job has touched so far, as the forecast last saw it.
	Live []Live `json:"live,omitempty"`
	// Places are where an auto job may run: this machine first, then the
	// remote queues that take auto jobs. Empty: here, with no choice.
	Places []Place `json:"places,omitempty"`
}

// Live is one live job of the same repository.
type Live struct {
	Job     string   `json:"job"`
	Branch  string   `json:"branch"`
	Touched []string `json:"touched"`
}

// Overlap is a live job already changing files the new job names: the two
// would likely conflict, so a supervisor serialises them.
type Overlap struct {
	Job    string   `json:"job"`
	Branch string   `json:"branch"`
	Files  []string `json:"files"`
}

// Rejection codes, one per kind of reason.
const (
	RejectUnknown   = "unknown"
	RejectIsolation = "isolation"
	RejectInstalled = "not_installed"
	RejectRefused   = "refused"
	RejectReadOnly  = "read_only"
	RejectBudget    = "budget"
	RejectCap       = "monthly_cap"
	RejectQuota     = "quota"
)

// Rejection is an engine that cannot take the job, and why.
type Rejection struct {
	Engine string `json:"engine"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	// Fix says what would make it fit.
	Fix string `json:"fix,omitempty"`
}

// Terms break a candidate's utility into its parts, in dollars.
type Terms struct {
	Success  float64 `json:"success"`   // expected probability of a verified success
	Value    float64 `json:"value_usd"` // success × value of the task
	Cost     float64 `json:"cost_usd"`  // expected spend
	TimeS    float64 `json:"time_s"`    // expected duration
	Time     float64 `json:"time_usd"`  // expected duration × the price of waiting
	Quota    float64 `json:"quota_usd"` // pressure on a quota window
	Utility  float64 `json:"utility_usd"`
	Basis    string  `json:"basis"` // "prior" or "calibrated from N runs"
	QuotaMsg string  `json:"quota,omitempty"`
}

// Candidate is an engine that can take the job.
type Candidate struct {
	Engine string `json:"engine"`
	Terms  Terms  `json:"terms"`
	// Rank is 1 for the best.
	Rank int `json:"rank"`
	// Why is one sentence on its place in the order.
	Why string `json:"why,omitempty"`
}

// Decision is the router's answer: ranked candidates (the first is chosen;
// the rest are the fallbacks, in order) and every rejected engine with why.
type Decision struct {
	Request    Request     `json:"request"`
	Mode       string      `json:"mode"`
	Chosen     string      `json:"chosen,omitempty"`
	Candidates []Candidate `json:"candidates"`
	Rejected   []Rejection `json:"rejected"`
	// Refusal says why nothing fits and what would make it fit ("" when something does).
	Refusal string `json:"refusal,omitempty"`
	// Fallbacks records engines that failed to start before Chosen took the job.
	Fallbacks []Fallback `json:"fallbacks,omitempty"`
	// Money is the month as the decision saw it.
	Money Money `json:"money"`
	// ValueUSD is what a verified success was worth in the utility.
	ValueUSD float64 `json:"value_usd"`
	// Notes say what the caller should know about the pick (it will wait
	// for money, …).
	Notes []string `json:"notes,omitempty"`
	// Overlaps are the live jobs changing files this job names: whichever
	// engine runs it, the two will likely conflict.
	Overlaps []Overlap `json:"overlaps,omitempty"`
	// Where is where an auto job runs, when there was a choice of places.
	Where *Where `json:"where,omitempty"`
}

// Fallback is an engine the hub tried at start that failed to start.
type Fallback struct {
	Engine string `json:"engine"`
	Error  string `json:"error"`
}

// Next returns the candidate after engine in the ranking ("" if none): the
// engine a failed start falls back to. Only auto decisions fall back; an
// engine the caller named is not swapped for another.
func (d Decision) Next(engine string) string {
	if !d.Request.Auto() {
		return ""
	}
	for i, c := range d.Candidates {
		if c.Engine == engine && i+1 < len(d.Candidates) {
			return d.Candidates[i+1].Engine
		}
	}
	return ""
}

// Decide rejects the engines that cannot take req and ranks the rest.
func Decide(req Request, snap Snapshot, w Weights) Decision {
	w = w.withDefaults()
	d := Decision{Request: req, Mode: w.Mode, Candidates: []Candidate{}, Rejected: []Rejection{}, Money: snap.Money, ValueUSD: w.ValueUSD}
	engines := slices.Clone(snap.Engines)
	sort.Slice(engines, func(i, j int) bool { return engines[i].Name < engines[j].Name })
	var fit []Engine
	for _, e := range engines {
		if r, ok := reject(req, e, snap, w); ok {
			d.Rejected = append(d.Rejected, r)
			continue
		}
		fit = append(fit, e)
	}
	for _, e := range fit {
		d.Candidates = append(d.Candidates, Candidate{Engine: e.Name, Terms: terms(req, e, snap, w)})
	}
	rank(d.Candidates, w)
	switch {
	case !req.Auto():
		named := -1
		for i, c := range d.Candidates {
			if c.Engine == req.Engine {
				named = i
			}
		}
		if named < 0 {
			d.Refusal = refuseNamed(req, d)
			for i := range d.Candidates {
				d.Candidates[i].Rank = i + 1
			}
			return d
		}
		// The caller's choice goes first; the ranking of the others stays
		// as information (a named engine does not fall back).
		c := d.Candidates[named]
		d.Candidates = append([]Candidate{c}, append(d.Candidates[:named:named], d.Candidates[named+1:]...)...)
		d.Candidates[0].Why = "named by the caller"
	case len(d.Candidates) == 0:
		d.Refusal = refuseAll(req, d)
		return d
	}
	for i := range d.Candidates {
		d.Candidates[i].Rank = i + 1
	}
	d.Chosen = d.Candidates[0].Engine
	d.Where = place(req, snap.Places)
	d.Overlaps = overlaps(req.Files, snap.Live)
	for _, o := range d.Overlaps {
		d.Notes = append(d.Notes, fmt.Sprintf("job %s (%s) is already changing %s, which this job names: the two will likely conflict; serialise them (start this one after %s lands) or land them in turn",
			o.Job, o.Branch, strings.Join(o.Files, ", "), o.Job))
	}
	if m := snap.Money; m.ChargedMicros+m.ReservedMicros+req.MaxMicros > m.CapMicros {
		d.Notes = append(d.Notes, fmt.Sprintf("the month has %s left after open reservations; this job's %s waits in the queue until they close",
			m.Left(), req.MaxMicros))
	}
	return d
}

// reject says why e cannot take req, if it cannot. The order is the order a
// person fixes things in: what the engine can do at all, then this machine,
// then this request, then money and quota.
func reject(req Request, e Engine, snap Snapshot, w Weights) (Rejection, bool) {
	r := Rejection{Engine: e.Name}
	switch {
	case !slices.Contains(e.Isolation, req.Isolation):
		r.Code = RejectIsolation
		r.Reason = fmt.Sprintf("cannot enforce isolation %s (it enforces %s)", req.Isolation, strings.Join(e.Isolation, ", "))
		if why := e.IsolationWhyNot[req.Isolation]; why != "" {
			r.Reason += ": " + why
		}
		r.Fix = "ask for " + strings.Join(e.Isolation, " or ") + " if that is enough"
	case !e.Installed:
		r.Code = RejectInstalled
		r.Reason = "not available here: " + e.Why
		r.Fix = "install or configure it (hub doctor says how)"
	case req.ReadOnly && !e.ReadOnly:
		r.Code = RejectReadOnly
		r.Reason = "cannot run read-only in a plain directory"
		r.Fix = "pass `repo` instead of `cwd`: hub then answers in a throwaway checkout"
	case e.Refusal != "":
		r.Code = RejectRefused
		r.Reason = e.Refusal
	case e.Pays == PaysAPI && req.MaxMicros == 0:
		r.Code = RejectBudget
		r.Reason = "pays per token and max_usd is $0"
		r.Fix = "give the job a budget (max_usd), or pick a free engine"
	case snap.Money.ChargedMicros+req.MaxMicros > snap.Money.CapMicros:
		// It cannot fit this month even once every open reservation has
		// closed. (One that fits only then waits in the queue: admission
		// books it, with its slot, when the month has room, never beyond.)
		r.Code = RejectCap
		r.Reason = fmt.Sprintf("its reservation of %s would cross the monthly cap (%s charged of %s)",
			req.MaxMicros, snap.Money.ChargedMicros, snap.Money.CapMicros)
		if left := snap.Money.CapMicros - snap.Money.ChargedMicros; left > 0 {
			r.Fix = fmt.Sprintf("ask for at most %s (max_usd), or raise monthly_cap_usd", left)
		} else {
			r.Fix = "raise monthly_cap_usd, or wait for next month"
		}
	case e.Pays == PaysAPI && overBudget(req, e, w) > 0:
		st, basis := w.stat(e.Name, req.Kind)
		r.Code = RejectBudget
		r.Reason = fmt.Sprintf("expected cost %s per %s job (%s) is over max_usd %s",
			usdf(overBudget(req, e, w)), req.Kind, basis, req.MaxMicros)
		r.Fix = fmt.Sprintf("raise max_usd to at least %s, or pick a cheaper engine", usdf(math.Ceil(st.CostUSD*effortScale(req.Effort)*100)/100))
	default:
		if q, ok := exhausted(e.Quota, snap.Now); ok {
			r.Code = RejectQuota
			r.Reason = fmt.Sprintf("quota %s exhausted", q.Name)
			if !q.ResetsAt.IsZero() {
				r.Reason += " until " + clock(q.ResetsAt, snap.Now)
			}
			r.Reason += fmt.Sprintf(" (%s, read %s)", q.Source, ago(q.ReadAt, snap.Now))
			r.Fix = "wait for the window to reset, or pick another engine"
			return r, true
		}
		return Rejection{}, false
	}
	return r, true
}

// MinRunsForBudget is how many runs of history an engine needs before its
// expected cost can refuse it a job: a prior alone never does.
const MinRunsForBudget = 3

// overBudget returns the engine's expected cost for req when history says
// it is above the job's budget, else 0.
func overBudget(req Request, e Engine, w Weights) float64 {
	st, _ := w.stat(e.Name, req.Kind)
	if st.Runs < MinRunsForBudget {
		return 0
	}
	if c := st.CostUSD * effortScale(req.Effort); c > req.MaxMicros.USD() {
		return c
	}
	return 0
}

// exhausted returns the first window still exhausted at now. A window whose
// reset time has passed is open again, whatever it said before.
func exhausted(qs []Quota, now time.Time) (Quota, bool) {
	for _, q := range qs {
		if !(q.Exhausted || q.UsedPct >= 100) {
			continue
		}
		if !q.ResetsAt.IsZero() && !now.Before(q.ResetsAt) {
			continue
		}
		return q, true
	}
	return Quota{}, false
}

// terms computes a candidate's utility from its stats (calibrated or prior).
func terms(req Request, e Engine, snap Snapshot, w Weights) Terms {
	st, basis := w.stat(e.Name, req.Kind)
	scale := effortScale(req.Effort)
	t := Terms{Success: st.Success, TimeS: st.DurationS * scale, Basis: basis}
	t.Value = t.Success * w.ValueUSD
	switch e.Pays {
	case PaysFree, PaysSubscription:
		t.Cost = 0
	default:
		t.Cost = math.Min(st.CostUSD*scale, req.MaxMicros.USD())
	}
	t.Time = t.TimeS / 3600 * w.TimeUSDPerHour
	if q, ok := busiest(e.Quota, snap.Now); ok {
		t.Quota = q.UsedPct / 100 * w.QuotaUSD
		t.QuotaMsg = q.Line(snap.Now)
	}
	t.Utility = t.Value - t.Cost - t.Time - t.Quota
	return t
}

// busiest is the most used window that has not reset yet.
func busiest(qs []Quota, now time.Time) (Quota, bool) {
	var best Quota
	found := false
	for _, q := range qs {
		if !q.ResetsAt.IsZero() && !now.Before(q.ResetsAt) {
			continue
		}
		if !found || q.UsedPct > best.UsedPct {
			best, found = q, true
		}
	}
	return best, found
}

// Line describes the window in one line: how much is used, when it
// resets, where that was read, how long ago, and how far to trust it.
func (q Quota) Line(now time.Time) string {
	s := fmt.Sprintf("%s %.0f%% used", q.Name, q.UsedPct)
	if q.Exhausted {
		s = q.Name + " exhausted"
	}
	if !q.ResetsAt.IsZero() && now.Before(q.ResetsAt) {
		s += ", resets " + clock(q.ResetsAt, now)
	}
	return s + fmt.Sprintf(" (%s, read %s, %s confidence)", q.Source, ago(q.ReadAt, now), confidence(q, now))
}

// confidence is the signal's own confidence, lowered as it ages.
func confidence(q Quota, now time.Time) string {
	age := now.Sub(q.ReadAt)
	switch {
	case age > 6*time.Hour:
		return "low"
	case age > 30*time.Minute && q.Confidence == "high":
		return "medium"
	case q.Confidence == "":
		return "medium"
	}
	return q.Confidence
}

func effortScale(effort string) float64 {
	switch effort {
	case "low":
		return 0.5
	case "high":
		return 2
	}
	return 1
}

// rank orders candidates: by utility, or by the fixed order in legacy
// mode. Ties keep the fixed order, so the result never depends on map or
// input order.
func rank(cs []Candidate, w Weights) {
	pos := func(name string) int {
		if i := slices.Index(w.Order, name); i >= 0 {
			return i
		}
		return len(w.Order)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if w.Mode == ModeLegacy {
			if pi, pj := pos(cs[i].Engine), pos(cs[j].Engine); pi != pj {
				return pi < pj
			}
			return cs[i].Engine < cs[j].Engine
		}
		ui, uj := round(cs[i].Terms.Utility), round(cs[j].Terms.Utility)
		if ui != uj {
			return ui > uj
		}
		if pi, pj := pos(cs[i].Engine), pos(cs[j].Engine); pi != pj {
			return pi < pj
		}
		return cs[i].Engine < cs[j].Engine
	})
	for i := range cs {
		switch {
		case w.Mode == ModeLegacy:
			cs[i].Why = "legacy mode: fixed order " + strings.Join(w.Order, ", ")
		case i == 0 && len(cs) > 1 && round(cs[0].Terms.Utility) == round(cs[1].Terms.Utility):
			cs[i].Why = "tied with " + cs[1].Engine + "; the fixed order breaks the tie"
		case i == 0:
			cs[i].Why = "highest utility"
		default:
			cs[i].Why = fmt.Sprintf("%s less than %s", usdf(round(cs[0].Terms.Utility)-round(cs[i].Terms.Utility)), cs[0].Engine)
		}
	}
}

// round keeps utilities to the cent, so noise below that does not reorder engines.
func round(v float64) float64 { return math.Round(v*100) / 100 }

// refuseAll says why nothing fits and what would: each distinct fix once,
// with the engines it would open.
func refuseAll(req Request, d Decision) string {
	if len(d.Rejected) == 0 {
		return "no engines are registered"
	}
	var fixes []string
	engines := map[string][]string{}
	for _, r := range d.Rejected {
		// An engine's own refusal carries its fix in its words.
		fix := r.Fix
		if fix == "" {
			fix = r.Reason
		}
		if engines[fix] == nil {
			fixes = append(fixes, fix)
		}
		engines[fix] = append(engines[fix], r.Engine)
	}
	msg := fmt.Sprintf("no engine can take this %s job at isolation %s", req.Kind, req.Isolation)
	if len(fixes) > 0 {
		parts := make([]string, len(fixes))
		for i, f := range fixes {
			parts[i] = f + " (" + strings.Join(engines[f], ", ") + ")"
		}
		msg += "; to make one fit: " + strings.Join(parts, "; ")
	}
	return msg
}

// refuseNamed says why the named engine cannot take the job and which would.
func refuseNamed(req Request, d Decision) string {
	msg := fmt.Sprintf("engine %q is not one of hub's engines", req.Engine)
	for _, r := range d.Rejected {
		if r.Engine == req.Engine {
			msg = fmt.Sprintf("engine %s cannot take this job: %s", r.Engine, r.Reason)
			if r.Fix != "" {
				msg += "; " + r.Fix
			}
		}
	}
	if len(d.Candidates) > 0 {
		msg += fmt.Sprintf("; engine auto would pick %s", d.Candidates[0].Engine)
	}
	return msg
}

func usdf(v float64) string {
	if v < 0 {
		return fmt.Sprintf("−$%.2f", -v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// ago says how long before now t was, in rounded words.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// clock is a reset time as a person reads it: 14:00 today, or the date.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04") + " UTC"
	}
	return t.Format("Jan 2 15:04") + " UTC"
}

// overlaps lists the live jobs that touched a path among files (a path
// named, or one inside a folder named).
func overlaps(files []string, live []Live) []Overlap {
	var out []Overlap
	for _, l := range live {
		var hit []string
		for _, t := range l.Touched {
			for _, f := range files {
				f = strings.TrimSuffix(strings.TrimPrefix(f, "./"), "/")
				if t == f || strings.HasPrefix(t, f+"/") {
					hit = append(hit, t)
					break
				}
			}
		}
		if len(hit) > 0 {
			out = append(out, Overlap{Job: l.Job, Branch: l.Branch, Files: hit})
		}
	}
	return out
}
