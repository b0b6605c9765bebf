package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/router"
)

// routeInputs loads the settings and gathers what the router needs besides
// the request: the month's money, the quota signals engines reported, and
// routing.json. Start and route explain read the same, so they decide alike.
func (s *Server) routeInputs(ctx context.Context) (config.Settings, job.RouteInputs, error) {
	set, err := s.settings()
	if err != nil {
		return set, job.RouteInputs{}, err
	}
	in, err := s.gatherRouteInputs(ctx, set)
	return set, in, err
}

func (s *Server) gatherRouteInputs(ctx context.Context, set config.Settings) (job.RouteInputs, error) {
	t := s.now()
	tot, err := s.st.MonthTotals(ctx, t.Format("2006-01"))
	if err != nil {
		return job.RouteInputs{}, internal(err)
	}
	quota, err := s.st.Quotas(ctx)
	if err != nil {
		return job.RouteInputs{}, internal(err)
	}
	w, err := loadRouting()
	if err != nil {
		return job.RouteInputs{}, err
	}
	return job.RouteInputs{
		Money: router.Money{CapMicros: micros.FromUSD(set.MonthlyCapUSD), ChargedMicros: tot.ChargedMicros, ReservedMicros: tot.ReservedMicros},
		Quota: quota, Weights: w, Now: t, Live: s.liveWork(ctx), Places: s.places(ctx, set),
	}, nil
}

// liveWork is what each live job touched so far, by repository, as its
// forecast last saw it.
func (s *Server) liveWork(ctx context.Context) map[string][]router.Live {
	jobs, err := s.st.ListJobs(ctx, []protocol.State{protocol.StateRunning, protocol.StateNeedsInput, protocol.StateVerifying}, "", 0)
	if err != nil {
		return nil
	}
	live := map[string][]router.Live{}
	for _, j := range jobs {
		st := view.Status(j, nil, s.now())
		if st.Forecast != nil && len(st.Forecast.Touched) > 0 {
			live[j.Repo] = append(live[j.Repo], router.Live{Job: j.ID, Branch: j.Branch, Touched: st.Forecast.Touched})
		}
	}
	return live
}

// loadRouting reads routing.json, its error worded for the caller.
func loadRouting() (router.Weights, error) {
	w, err := config.LoadRouting()
	if err != nil {
		return w, rpc.Errorf(protocol.CodeUnavailable, "fix routing.json, or remove it for the defaults", "%v", err)
	}
	return w, nil
}

// RouteExplain is the decision start would make for p, without starting.
func (s *Server) RouteExplain(ctx context.Context, p protocol.StartParams) (*protocol.RouteExplainResult, error) {
	set, in, err := s.routeInputs(ctx)
	if err != nil {
		return nil, err
	}
	d, err := job.Explain(ctx, p, set, s.o.Engines, in)
	if err != nil {
		return nil, fieldError(err)
	}
	return &protocol.RouteExplainResult{Decision: protocol.RouteView(d), Text: d.Text()}, nil
}

// RouteCalibrate fits routing.json from the jobs that ended in the window.
// Cancelled jobs are left out: a person stopped them, the engine did not fail.
func (s *Server) RouteCalibrate(ctx context.Context, p protocol.RouteCalibrateParams) (*protocol.RouteCalibrateResult, error) {
	days := p.SinceDays
	switch {
	case days < 0:
		return nil, invalid("since_days", "pass a number of days, or leave it out for 90", "since_days is negative")
	case days == 0:
		days = 90
	}
	old, err := loadRouting()
	if err != nil {
		return nil, err
	}
	t := s.now()
	runs, err := s.st.Runs(ctx, t.Add(-time.Duration(days)*24*time.Hour))
	if err != nil {
		return nil, internal(err)
	}
	var hist []router.Run
	for _, r := range runs {
		if r.State == protocol.StateCancelled {
			continue
		}
		hist = append(hist, router.Run{Engine: r.Engine, Kind: string(r.Kind),
			Success:  r.State == protocol.StateSucceeded && (!r.HadVerify || r.Verified),
			Duration: r.Duration, CostUSD: r.CostMicros.USD(), CostKnown: r.CostKnown})
	}
	w, changes := router.Calibrate(hist, old, t)
	res := &protocol.RouteCalibrateResult{Path: config.RoutingPath(), Runs: len(hist), Mode: w.Mode, Changes: changes}
	if res.Mode == "" {
		res.Mode = router.ModeUtility
	}
	if res.Changes == nil {
		res.Changes = []router.Change{}
	}
	runsWord := "runs"
	if len(hist) == 1 {
		runsWord = "run"
	}
	res.Text = fmt.Sprintf("%d %s in the last %d days\n", len(hist), runsWord, days) + router.ChangesText(changes)
	if w.Mode == router.ModeLegacy {
		res.Text += "routing.json is in legacy mode: the fitted stats are kept but routing ignores them until mode is utility\n"
	}
	if p.DryRun || len(changes) == 0 {
		return res, nil
	}
	b, err := w.Marshal()
	if err != nil {
		return nil, internal(err)
	}
	if err := writeFileAtomic(res.Path, b); err != nil {
		return nil, rpc.Errorf(protocol.CodeUnavailable, "check that hub's config directory is writable", "write %s: %v", res.Path, err)
	}
	res.Written = true
	res.Text += "wrote " + res.Path + "\n"
	return res, nil
}

// writeFileAtomic replaces path with b (mode 0600) so a reader never sees half a file.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".routing-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// settings reads the settings for a request (Options.Settings), an error
// carrying the hint of what to fix: config.json, or a variable of the
// daemon's environment.
func (s *Server) settings() (config.Settings, error) {
	set, err := s.o.Settings()
	if err == nil {
		return set, nil
	}
	hint := "fix hub's config file " + filepath.Join(config.ConfigDir(), "config.json")
	if h := rpc.HintOf(err); h != "" {
		hint = h
	}
	return set, rpc.Errorf(protocol.CodeUnavailable, hint, "%v", err)
}
