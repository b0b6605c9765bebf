package daemon

import (
	"context"
	"time"
)

// forecastEvery is how often the daemon works out every live job's
// forecast; Options.ForecastEvery overrides it.
const forecastEvery = 2 * time.Second

// forecastLoop works the forecasts out every period, and at once when a
// job's work changed hands (forecastSoon), until ctx ends.
func (s *Server) forecastLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.forecast.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.forecastCh:
		}
	}
}

// forecastSoon asks for a forecast round now.
func (s *Server) forecastSoon() {
	select {
	case s.forecastCh <- struct{}{}:
	default:
	}
}
