package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/hub-agents/hub/hub/land"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
)

// JobLand lands ended jobs onto a target branch, one at a time, each
// checked on the integrated commit before the target moves (package
// land). A landing runs as work (land.Runs): the request waits for it
// unless detached, and a client going away does not stop it. A dry run
// moves nothing and runs no check: it is answered in the request.
func (s *Server) JobLand(ctx context.Context, p protocol.LandParams) (*protocol.LandResult, error) {
	p.IDs = unique(p.IDs)
	if p.DryRun {
		res, err := s.lander().Land(ctx, p)
		if err != nil {
			return nil, landError(err)
		}
		return res, nil
	}
	id, err := s.lands.Start(ctx, p)
	if err != nil {
		return nil, landError(err)
	}
	if p.Detach {
		return &protocol.LandResult{Run: id, Jobs: []protocol.LandItem{},
			Line: "landing " + id + " started; hub land --run " + id + " waits for it"}, nil
	}
	rec, err := s.lands.Wait(ctx, id, landForever)
	if err != nil {
		return nil, landError(err)
	}
	switch {
	case rec.Result != nil:
		res := *rec.Result
		res.Run = rec.ID
		if rec.State == protocol.LandRunInterrupted {
			res.Line += "; " + rec.Error
		}
		return &res, nil
	case rec.State == protocol.LandRunInterrupted:
		return nil, shuttingDown() // nothing moved: the next daemon takes it again
	default:
		return nil, wrongState("", "landing %s %s: %s", rec.ID, rec.State, rec.Error)
	}
}

// landForever bounds a request's wait for its own landing: the landing's
// checks bound it first.
const landForever = 24 * time.Hour

// LandWait waits for a landing run to end and answers its record.
func (s *Server) LandWait(ctx context.Context, p protocol.LandWaitParams) (*protocol.LandRun, error) {
	if p.Run == "" {
		return nil, invalid("run", "pass the run id job/land answered (result.run)", "run is empty")
	}
	if p.TimeoutS < 0 {
		return nil, invalid("timeout_s", "pass a number of seconds, or 0 for the default 300", "timeout_s is negative")
	}
	rec, err := s.lands.Wait(ctx, p.Run, min(time.Duration(p.TimeoutS*float64(time.Second)), maxWait))
	if rec != nil {
		return rec, nil // a refusal is in the record
	}
	var le *land.Error
	if errors.As(err, &le) && le.Kind == land.NotFound && errors.Is(le.Err, store.ErrNotFound) {
		return nil, rpc.Errorf(protocol.CodeNotFound, "use the run id job/land answered", "unknown landing run %q", p.Run)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, landError(err)
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
