package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// ErrOwned means another shim already runs the job.
var ErrOwned = errors.New("another shim owns this job")

// Options configure a shim. Engines and Paths are required.
type Options struct {
	Paths     config.Paths
	JobID     string
	Engines   *engine.Registry
	HubBinary string // put first on the worker's PATH; default os.Executable
	Log       zerolog.Logger
	// StopGrace is how long a stopped worker gets between SIGTERM and SIGKILL (default 5s).
	StopGrace time.Duration
	// Lock, if set, is the job's lock file, locked by the daemon that
	// started this shim in its own process; the shim takes it over (and
	// closes it at its end). Otherwise the lock comes as LockFDEnv, or is
	// taken here.
	Lock *os.File
	// InProcess: the shim runs inside the daemon's process (the in-process
	// test world), so a peer on the job's socket with the shim's own pid
	// is the daemon, not the worker; the worker is always a process the
	// shim started.
	InProcess bool
}

// core is what every command hub runs for a job needs: the worker's
// checkout made ready, the worker, the job's verify and landing's check of
// an ended job's work (Checker) alike: the job's record, its sandbox and
// limits, its ports, its environment and what hub observed of them.
//
// Who owns what: the fields under "set once" are written before any other
// goroutine starts and only read after; the fields under "the main
// goroutine's" belong to the goroutine that runs the job (execute) or the
// check (Checker.Run), and nothing else touches them; every other field is
// guarded by the mutex just above it, or is safe for concurrent use.
type core struct {
	// Set once.
	o      Options
	st     *store.Store
	job    *store.Job
	params protocol.StartParams
	repo   *gitx.Repo
	red    *redact.Redactor
	// self is the shim's pid: a peer on the job's socket that is this
	// process or one of its descendants is the worker (see onConn).
	self int
	// subreaper is the shim's pid once it is a child subreaper (0: not).
	subreaper int
	// events is where what hub observes goes (record): the job's journal
	// (the shim), or the log (landing's check, which writes nothing into
	// the ended job's journal: its outcome is landing's to record).
	events func(ctx context.Context, kind protocol.EventKind, text string, data any)

	// The stop: any goroutine asks for it once (requestStop: an RPC, the
	// limits' watch); the command running then takes it (watchStop).
	stopOnce sync.Once
	stopCh   chan string

	// The main goroutine's.
	// env is how the job's checkout was made ready, and setupTook how long
	// that took; versions the tools' versions asked so far (the cache key);
	// verifyDeps what verify's checkout got of each dependency tree
	// (protocol.Verify.Deps), set by setUp; observed the commands hub ran
	// and saw; leftovers the processes a worker or verify left running.
	env        []protocol.EnvStep
	setupTook  time.Duration
	versions   map[string]string
	verifyDeps []string
	observed   []protocol.ObservedCommand
	leftovers  []protocol.LeftoverProcess

	// ports is the job's port range (nil: none free), taken once
	// (portsAsked) by ownEnv, from whichever goroutine asks first.
	portsMu    sync.Mutex
	ports      *ports
	portsAsked bool

	// keeps are the cache fills started in the background after a
	// checkout was set up; the job waits for them (a while) before it
	// ends. stored has a channel per fill, closed once its entry is made
	// (or will not be): verify waits for those.
	keeps    sync.WaitGroup
	storedMu sync.Mutex
	stored   []chan struct{}
	// bg are the leaders of hub's own commands running in the background
	// (an install filling the cache): no command of the job's takes them
	// for its leftovers.
	bgMu sync.Mutex
	bg   []int

	// limits are the job's (sandboxed levels; nil otherwise), set up by
	// startLimits before its watch starts; diskStop stops the watch
	// (watchLimits), which closes watchDone when it returned.
	limits    *limit.Group
	diskStop  context.CancelFunc
	watchDone chan struct{}
	// limitHit is the first limit the job hit, from the watch or the main goroutine.
	limitMu  sync.Mutex
	limitHit string
}

// shim runs one job from its checkout to its end: core, and what only a
// job with a worker has.
type shim struct {
	core

	// Set once, before the worker starts: its engine and where it runs.
	eng engine.Engine
	dir string

	notes    *Notifier     // tells the daemon the job changed; safe for concurrent use
	activity chan struct{} // the worker's sign of life, from the RPC goroutines to supervise

	// Questions: asked and answered on RPC goroutines.
	askMu   sync.Mutex
	waiting map[string]chan string // question id → answer
	asking  int

	// claimed is what the worker said it ran (RPC goroutines).
	claimedMu sync.Mutex
	claimed   []string

	// The main goroutine's.
	// checkout is hub's record of the job's checkout (nil without a repo);
	// refsBefore the user's refs before the run (a linked checkout's
	// worker could move them); refChanges the refs besides the job's
	// branch that moved during the run; repairs what hub put back of the
	// worker's git state before it committed.
	checkout   *gitx.Checkout
	refsBefore map[string]string
	refChanges []protocol.RefChange
	repairs    []protocol.GitRepair
	// shared watches the repository's shared git config and hooks (a
	// linked checkout's only); repoChanges are what it found and put back.
	shared      *gitx.SharedWatch
	repoChanges []protocol.RepoChange
	// engineAt is when the engine last started: the worker's trace entry
	// begins there. finishFrom is where the finish phase starts: the end
	// of the last phase.
	engineAt   time.Time
	finishFrom time.Time

	// starts counts the engine's starts (a fallback starts another), so
	// the steps of each run keep ids of their own.
	starts atomic.Int32
}

// newShim is the shim of job j, its events going to the job's journal.
func newShim(o Options, st *store.Store, j *store.Job, notes *Notifier) *shim {
	s := &shim{core: core{o: o, st: st, job: j, stopCh: make(chan string, 1), red: secrets(), self: os.Getpid()},
		notes: notes, activity: make(chan struct{}, 1), waiting: map[string]chan string{}}
	s.events = s.journal
	return s
}

// Run runs the job to its end. It returns ErrOwned when another shim holds
// the job, and an error when the job cannot be run at all (it is then closed
// as failed when that is possible).
func Run(ctx context.Context, o Options) error {
	if o.StopGrace == 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.HubBinary == "" {
		o.HubBinary, _ = os.Executable()
	}
	if err := os.MkdirAll(o.Paths.JobDir(o.JobID), 0o700); err != nil {
		return err
	}
	release, err := lockJob(o.Paths.ShimLock(o.JobID), o.Lock)
	if err != nil {
		return err
	}
	defer release()
	// Whatever the worker starts stays below the shim, however it forks,
	// so it can be found and ended when the worker's command ends.
	// In-process (the test world) other shims share the process, so its
	// tree is not this job's alone: the job's processes are found by their
	// group and HUB_JOB only.
	subreaper := 0
	if !o.InProcess {
		if err := proc.BecomeSubreaper(); err != nil {
			o.Log.Warn().Err(err).Msg("not a child subreaper: a worker's setsid children are found by HUB_JOB only (on Linux; elsewhere see proc.BecomeSubreaper)")
		} else {
			subreaper = os.Getpid()
		}
	}

	st, err := store.Open(o.Paths.DB())
	if err != nil {
		return err
	}
	defer st.Close()
	j, err := st.Job(ctx, o.JobID)
	if err != nil {
		return err
	}
	if j.State != protocol.StatePreparing {
		return fmt.Errorf("job %s is %s; a shim only takes a job that is preparing", j.ID, j.State)
	}
	s := newShim(o, st, j, NewNotifier(o.Paths.Socket(), j.ID))
	s.subreaper = subreaper
	if s.params, err = store.DecodeSpec(j.Spec); err != nil {
		return s.fail(ctx, err.Error())
	}
	start, _ := proc.StartTime(os.Getpid())
	if err := st.Update(ctx, j.ID, func(r *store.Job) error {
		r.ShimPID, r.ShimStart = os.Getpid(), start
		return nil
	}); err != nil {
		return err
	}

	nctx, ncancel := context.WithCancel(context.Background())
	defer ncancel()
	go s.notes.Run(nctx)

	_ = os.Remove(o.Paths.ShimSocket(j.ID))
	ln, err := rpc.Listen(o.Paths.ShimSocket(j.ID))
	if err != nil {
		return s.fail(ctx, fmt.Sprintf("cannot open the job's socket: %v", err))
	}
	sctx, scancel := context.WithCancel(context.Background())
	go rpc.Serve(sctx, ln, s.handle, &rpc.Options{Logger: &o.Log}, s.onConn)
	defer func() {
		scancel()
		ln.Close()
		os.Remove(o.Paths.ShimSocket(j.ID))
	}()

	s.execute(ctx)
	s.poke()
	// Give the notifier a moment to tell the daemon about the ending.
	s.notes.Flush()
	s.waitKeeps()
	return nil
}

// fail closes the job as failed before it ever ran.
func (s *shim) fail(ctx context.Context, msg string) error {
	_, err := job.Fail(ctx, s.st, s.job, protocol.CategoryPrepare, msg, time.Now().UTC())
	s.poke()
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// record tells where the job's events go (core.events) what hub observed.
func (c *core) record(ctx context.Context, kind protocol.EventKind, text string, data any) {
	c.events(ctx, kind, text, data)
}

// journal appends an event to the job's journal in the store and tells the daemon.
func (s *shim) journal(ctx context.Context, kind protocol.EventKind, text string, data any) {
	now := time.Now().UTC()
	_, err := s.st.AppendEvent(ctx, s.job.ID, kind, text, data, now)
	if err != nil {
		s.o.Log.Error().Err(err).Str("kind", string(kind)).Msg("append event")
	}
	s.poke()
}

// setState moves the job (its state event goes to the journal) and tells the
// daemon; the store refuses a move the job's state machine does not allow.
func (s *shim) setState(ctx context.Context, to protocol.State, reason string) error {
	now := time.Now().UTC()
	_, err := s.st.SetState(ctx, s.job.ID, nil, to, reason, now)
	if err != nil {
		return err
	}
	s.poke()
	return nil
}

func (s *shim) poke() { s.notes.Poke() }

func (s *shim) touch() {
	select {
	case s.activity <- struct{}{}:
	default:
	}
}

// workerPeer is the key of a connection's value that says whether the
// process that connected is the job's worker.
type workerPeer struct{}

// onConn tells the worker's connections from the daemon's, by who
// connected: the shim itself or a process it started, however far down
// (the shim is a child subreaper, so a worker's double fork or setsid still
// leaves its processes below the shim), is the worker. So is a peer hub
// cannot place: one gone before it was accepted, or with no pid here. The
// daemon is neither: it spawned the shim, and lives on while it calls.
// Under bubblewrap the worker has a pid namespace of its own, but the
// kernel gives the shim the worker's pid as seen from the shim's
// namespace, so the walk up to the shim works the same.
// Deciding at connect time means a worker cannot hand its connection to a
// process outside the tree and be trusted for it.
// Another job's worker is a worker too: it may not answer, steer or stop
// this job either.
func (s *shim) onConn(c *rpc.Conn) {
	pid := c.PeerPID()
	_, err := proc.StartTime(pid) // fails for a peer gone (or a zombie)
	worker := pid <= 0 || err != nil || proc.IsDescendant(pid, s.self)
	if s.o.InProcess && pid == s.self {
		worker = false // the daemon, in whose process this shim runs
	}
	if !worker {
		other, err := WorkerOf(context.Background(), s.st, pid)
		worker = other != nil || err != nil
	}
	c.SetValue(workerPeer{}, worker)
}

// fromWorker reports whether c is the worker's connection (see onConn).
func fromWorker(c *rpc.Conn) bool {
	w, ok := c.Value(workerPeer{}).(bool)
	return !ok || w
}

// handle serves the job's socket: the worker's questions (a blocker is a
// question of kind blocker) and progress, and the daemon's replies,
// steering and stop. A worker may only ask and report: answering its own
// question, or stopping or steering itself, is refused.
func (s *shim) handle(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
	if sp, ok := protocol.SpecOf(req.Method); ok && sp.From != protocol.PartyWorker {
		if fromWorker(c) {
			return nil, rpc.Errorf(protocol.CodeRefused,
				"a worker asks with `hub ask` (a blocker: `hub ask --kind blocker`) and reports with `hub progress`; "+
					"only the supervisor answers, steers or stops a job, through the hub daemon",
				"%s is the supervisor's, not the worker's: the job's own worker cannot answer, steer or stop the job", req.Method)
		}
	}
	res, served, err := protocol.DispatchShim(ctx, s, req.Method, func(p any) error { return decode(req, p) })
	if !served {
		return nil, rpc.MethodNotFound(req.Method)
	}
	return res, err
}

// ShimSteer: a steering message is queued for the worker; the worker's
// next progress report or tool result takes it. It counts as activity.
func (s *shim) ShimSteer(context.Context, protocol.ShimSteerParams) (*protocol.Empty, error) {
	s.touch()
	return &protocol.Empty{}, nil
}

// ShimStop stops the worker.
func (s *shim) ShimStop(_ context.Context, p protocol.ShimStopParams) (*protocol.Empty, error) {
	s.requestStop(p.Reason)
	return &protocol.Empty{}, nil
}

// The shim serves every request its Specs route to it.
var _ protocol.ShimServer = (*shim)(nil)

// decode reads a request's params into v strictly, as the daemon does: a
// key v does not take is refused, naming it, rather than dropped.
func decode(req *jsonrpc2.Request, v any) error {
	if req.Params == nil {
		return rpc.Errorf(protocol.CodeInvalidParams, "send the parameters the method documents", "missing params")
	}
	return rpc.DecodeParams(req, v)
}

func (s *core) requestStop(reason string) {
	if reason == "" {
		reason = "stopped by request"
	}
	s.stopOnce.Do(func() { s.stopCh <- reason })
}

func (s *shim) checkJob(id string) error {
	if id != "" && id != s.job.ID {
		return rpc.Errorf(protocol.CodeInvalidParams, "use the HUB_JOB of your own environment", "this socket serves job %s, not %s", s.job.ID, id)
	}
	return nil
}

func (s *shim) WorkerProgress(ctx context.Context, p protocol.ProgressParams) (*protocol.ProgressResult, error) {
	if err := s.checkJob(p.Job); err != nil {
		return nil, err
	}
	res := &protocol.ProgressResult{}
	if note := s.red.String(p.Note); note != "" {
		s.claimedMu.Lock()
		s.claimed = append(s.claimed, note)
		s.claimedMu.Unlock()
		s.record(ctx, protocol.EventProgress, note, nil)
	}
	s.touch()
	steers, err := s.st.TakeSteers(ctx, s.job.ID, time.Now().UTC())
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeInternal, "", "read steering: %v", err)
	}
	for _, m := range steers {
		res.Steer = append(res.Steer, m.Text)
	}
	if len(steers) > 0 {
		s.poke()
	}
	return res, nil
}

const noAnswer = "No answer from the supervisor in time. Go on with the most conservative choice, and name the open question in your final summary."

func (s *shim) WorkerAsk(ctx context.Context, p protocol.AskParams) (*protocol.AskResult, error) {
	if err := s.checkJob(p.Job); err != nil {
		return nil, err
	}
	text := s.red.String(p.Question)
	if text == "" {
		return nil, rpc.Errorf(protocol.CodeInvalidParams, "ask a question in words", "the question is empty")
	}
	kind := p.Kind
	if kind == "" {
		kind = "question"
	}
	now := time.Now().UTC()
	wait := time.Duration(s.params.AskTimeoutS) * time.Second
	q := &store.Question{ID: newQuestionID(), JobID: s.job.ID, Kind: kind, Text: text, Context: s.red.String(p.Context),
		AskedAt: now, ExpiresAt: now.Add(wait)}
	ch := make(chan string, 1)
	s.askMu.Lock()
	s.waiting[q.ID] = ch
	s.asking++
	s.askMu.Unlock()
	defer func() {
		s.askMu.Lock()
		delete(s.waiting, q.ID)
		s.asking--
		s.askMu.Unlock()
		s.touch()
	}()
	if err := s.st.AddQuestion(ctx, q, now); err != nil {
		return nil, rpc.Errorf(protocol.CodeWrongState, "", "cannot ask now: %v", err)
	}
	s.poke()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case ans := <-ch:
		return &protocol.AskResult{QuestionID: q.ID, Answer: ans}, nil
	case <-timer.C:
		err := s.st.ExpireQuestion(context.Background(), s.job.ID, q.ID, time.Now().UTC())
		if errors.Is(err, store.ErrWrongState) {
			// Answered in the same instant: the answer wins.
			select {
			case ans := <-ch:
				return &protocol.AskResult{QuestionID: q.ID, Answer: ans}, nil
			case <-time.After(time.Second):
			}
		}
		s.poke()
		return &protocol.AskResult{QuestionID: q.ID, TimedOut: true, Instruction: noAnswer}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *shim) ShimReply(ctx context.Context, p protocol.ShimReplyParams) (*protocol.ReplyResult, error) {
	q, err := s.st.AnswerQuestion(ctx, s.job.ID, p.QuestionID, p.Text, time.Now().UTC())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, rpc.Errorf(protocol.CodeNotFound, "check the job's status for its pending question", "%v", err)
	case errors.Is(err, store.ErrWrongState):
		return nil, rpc.Errorf(protocol.CodeWrongState, "the worker went on without it; steer it instead if it still matters", "%v", err)
	case err != nil:
		return nil, rpc.Errorf(protocol.CodeInternal, "", "%v", err)
	}
	s.poke()
	s.askMu.Lock()
	ch := s.waiting[q.ID]
	s.askMu.Unlock()
	if ch != nil {
		ch <- p.Text
	}
	return &protocol.ReplyResult{ID: s.job.ID, QuestionID: q.ID, Delivered: ch != nil}, nil
}

func (s *shim) isAsking() bool {
	s.askMu.Lock()
	defer s.askMu.Unlock()
	return s.asking > 0
}
