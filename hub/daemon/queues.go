package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/router"
)

// QueueHealth is what a queue's runner says of it (`<runner> health <queue>`,
// one JSON object on stdout): its workers seen lately, or why it cannot say.
type QueueHealth struct {
	Workers int    `json:"workers"`
	Error   string `json:"error,omitempty"`
}

const (
	// healthFresh is how long a queue's health is taken as read;
	// healthFreshBad, when it had no worker or could not be read.
	healthFresh    = 15 * time.Second
	healthFreshBad = 2 * time.Second
	// healthTimeout bounds one reading, on the start path.
	healthTimeout = 3 * time.Second
)

type healthReading struct {
	at time.Time
	h  QueueHealth
}

// places are where an auto job may run: this machine, then each queue that
// takes auto jobs, with its free slots and, when this machine has none
// free, its health (read from its runner at most every healthFresh).
func (s *Server) places(ctx context.Context, set config.Settings) []router.Place {
	var auto []string
	for name, q := range set.Queues {
		if q.Auto {
			auto = append(auto, name)
		}
	}
	if len(auto) == 0 {
		return nil
	}
	sort.Strings(auto)
	held, err := s.st.SlotsHeld(ctx)
	if err != nil {
		return nil
	}
	here := router.Place{Slots: set.MaxRunning, Free: max(0, set.MaxRunning-held[""])}
	out := []router.Place{here}
	for _, name := range auto {
		q := set.Queues[name].Defaulted(name)
		p := router.Place{Queue: name, Slots: q.Slots, Free: max(0, q.Slots-held[name])}
		if here.Free == 0 { // only then does the choice turn on it
			h := s.queueHealth(ctx, name, q)
			p.Workers, p.Health = h.Workers, h.Error
		}
		out = append(out, p)
	}
	return out
}

// queueHealth is the queue's health as its runner last said, read again
// when it is older than healthFresh.
func (s *Server) queueHealth(ctx context.Context, name string, q config.Queue) QueueHealth {
	s.healthMu.Lock()
	r, ok := s.health[name]
	s.healthMu.Unlock()
	fresh := healthFresh
	if r.h.Error != "" || r.h.Workers == 0 {
		fresh = healthFreshBad // a queue coming up is seen soon
	}
	if ok && s.now().Sub(r.at) < fresh {
		return r.h
	}
	h := s.readHealth(ctx, name, q)
	s.healthMu.Lock()
	if s.health == nil {
		s.health = map[string]healthReading{}
	}
	s.health[name] = healthReading{at: s.now(), h: h}
	s.healthMu.Unlock()
	return h
}

func (s *Server) readHealth(ctx context.Context, name string, q config.Queue) QueueHealth {
	runner, err := q.RunnerCommand(s.o.HubBinary)
	if err != nil {
		return QueueHealth{Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "health", name)
	cmd.Env = append(os.Environ(), "HUB_HOME="+s.o.Paths.Home, "HUB_CONFIG_DIR="+s.o.ConfigDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var h QueueHealth
	if jerr := json.Unmarshal(out, &h); jerr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		if ctx.Err() != nil {
			msg = fmt.Sprintf("its runner did not say within %s", healthTimeout)
		}
		return QueueHealth{Error: "cannot read its health: " + msg}
	}
	return h
}
