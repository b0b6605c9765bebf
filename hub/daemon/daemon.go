// Package daemon is `hub serve`: one per HUB_HOME, it owns the unix socket,
// answers the protocol's requests, admits queued jobs (money and slot in one
// transaction), spawns a shim per job, fans events out to subscribers and
// wakes waiters, and on start re-attaches to live shims and settles dead ones.
// Jobs do not depend on it staying up: their shims carry on without it.
// A handler here is thin (a protocol.DaemonServer method; the generated
// dispatcher routes to it); the rules live in package job (its state
// machine in job/lifecycle) and the store, landing in package land, the
// forecast in package forecast, gc in package gc, and what it shows of a
// job in package view.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/forecast"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/land"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/internal/pgroup"
)

// ErrRunning means another daemon already serves this HUB_HOME.
var ErrRunning = errors.New("another hub daemon serves this HUB_HOME")

// Options configure the daemon. Paths and Engines are required.
type Options struct {
	Paths     config.Paths
	Engines   *engine.Registry
	Log       zerolog.Logger
	HubBinary string // the binary to run shims with; default os.Executable
	// ConfigDir holds the user's settings and profiles; default config.ConfigDir().
	ConfigDir string
	Version   string
	// Ready, if set, is closed once the socket accepts connections.
	Ready chan<- struct{}
	// Settings reads hub's settings for each request and each round of
	// admission; default config.Load (config.json and the daemon's
	// environment, read afresh each time).
	Settings func() (config.Settings, error)
	// Now is the daemon's clock; default time.Now.
	Now func() time.Time
	// Spawn starts the shim of job id, handing it lock: the job's lock
	// file, locked by the daemon, which the shim must take over before
	// the call returns (the daemon closes its copy then). Default: `hub
	// shim <id>` in a session of its own, so it outlives the daemon.
	Spawn func(id string, lock *os.File) error
	// ForecastEvery is how often live jobs' conflicts are forecast
	// (default 2s; negative: never).
	ForecastEvery time.Duration
}

// withDefaults fills in what o leaves unset.
func (o Options) withDefaults() Options {
	if o.HubBinary == "" {
		o.HubBinary, _ = os.Executable()
	}
	if o.ConfigDir == "" {
		o.ConfigDir = config.ConfigDir()
	}
	if o.Settings == nil {
		o.Settings = config.Load
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Spawn == nil {
		o.Spawn = o.spawnProcess
	}
	if o.ForecastEvery == 0 {
		o.ForecastEvery = forecastEvery
	}
	return o
}

// Server is a running daemon.
type Server struct {
	o      Options
	st     *store.Store
	cancel context.CancelFunc
	ln     net.Listener
	gate   *rpc.Gate

	subsMu sync.Mutex
	subs   map[*rpc.Conn]*subscriber

	// changed is closed and replaced whenever the store has news; waiters
	// block on it. lastCursor is the newest event fanned out.
	busMu      sync.Mutex
	changed    chan struct{}
	lastCursor int64

	pumpCh  chan struct{}
	schedCh chan struct{}

	loops sync.WaitGroup // pumpLoop, schedLoop and forecastLoop

	watchMu sync.Mutex
	// relaunches counts, per remote job, the relays started again.
	relaunches map[string]int
	// health is each remote queue's health as its runner last said.
	healthMu sync.Mutex
	health   map[string]healthReading
	watching map[string]bool

	forecast   *forecast.Forecaster
	lands      *land.Runs    // the landings running, each as work with its own record
	forecastCh chan struct{} // a forecast round is due now (a job committed, ended or landed)

	// logins are the device-flow logins; loginCtx ends them with the daemon.
	logins   logins
	loginCtx context.Context
}

// lockWait bounds how long a new daemon waits for one that is going away:
// its drain of the requests in flight, and a little more.
const lockWait = drainFor + 5*time.Second

// takeLock takes HUB_HOME's daemon lock. Held by a daemon that answers on
// the socket, it is ErrRunning. Held by one that does not answer, it is
// one on its way out (a daemon lets go of its lock last, after it removed
// its socket): the new one waits for it, up to lockWait, rather than exit
// and leave the client that started it waiting on a socket nobody makes.
func takeLock(ctx context.Context, lock *flock.Flock, p config.Paths) error {
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := lock.TryLock()
		if err != nil {
			return fmt.Errorf("lock %s: %w", p.DaemonLock(), err)
		}
		if ok {
			return nil
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		nc, err := rpc.Dial(dctx, p.Socket())
		cancel()
		if err == nil {
			nc.Close()
			return ErrRunning
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is held by a process that has not answered on %s for %s; if no hub daemon runs, find the holder (fuser %s) and stop it",
				p.DaemonLock(), p.Socket(), lockWait, p.DaemonLock())
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond): // a lock another process holds: nothing to wait on but polling
		}
	}
}

// Serve runs the daemon until ctx is done or a client asks it to shut down.
// Either way it hands over without a gap: it stops taking connections
// (removing its socket), lets the requests in flight finish and refuses
// new ones with CodeShuttingDown, closes its connections, and lets go of
// its lock last, at once after that; a daemon started meanwhile waits for
// the lock (takeLock) and serves the moment it is free.
func Serve(ctx context.Context, o Options) error {
	o = o.withDefaults()
	if err := o.Paths.Ensure(); err != nil {
		return err
	}
	// A bad setting in the environment this daemon was started with would
	// stay with it for its whole life: refuse to start instead.
	if _, err := config.CheckEnv(config.FromDaemon); err != nil {
		return err
	}
	lock := flock.New(o.Paths.DaemonLock())
	if err := takeLock(ctx, lock, o.Paths); err != nil {
		return err
	}
	defer lock.Unlock()
	st, err := store.Open(o.Paths.DB())
	if err == nil {
		if err = st.QuickCheck(ctx); err != nil {
			st.Close()
		}
	}
	if err != nil {
		return err
	}
	defer st.Close()
	// The server's own context: the caller's ending starts the shutdown
	// below, rather than cutting requests off.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s := &Server{o: o, st: st, cancel: cancel, gate: rpc.NewGate(shuttingDown), subs: map[*rpc.Conn]*subscriber{}, changed: make(chan struct{}),
		pumpCh: make(chan struct{}, 1), schedCh: make(chan struct{}, 1), watching: map[string]bool{}, forecastCh: make(chan struct{}, 1),
		logins: logins{m: map[string]*loginFlow{}}, loginCtx: sctx}
	s.forecast = forecast.New(st, o.Paths, o.Log, s.now, s.poke)
	s.lands = land.NewRuns(s.lander(), s.poke)
	if err := s.lands.Recover(sctx); err != nil {
		return err
	}
	if s.lastCursor, err = st.LastCursor(sctx); err != nil {
		return err
	}
	if s.ln, err = rpc.Listen(o.Paths.Socket()); err != nil {
		return err
	}
	// Closing the listener removes the socket only if it is still the one
	// it made: never a socket a next daemon made.
	defer s.ln.Close()
	stop := context.AfterFunc(ctx, s.beginShutdown)
	defer stop()
	s.recover(sctx)
	s.loops.Go(func() { s.pumpLoop(sctx) })
	s.loops.Go(func() { s.schedLoop(sctx) })
	if o.ForecastEvery > 0 {
		s.loops.Go(func() { s.forecastLoop(sctx, o.ForecastEvery) })
	}
	s.kick()
	o.Log.Info().Str("socket", o.Paths.Socket()).Int("pid", os.Getpid()).Msg("hub daemon serving")
	if o.Ready != nil {
		close(o.Ready)
	}
	err = rpc.Serve(sctx, s.ln, s.handle, &rpc.Options{Logger: &o.Log, Gate: s.gate}, func(c *rpc.Conn) {
		s.noteCaller(sctx, c)
		go func() {
			<-c.DisconnectNotify()
			s.subsMu.Lock()
			delete(s.subs, c)
			s.subsMu.Unlock()
		}()
	})
	s.beginShutdown()
	s.drain()
	s.ln.Close()
	s.lands.Drain() // their records end before a next daemon reads them
	// The lock goes last, at once after the socket; the store closes after
	// that (a next daemon may open it meanwhile: it is safe across processes).
	o.Log.Info().Int("pid", os.Getpid()).Msg("hub daemon stopped")
	lock.Unlock()
	s.loops.Wait() // before the store closes under them
	return err
}

// recover re-attaches to live shims and settles dead ones, and removes
// the limits' groups of jobs that are no longer running (a shim that died
// left its group; a landing's check is never live across a daemon).
func (s *Server) recover(ctx context.Context) {
	defer func() {
		swept, err := limit.Sweep(limit.Scope(s.o.Paths.Home), func(id string) bool {
			j, err := s.st.Job(ctx, id)
			return err == nil && !j.State.Terminal()
		})
		if err != nil {
			s.o.Log.Warn().Err(err).Msg("recover: the limits of ended jobs")
		}
		if len(swept) > 0 {
			s.o.Log.Info().Strs("jobs", swept).Msg("removed the limits' groups of ended jobs")
		}
	}()
	jobs, err := s.st.ListJobs(ctx, []protocol.State{protocol.StatePreparing, protocol.StateRunning,
		protocol.StateNeedsInput, protocol.StateVerifying}, "", 0)
	if err != nil {
		s.o.Log.Error().Err(err).Msg("recover: list jobs")
		return
	}
	for _, j := range jobs {
		// A daemon killed between admitting a job and spawning its shim may
		// not have made the job's folder yet: make it, so the lock can tell.
		if err := os.MkdirAll(s.o.Paths.JobDir(j.ID), 0o700); err != nil {
			s.o.Log.Error().Err(err).Str("job", j.ID).Msg("recover: job folder")
			continue
		}
		lock := flock.New(s.o.Paths.ShimLock(j.ID))
		ok, err := lock.TryLock()
		if err != nil {
			s.o.Log.Error().Err(err).Str("job", j.ID).Msg("recover: lock")
			continue
		}
		if ok {
			if j.State == protocol.StatePreparing && j.ShimPID == 0 {
				// Admitted, but the daemon died before the shim began: nothing
				// was made yet, so the job starts now on its reservation and slot.
				s.o.Log.Info().Str("job", j.ID).Msg("starting the shim of an admitted job")
				lock.Unlock()
				if err := s.spawn(ctx, j.ID); err == nil {
					continue
				}
				if ok, _ := lock.TryLock(); !ok {
					continue
				}
			}
			if s.relaunch(ctx, j.ID, lock) {
				continue
			}
			s.settle(ctx, j.ID, "the job's shim died while hub was down")
			lock.Unlock()
			continue
		}
		s.o.Log.Info().Str("job", j.ID).Msg("re-attached to live shim")
		s.watchLock(ctx, j.ID)
	}
}

// watchLock waits, off the request path, for the shim of id to let go of
// its lock (it exits, or dies), then settles the job if it did not end.
func (s *Server) watchLock(ctx context.Context, id string) {
	s.watchMu.Lock()
	if s.watching[id] {
		s.watchMu.Unlock()
		return
	}
	s.watching[id] = true
	s.watchMu.Unlock()
	go func() {
		defer func() {
			s.watchMu.Lock()
			delete(s.watching, id)
			s.watchMu.Unlock()
		}()
		lock := flock.New(s.o.Paths.ShimLock(id))
		for {
			if err := lock.Lock(); err != nil {
				return
			}
			if s.relaunch(ctx, id, lock) {
				continue // a remote job's new relay holds the lock now: watch it
			}
			s.settle(ctx, id, "the job's shim died")
			_ = lock.Unlock()
			return
		}
	}()
}

// maxRelaunches bounds how often a daemon starts a remote job's relay again.
const maxRelaunches = 5

// relaunch starts the relay of a remote job whose relay is gone, instead of
// settling the job: the job runs on a worker elsewhere, and its workflow
// outlives any relay; the new one finds it again. The caller holds the
// job's lock; relaunch lets go of it for the relay, and holds it again
// when it reports false (the job is not remote, or the relay would not
// start) so the caller settles the job.
func (s *Server) relaunch(ctx context.Context, id string, lock *flock.Flock) bool {
	j, err := s.st.Job(ctx, id)
	if err != nil || j.State.Terminal() {
		return false
	}
	if runner, err := s.runnerOf(ctx, id); err != nil || runner == "" {
		return false
	}
	s.watchMu.Lock()
	if s.relaunches == nil {
		s.relaunches = map[string]int{}
	}
	s.relaunches[id]++
	n := s.relaunches[id]
	s.watchMu.Unlock()
	if n > maxRelaunches {
		s.o.Log.Warn().Str("job", id).Int("times", n-1).Msg("the remote job's relay keeps dying: settling it")
		return false
	}
	_ = lock.Unlock()
	err = s.spawn(ctx, id)
	if err == nil {
		s.o.Log.Info().Str("job", id).Msg("started the remote job's relay again")
		return true
	}
	s.o.Log.Error().Err(err).Str("job", id).Msg("start the remote job's relay again")
	if ok, _ := lock.TryLock(); !ok {
		return true // somebody else holds the job now
	}
	return false
}

// settle ends a job whose shim is gone, if the shim did not end it.
func (s *Server) settle(ctx context.Context, id, reason string) {
	j, err := s.st.Job(ctx, id)
	if err != nil || j.State.Terminal() {
		s.poke()
		s.kick()
		return
	}
	s.o.Log.Warn().Str("job", id).Str("state", string(j.State)).Msg(reason)
	if err := shim.Settle(context.WithoutCancel(ctx), s.st, s.o.Engines, s.o.Paths, j, reason); err != nil {
		s.o.Log.Error().Err(err).Str("job", id).Msg("settle")
	}
	s.poke()
	s.kick()
}

// spawn starts the shim of job id (Options.Spawn) with the job's lock.
func (s *Server) spawn(ctx context.Context, id string) error {
	if err := os.MkdirAll(s.o.Paths.JobDir(id), 0o700); err != nil {
		return err
	}
	// Take the job's lock for the shim and hand it over, so the job is
	// never without an owner between spawn and the shim's first step.
	lockf, err := os.OpenFile(s.o.Paths.ShimLock(id), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lockf.Close()
	if err := shim.LockFile(lockf); err != nil {
		return fmt.Errorf("job %s is locked by another process: %w", id, err)
	}
	runner, err := s.runnerOf(ctx, id)
	if err != nil {
		return err
	}
	if runner != "" {
		err = s.o.startShim(id, lockf, runner, "relay", id)
	} else {
		err = s.o.Spawn(id, lockf)
	}
	if err != nil {
		return err
	}
	s.watchLock(ctx, id)
	return nil
}

// runnerOf is the program that runs job id in place of its shim when the
// job is on a remote queue, "" when it runs here.
func (s *Server) runnerOf(ctx context.Context, id string) (string, error) {
	j, err := s.st.Job(ctx, id)
	if err != nil {
		return "", err
	}
	p, err := store.DecodeSpec(j.Spec)
	if err != nil || p.Queue == "" {
		return "", nil // a spec the shim cannot read fails there, with the reason
	}
	set, err := s.o.Settings()
	if err != nil {
		return "", err
	}
	q, ok := set.Queues[p.Queue]
	if !ok {
		return "", fmt.Errorf("queue %s is no longer in config.json; put it back, or stop the job", p.Queue)
	}
	return q.RunnerCommand(s.o.HubBinary)
}

// spawnProcess is the default Spawn: `hub shim <id>`.
func (o Options) spawnProcess(id string, lock *os.File) error {
	return o.startShim(id, lock, o.HubBinary, "shim", id)
}

// startShim starts a job's shim (or a remote queue's relay, which stands
// in for it) in a session of its own, its output in the job's shim log,
// the lock handed over as fd 3.
func (o Options) startShim(id string, lock *os.File, name string, args ...string) error {
	logf, err := os.OpenFile(o.Paths.ShimLog(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "HUB_HOME="+o.Paths.Home)
	shim.HandLock(cmd, lock)
	cmd.Stdout, cmd.Stderr = logf, logf
	pgroup.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the lock it holds says when it is gone (its log says why)
	return nil
}

// kick asks the scheduler to admit queued jobs.
func (s *Server) kick() {
	select {
	case s.schedCh <- struct{}{}:
	default:
	}
}

func (s *Server) schedLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.schedCh:
			s.schedule(ctx)
		}
	}
}

// schedule admits queued jobs oldest first while slots and money allow.
func (s *Server) schedule(ctx context.Context) {
	set, err := s.o.Settings()
	if err != nil {
		s.o.Log.Error().Err(err).Msg("schedule: config")
		return
	}
	lim := store.Limits{MaxRunning: set.MaxRunning, MonthlyCap: micros.FromUSD(set.MonthlyCapUSD), QueueSlots: map[string]int{}}
	for name, q := range set.Queues {
		lim.QueueSlots[name] = q.Defaulted(name).Slots
	}
	queued, err := s.st.QueuedJobs(ctx)
	if err != nil {
		s.o.Log.Error().Err(err).Msg("schedule: queued jobs")
		return
	}
	for _, j := range queued {
		adm, err := s.st.Admit(ctx, j.ID, lim, s.now())
		if err != nil {
			if !errors.Is(err, store.ErrWrongState) {
				s.o.Log.Error().Err(err).Str("job", j.ID).Msg("admit")
			}
			continue
		}
		if !adm.Admitted {
			if j.Progress != "waiting: "+adm.Reason {
				_, _ = s.st.AppendEvent(ctx, j.ID, protocol.EventProgress, "waiting: "+adm.Reason, nil, s.now())
				s.poke()
			}
			continue
		}
		if err := s.spawn(ctx, j.ID); err != nil {
			msg := "could not start the job's shim: " + err.Error()
			// Not cut by a daemon stopping: a job left preparing holds its slot
			// until the next start recovers it.
			if _, err := job.Fail(context.WithoutCancel(ctx), s.st, j, protocol.CategoryPrepare, msg, s.now()); err != nil {
				s.o.Log.Error().Err(err).Str("job", j.ID).Str("spawn", msg).
					Msg("could not end a job whose shim did not start; it holds its slot until hub starts again")
			}
		}
		s.poke()
	}
}
