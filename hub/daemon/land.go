package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/hub-agents/hub/hub/land"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/shim"
)

// JobLand lands ended jobs onto a target branch, one at a time, each
// checked on the integrated commit before the target moves (package land).
func (s *Server) JobLand(ctx context.Context, p protocol.LandParams) (*protocol.LandResult, error) {
	p.IDs = unique(p.IDs)
	res, err := s.lander().Land(ctx, p)
	if err != nil {
		return nil, landError(err)
	}
	s.poke()
	return res, nil
}

// lander lands with this daemon's store, its checks run as the jobs'
// verify ran, a conflict's follow-up started as any job.
func (s *Server) lander() *land.Lander {
	return &land.Lander{Store: s.st, Paths: s.o.Paths, Log: s.o.Log, Now: s.now, Start: s.JobStart,
		Check: func(ctx context.Context, id, commit, command string, timeout time.Duration) (*protocol.Verify, error) {
			o := shim.Options{Paths: s.o.Paths, Engines: s.o.Engines, HubBinary: s.o.HubBinary, Log: s.o.Log}
			return shim.Check(ctx, o, s.st, id, commit, command, timeout, nil)
		}}
}

// landError is a landing's refusal as the protocol's error.
func landError(err error) error {
	var le *land.Error
	if !errors.As(err, &le) {
		return internal(err)
	}
	switch le.Kind {
	case land.Invalid:
		return invalid(le.Field, le.Hint, "%s", le.Msg)
	case land.WrongState:
		return wrongState(le.Hint, "%s", le.Msg)
	case land.NotFound:
		return notFound(le.ID, le.Err)
	}
	return internal(le.Err)
}

// unique keeps the first of each id, in order.
func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
