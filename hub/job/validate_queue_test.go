package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/execengine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/router"
)

// A job names a queue of config.json, with a repo for its workers to get;
// the start's notes say where it runs.
func TestValidateQueue(t *testing.T) {
	gitEnv(t)
	repo := newRepo(t)
	set := config.Defaults()
	set.Queues = map[string]config.Queue{"far": {Runner: "temporal", Address: "t:7233", Remote: "origin"}}
	validate := func(p protocol.StartParams) (*Request, error) {
		return Validate(context.Background(), p, set, engine.NewRegistry(execengine.New()), RouteInputs{Now: time.Now(), Money: router.Money{CapMicros: 100e6}})
	}
	r, err := validate(protocol.StartParams{Task: "t", Repo: repo, Engine: "exec", Exec: "true", Queue: "far"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Params.Queue != "far" || !strings.Contains(strings.Join(r.Notes, "\n"), "runs on queue far (temporal, task queue far), not on this machine") {
		t.Errorf("params %+v, notes %q", r.Params, r.Notes)
	}
	for _, c := range []struct {
		p    protocol.StartParams
		want string
	}{
		{protocol.StartParams{Task: "t", Repo: repo, Engine: "exec", Exec: "true", Queue: "near"}, `there is no queue "near"`},
		{protocol.StartParams{Task: "t", Cwd: repo, Kind: protocol.KindRead, Engine: "exec", Exec: "true", Queue: "far"}, "needs a repo"},
	} {
		_, err := validate(c.p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "queue" || !strings.Contains(fe.Msg, c.want) || fe.Hint == "" {
			t.Errorf("%+v: %v, want %q on queue", c.p, err, c.want)
		}
	}
}
