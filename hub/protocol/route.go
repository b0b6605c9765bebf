package protocol

import "github.com/hub-agents/hub/router"

// RouteExplainResult is the router's decision for a start request, made
// exactly as start would make it, without starting anything.
type RouteExplainResult struct {
	Decision router.Decision `json:"decision"`
	// Text is the decision as a person reads it.
	Text string `json:"text"`
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
