package daemon

import (
	"context"
	"time"

	"github.com/hub-agents/hub/hub/gc"
	"github.com/hub-agents/hub/hub/protocol"
)

// GC removes what old ended jobs left behind: their worktrees, verify trees,
// engine folders and logs, and their branches once the work is merged (any
// branch with --force). The records and journals stay. Without apply it
// changes nothing and says what it would do.
func (s *Server) GC(ctx context.Context, p protocol.GCParams) (*protocol.GCResult, error) {
	var olderThan time.Duration
	switch {
	case p.OlderThanS == nil:
		set, err := s.settings()
		if err != nil {
			return nil, err
		}
		olderThan = time.Duration(set.JobRetentionDays) * 24 * time.Hour
	case *p.OlderThanS < 0:
		return nil, invalid("older_than_s", "pass 0 or more seconds, or leave it out for the job_retention_days setting",
			"older_than_s is negative (%d)", *p.OlderThanS)
	case *p.OlderThanS > int64(gc.MaxRetention/time.Second):
		return nil, invalid("older_than_s", "pass at most 100 years", "older_than_s is too large (%d)", *p.OlderThanS)
	default:
		olderThan = time.Duration(*p.OlderThanS) * time.Second
	}
	res, err := s.collector().Collect(ctx, p, olderThan, s.now())
	if err != nil {
		return nil, internal(err)
	}
	return res, nil
}

// collector collects with this daemon's store and paths.
func (s *Server) collector() *gc.Collector {
	return &gc.Collector{Store: s.st, Paths: s.o.Paths, Log: s.o.Log, Changed: s.poke}
}
