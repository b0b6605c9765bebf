package protocol

import "github.com/hub-agents/hub/router"

// RouteExplainResult is the router's decision for a start request, made
// exactly as start would make it, without starting anything.
type RouteExplainResult struct {
	Decision RouteDecision `json:"decision"`
	// Text is the decision as a person reads it.
	Text string `json:"text"`
}

// RouteDecision is the router's decision as the protocol shows it, money in
// dollars: the candidates ranked (the first is chosen; the rest are the
// fallbacks, in order) and every engine rejected, with why.
type RouteDecision struct {
	Request    RouteRequest       `json:"request"`
	Mode       string             `json:"mode"`             // what the weights favour
	Chosen     string             `json:"chosen,omitempty"` // the engine picked ("" when nothing fits)
	Candidates []router.Candidate `json:"candidates"`
	Rejected   []router.Rejection `json:"rejected"`
	// Refusal says why nothing fits and what would make it fit ("" when something does).
	Refusal string `json:"refusal,omitempty"`
	// Fallbacks are engines that failed to start before Chosen took the job.
	Fallbacks []router.Fallback `json:"fallbacks,omitempty"`
	Money     RouteMoney        `json:"money"`     // the month as the decision saw it
	ValueUSD  float64           `json:"value_usd"` // what a verified success was worth in the utility
	Notes     []string          `json:"notes,omitempty"`
}

// RouteRequest is what the router was asked.
type RouteRequest struct {
	Kind      Kind      `json:"kind"`
	Isolation Isolation `json:"isolation"`
	// ReadOnly: a read job in a plain directory, so the engine must run without writing.
	ReadOnly bool    `json:"read_only,omitempty"`
	MaxUSD   float64 `json:"max_usd"` // the budget reserved before work
	Effort   string  `json:"effort,omitempty"`
	Engine   string  `json:"engine,omitempty"` // the engine named ("" or auto: the router picks)
	Profile  string  `json:"profile,omitempty"`
}

// RouteMoney is the month's money as a decision saw it.
type RouteMoney struct {
	CapUSD      float64 `json:"cap_usd"`
	ChargedUSD  float64 `json:"charged_usd"`  // by closed reservations
	ReservedUSD float64 `json:"reserved_usd"` // held by open ones
	LeftUSD     float64 `json:"left_usd"`     // what a new reservation may take
}

// RouteView is d as the protocol shows it.
func RouteView(d router.Decision) RouteDecision {
	r := d.Request
	return RouteDecision{
		Request: RouteRequest{Kind: Kind(r.Kind), Isolation: Isolation(r.Isolation), ReadOnly: r.ReadOnly, MaxUSD: r.MaxMicros.USD(),
			Effort: r.Effort, Engine: r.Engine, Profile: r.Profile},
		Mode: d.Mode, Chosen: d.Chosen, Candidates: d.Candidates, Rejected: d.Rejected, Refusal: d.Refusal, Fallbacks: d.Fallbacks,
		Money: RouteMoney{CapUSD: d.Money.CapMicros.USD(), ChargedUSD: d.Money.ChargedMicros.USD(),
			ReservedUSD: d.Money.ReservedMicros.USD(), LeftUSD: d.Money.Left().USD()},
		ValueUSD: d.ValueUSD, Notes: d.Notes,
	}
}

// RouteCalibrateParams fits routing.json from hub's history.
type RouteCalibrateParams struct {
	// SinceDays is how far back the history goes (default 90).
	SinceDays int `json:"since_days,omitempty"`
	// DryRun shows the changes without writing routing.json.
	DryRun bool `json:"dry_run,omitempty"`
}

// RouteCalibrateResult says what calibration changed.
type RouteCalibrateResult struct {
	Path    string          `json:"path"`
	Runs    int             `json:"runs"`
	Mode    string          `json:"mode"`
	Written bool            `json:"written"`
	Changes []router.Change `json:"changes"`
	Text    string          `json:"text"`
}
