// Package world is hub's in-process test world: the daemon served in the
// test's own process on a real socket under a private HUB_HOME, each job's
// shim run as a goroutine of the same process (the daemon hands it the
// job's lock as it would hand it to `hub shim`), the real store, real git
// and real worker processes. It lets the daemon's and the shim's own tests
// drive admission, wake-ups, stop, settling and endings without building
// the hub binary. The e2e and fault suites, which kill processes, keep
// running the built binary; the helpers they share with this world live in
// hubtest.
package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/daemon"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/execengine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
)

// Options shape a world; the zero value is hub's defaults.
type Options struct {
	// Settings replaces hub's settings (default config.Defaults).
	Settings *config.Settings
	// Now is the daemon's clock (default time.Now).
	Now func() time.Time
	// Spawn, if set, replaces starting a job's shim: it gets the world,
	// the job and the job's lock (see daemon.Options.Spawn). Shim is the
	// default.
	Spawn func(w *World, id string, lock *os.File) error
	// ForecastEvery is how often the daemon forecasts conflicts (default
	// 100ms, so a test sees one soon; negative: never).
	ForecastEvery time.Duration
}

// World is a daemon served in the test's process, and a client of it.
type World struct {
	T     testing.TB
	Ctx   context.Context
	Env   *hubtest.Env
	Paths config.Paths
	// C is a client connected to the daemon.
	C *client.Client
	// Log collects what the daemon and the shims log.
	Log *hubtest.Buffer

	o       Options
	engines *engine.Registry
	logger  zerolog.Logger
	stop    context.CancelFunc
	served  chan error
	shims   sync.WaitGroup

	mu     sync.Mutex
	cancel map[string]context.CancelFunc // a running shim's, by job
}

// New serves a daemon in this process under a fresh HUB_HOME and connects
// to it. Everything stops, shims included, when the test ends.
func New(t testing.TB, o Options) *World {
	t.Helper()
	env := hubtest.Isolate(t)
	w := &World{T: t, Env: env, Paths: config.Paths{Home: env.Home}, o: o, Log: &hubtest.Buffer{},
		served: make(chan error, 1), cancel: map[string]context.CancelFunc{}}
	w.logger = zerolog.New(w.Log).With().Timestamp().Logger()
	w.engines = engine.NewRegistry(execengine.New())
	w.Ctx = hubtest.Deadline(t, 2*time.Minute)
	set := config.Defaults()
	if o.Settings != nil {
		set = *o.Settings
	}
	if o.ForecastEvery == 0 {
		o.ForecastEvery = 100 * time.Millisecond
	}
	spawn := o.Spawn
	if spawn == nil {
		spawn = (*World).Shim
	}
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	ready := make(chan struct{})
	go func() {
		w.served <- daemon.Serve(ctx, daemon.Options{Paths: w.Paths, Engines: w.engines, Log: w.logger,
			Version: "test", Ready: ready, Now: o.Now, ForecastEvery: o.ForecastEvery,
			Settings: func() (config.Settings, error) { return set, nil },
			Spawn:    func(id string, lock *os.File) error { return spawn(w, id, lock) }})
	}()
	select {
	case <-ready:
	case err := <-w.served:
		t.Fatalf("the daemon did not start: %v", err)
	case <-w.Ctx.Done():
		t.Fatal("the daemon did not start in time")
	}
	c, err := client.Connect(w.Ctx, w.Paths, client.Options{ClientName: "world"})
	if err != nil {
		t.Fatal(err)
	}
	w.C = c
	t.Cleanup(w.close)
	return w
}

// close stops the daemon and every shim, and waits for them.
func (w *World) close() {
	w.C.Close()
	w.stop()
	select {
	case err := <-w.served:
		if err != nil && !errors.Is(err, context.Canceled) {
			w.T.Errorf("the daemon ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		w.T.Errorf("the daemon did not stop in 30s")
	}
	w.mu.Lock()
	for _, cancel := range w.cancel {
		cancel()
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.shims.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		w.T.Errorf("shims still running 30s after the test")
	}
	if w.T.Failed() {
		w.T.Logf("--- the world's log ---\n%s", w.Log.String())
	}
}

// Shim is the default spawner: the job's shim as a goroutine of this
// process, taking over a duplicate of the daemon's locked lock file (the
// same open file description, so the same lock).
func (w *World) Shim(id string, lock *os.File) error {
	handed, err := dupLock(lock)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.mu.Lock()
	w.cancel[id] = cancel
	w.mu.Unlock()
	w.shims.Go(func() {
		defer cancel()
		err := shim.Run(ctx, shim.Options{Paths: w.Paths, JobID: id, Engines: w.engines, Lock: handed, InProcess: true,
			Log: w.logger.With().Str("job", id).Logger(), StopGrace: time.Second})
		if err != nil {
			w.logger.Error().Err(err).Str("job", id).Msg("shim")
		}
	})
	return nil
}

// Repo makes a git repository with one commit of files and returns its path.
func (w *World) Repo(files map[string]string) string {
	w.T.Helper()
	return hubtest.Repo(w.T, filepath.Join(w.T.TempDir(), "repo"), files)
}

// Start starts an exec job running command in repo.
func (w *World) Start(repo, command string, tweak ...func(*protocol.StartParams)) protocol.StartResult {
	w.T.Helper()
	p := protocol.StartParams{Task: "world job", Repo: repo, Engine: "exec", Exec: command}
	for _, f := range tweak {
		f(&p)
	}
	return hubtest.Daemon(w.T, w.C).JobStart(w.Ctx, p)
}

// Status is job/status.
func (w *World) Status(id string) protocol.JobStatus {
	w.T.Helper()
	return hubtest.Daemon(w.T, w.C).JobStatus(w.Ctx, protocol.IDParams{ID: id})
}

// Until polls job/status until ok holds, or fails the test.
func (w *World) Until(id string, ok func(protocol.JobStatus) bool) protocol.JobStatus {
	w.T.Helper()
	for {
		st := w.Status(id)
		if ok(st) {
			return st
		}
		select {
		case <-w.Ctx.Done():
			w.T.Fatalf("job %s: condition not met in time; last status %+v", id, st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Ended waits, through job/wait, until every job ended, and returns their statuses.
func (w *World) Ended(ids ...string) []protocol.JobStatus {
	w.T.Helper()
	for {
		wr := hubtest.Daemon(w.T, w.C).JobWait(w.Ctx, protocol.WaitParams{IDs: ids, TimeoutS: 60})
		all := len(wr.Jobs) == len(ids)
		for _, st := range wr.Jobs {
			all = all && st.State.Terminal()
		}
		if all {
			return wr.Jobs
		}
		if w.Ctx.Err() != nil {
			w.T.Fatalf("jobs %v did not end in time: %+v", ids, wr.Jobs)
		}
	}
}

// Events is the job's journal, oldest first.
func (w *World) Events(id string) []protocol.Event {
	w.T.Helper()
	return hubtest.Daemon(w.T, w.C).JobEvents(w.Ctx, protocol.EventsParams{ID: id}).Events
}

// Store opens the world's store, for what the protocol does not show.
func (w *World) Store() *store.Store {
	w.T.Helper()
	st, err := store.Open(w.Paths.DB())
	if err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(func() { st.Close() })
	return st
}

// String names the world in a failure.
func (w *World) String() string { return fmt.Sprintf("world at %s", w.Paths.Home) }
