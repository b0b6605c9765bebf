package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/micros"
)

// Worker runs jobs of a task queue on this machine, with hub's own shim,
// under its own HUB_HOME (Paths).
type Worker struct {
	Paths     config.Paths
	Client    client.Client
	Engines   *engine.Registry
	HubBinary string // runs `shim <id>`; default os.Executable
	Identity  string // who this worker is, in the job's evidence
	Log       zerolog.Logger
	// Every is how often the worker reports its journal and heartbeats
	// (default 250ms).
	Every time.Duration
	// CheckpointEvery is how often a running job's work is pushed to the
	// remote as a checkpoint (default 30s), so a worker that dies loses
	// at most that much of it: the next attempt starts from there.
	CheckpointEvery time.Duration

	clones sync.Mutex // one git operation at a time on a clone
}

// withDefaults fills in what w leaves unset; Serve calls it before any
// activity runs (they share w).
func (w *Worker) withDefaults() {
	if w.HubBinary == "" {
		w.HubBinary, _ = os.Executable()
	}
	if w.Every == 0 {
		w.Every = 250 * time.Millisecond
	}
	if w.CheckpointEvery == 0 {
		w.CheckpointEvery = 30 * time.Second
	}
}

// Run is the activity: it runs the job in a clone of its remote, pushes
// hub/<id> there, and returns how the job ended.
func (w *Worker) Run(ctx context.Context, in Input) (*Ending, error) {
	info := activity.GetInfo(ctx)
	log := w.Log.With().Str("job", in.ID).Int32("attempt", info.Attempt).Logger()
	log.Info().Msg("job taken")

	st, err := store.Open(w.Paths.DB())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	clone, err := w.clone(ctx, in)
	if err != nil {
		return nil, temporal.NewApplicationError(err.Error(), "clone")
	}
	checkpoint, err := w.checkpointOf(ctx, in, clone)
	if err != nil {
		return nil, temporal.NewApplicationError(err.Error(), "clone")
	}
	j, err := w.localJob(ctx, st, in, clone, localID(in.ID, info.Attempt), checkpoint)
	if err != nil {
		return nil, err
	}
	// As progress: until the job says more, its status says where it runs.
	taken := fmt.Sprintf("attempt %d taken by worker %s", info.Attempt, w.Identity)
	if checkpoint != "" {
		taken += ", from checkpoint " + view.ShortSHA(checkpoint)
	}
	if err := w.Client.SignalWorkflow(ctx, in.ID, info.WorkflowExecution.RunID, SignalEvents,
		[]Event{{Event: protocol.Event{Kind: protocol.EventProgress, Text: taken, At: time.Now().UTC()}}}); err != nil {
		return nil, err
	}
	if !j.State.Terminal() {
		left, err := w.runShim(ctx, st, in, j, info, clone, log)
		if err != nil {
			return nil, err
		}
		if left {
			return nil, w.handBack(context.WithoutCancel(ctx), st, in, j.ID, clone)
		}
	}
	if j, err = st.Job(context.WithoutCancel(ctx), j.ID); err != nil {
		return nil, err
	}
	return w.finish(context.WithoutCancel(ctx), st, in, j, clone)
}

// handBack pushes what a job stopped by the worker's shutdown left (its
// salvage commit) as the job's checkpoint, and returns the error that has
// Temporal give the job to another worker.
func (w *Worker) handBack(ctx context.Context, st *store.Store, in Input, id, clone string) error {
	j, err := st.Job(ctx, id)
	if err == nil && j.HeadSHA != "" && j.HeadSHA != j.BaseSHA {
		w.clones.Lock()
		_, err = gitx.Git(ctx, clone, "push", "--quiet", "--force", "--no-verify", in.Remote, j.HeadSHA+":"+wipRef(in.ID))
		w.clones.Unlock()
		if err != nil {
			w.Log.Warn().Err(err).Str("job", in.ID).Msg("push the job's last checkpoint")
		}
	}
	return temporal.NewApplicationError("worker "+w.Identity+" shut down; another worker takes the job from its checkpoint", "shutdown")
}

// localID is the id of attempt n of job id in a worker's store: the job's
// own id first, then id-n (a worker that died and came back may hold an
// earlier attempt of the same job).
func localID(id string, attempt int32) string {
	if attempt <= 1 {
		return id
	}
	return fmt.Sprintf("%s-%d", id, attempt)
}

// wipRef is where a job's checkpoints go on its remote.
func wipRef(id string) string { return "refs/hub/wip/" + id }

// checkpointOf fetches the job's last checkpoint from the remote, if an
// earlier attempt left one, and returns it ("" when there is none).
func (w *Worker) checkpointOf(ctx context.Context, in Input, clone string) (string, error) {
	w.clones.Lock()
	defer w.clones.Unlock()
	out, err := gitx.Git(ctx, clone, "ls-remote", in.Remote, wipRef(in.ID))
	if err != nil {
		return "", fmt.Errorf("look for the job's checkpoint on %s: %w", in.Remote, err)
	}
	if len(trim(out)) == 0 {
		return "", nil
	}
	if _, err := gitx.Git(ctx, clone, "fetch", "--quiet", "--no-tags", in.Remote, "+"+wipRef(in.ID)+":"+wipRef(in.ID)); err != nil {
		return "", fmt.Errorf("fetch the job's checkpoint from %s: %w", in.Remote, err)
	}
	sha, err := gitx.Git(ctx, clone, "rev-parse", "--verify", wipRef(in.ID)+"^{commit}")
	if err != nil {
		return "", err
	}
	cp := string(trim(sha))
	if _, err := gitx.Git(ctx, clone, "merge-base", "--is-ancestor", in.BaseSHA, cp); err != nil {
		w.Log.Warn().Str("job", in.ID).Str("checkpoint", cp).Msg("a checkpoint not on the job's base: starting from the base")
		return "", nil
	}
	return cp, nil
}

// clone makes sure this worker has a clone of the job's remote holding its
// base, and returns its top. Every fetch and push names the remote's URL
// as the job gave it, never the clone's "origin": a job's worker can write
// the clone's config.
func (w *Worker) clone(ctx context.Context, in Input) (string, error) {
	w.clones.Lock()
	defer w.clones.Unlock()
	sum := sha256.Sum256([]byte(in.Remote))
	dir := filepath.Join(w.Paths.Home, "clones", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		tmp := dir + ".new"
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return "", err
		}
		if _, err := gitx.Git(ctx, "", "clone", "--quiet", "--no-checkout", in.Remote, tmp); err != nil {
			return "", fmt.Errorf("clone %s: %w", in.Remote, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
	}
	if _, err := gitx.Git(ctx, dir, "fetch", "--quiet", "--no-tags", in.Remote, "+"+in.BaseRef+":"+in.BaseRef); err != nil {
		return "", fmt.Errorf("fetch the job's base from %s: %w", in.Remote, err)
	}
	got, err := gitx.Git(ctx, dir, "rev-parse", "--verify", "--quiet", in.BaseRef+"^{commit}")
	if err != nil || string(trim(got)) != in.BaseSHA {
		return "", fmt.Errorf("%s on %s is %q, not the job's base %s", in.BaseRef, in.Remote, trim(got), in.BaseSHA)
	}
	return dir, nil
}

// localJob is attempt id of the job in this worker's store: made and
// admitted the first time, from the job's base or the checkpoint an
// earlier attempt left; an attempt that died here (its worker was killed
// and came back) is settled first, so its work is committed and reported.
func (w *Worker) localJob(ctx context.Context, st *store.Store, in Input, clone, id, checkpoint string) (*store.Job, error) {
	j, err := st.Job(ctx, id)
	if err == nil {
		if j.State.Terminal() {
			return j, nil
		}
		release, err := shim.TakeLock(w.Paths, id)
		if err != nil {
			return nil, fmt.Errorf("job %s is still running on this worker: %w", id, err)
		}
		defer release()
		if err := shim.Settle(ctx, st, w.Engines, w.Paths, j, "the worker that ran it died"); err != nil {
			return nil, err
		}
		return st.Job(ctx, id)
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	p, err := store.DecodeSpec(in.Spec)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "spec", err)
	}
	base, baseRef, task := in.BaseSHA, in.BaseRef, in.Task
	if checkpoint != "" {
		base, baseRef = checkpoint, wipRef(in.ID)
		task = resumed + task
		p.Task = resumed + p.Task
	}
	p.Repo, p.Queue, p.Base = clone, "", baseRef
	spec, err := store.EncodeSpec(p)
	if err != nil {
		return nil, err
	}
	branch := ""
	if in.Branch != "" {
		branch = "hub/" + id
	}
	j = &store.Job{ID: id, Kind: in.Kind, Engine: in.Engine, Model: in.Model, Isolation: in.Isolation,
		Repo: clone, BaseRef: baseRef, BaseSHA: base, Branch: branch, Task: task, Spec: spec,
		MaxMicros: micros.Micros(in.MaxMicros), Notes: in.Notes, CostKnown: in.CostKnown}
	now := time.Now().UTC()
	if err := st.CreateJob(ctx, j, now); err != nil {
		return nil, err
	}
	// The money is the hub's to book; here the job only needs its slot.
	adm, err := st.Admit(ctx, id, store.Limits{MaxRunning: 1 << 20, MonthlyCap: micros.Micros(1) << 62}, now)
	if err != nil {
		return nil, err
	}
	if !adm.Admitted {
		return nil, fmt.Errorf("this worker's store would not admit job %s: %s", id, adm.Reason)
	}
	return st.Job(ctx, id)
}

// resumed is what a worker resuming an earlier attempt's work is told.
const resumed = "(This job was started by another worker, which was lost. What it had done is already in your checkout, " +
	"as its last checkpoint: look at it first, keep what is good, and carry on from there.)\n\n"

// runShim runs `hub shim <id>` on the job until it exits, reporting its
// journal to the workflow, heartbeating, and taking the supervisor's
// steering, replies and stop from the workflow's history.
func (w *Worker) runShim(ctx context.Context, st *store.Store, in Input, j *store.Job, info activity.Info, clone string, log zerolog.Logger) (left bool, err error) {
	if err := os.MkdirAll(w.Paths.JobDir(j.ID), 0o700); err != nil {
		return false, err
	}
	logf, err := os.OpenFile(w.Paths.ShimLog(j.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	defer logf.Close()
	cmd := exec.Command(w.HubBinary, "shim", j.ID)
	cmd.Env = append(os.Environ(), "HUB_HOME="+w.Paths.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start the job's shim: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	// The supervisor's side, from the workflow's history.
	fctx, fcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer fcancel()
	stop := make(chan string, 1)
	go w.follow(fctx, st, in, j.ID, info.WorkflowExecution.RunID, stop, log)

	rep := &reporter{w: w, st: st, id: j.ID, job: in.ID, since: j.Cursor - 1, runID: info.WorkflowExecution.RunID}
	tick := time.NewTicker(w.Every)
	defer tick.Stop()
	cp := &checkpointer{w: w, st: st, in: in, id: j.ID, clone: clone, base: j.BaseSHA}
	defer cp.remove()
	cpTick := time.NewTicker(w.CheckpointEvery)
	defer cpTick.Stop()
	stopped := false
	stopShim := func(reason string) {
		if stopped {
			return
		}
		stopped = true
		log.Info().Str("reason", reason).Msg("stopping the job")
		callShim(w.Paths, j.ID, func(c protocol.ShimClient) error {
			_, err := c.ShimStop(context.Background(), protocol.ShimStopParams{Reason: reason})
			return err
		})
	}
	done, leaving := ctx.Done(), activity.GetWorkerStopChannel(ctx)
	for {
		select {
		case <-exited:
			rep.flush(context.WithoutCancel(ctx))
			return left, nil
		case reason := <-stop:
			stopShim(reason)
		case <-done:
			// Cancelled (the supervisor stopped the job), or this attempt
			// timed out: stop the worker, let the shim salvage, report.
			done = nil
			stopShim("stopped by request")
		case <-leaving:
			// This worker is shutting down: the job stops here, and what it
			// did goes to the remote as its checkpoint for the next worker.
			leaving, left = nil, true
			stopShim("the worker is shutting down; another worker takes the job from its checkpoint")
		case <-tick.C:
			rep.flush(context.WithoutCancel(ctx))
			if ctx.Err() == nil {
				activity.RecordHeartbeat(ctx, cp.last)
			}
		case <-cpTick.C:
			if ctx.Err() == nil {
				cp.take(ctx, log)
			}
		}
	}
}

// reporter sends the local journal to the workflow as signals, in order.
type reporter struct {
	w     *Worker
	st    *store.Store
	id    string // the attempt's id in the worker's store
	job   string // the job's (the workflow's) id
	runID string
	since int64
}

// relayed are the journal's kinds the hub takes from a worker: the rest
// (the queued state, steering as queued and delivered) the hub records
// itself.
var relayed = map[protocol.EventKind]bool{protocol.EventState: true, protocol.EventProgress: true,
	protocol.EventQuestion: true, protocol.EventAnswer: true, protocol.EventCommand: true, protocol.EventOutput: true,
	protocol.EventCommit: true, protocol.EventVerify: true, protocol.EventError: true, protocol.EventNote: true,
	protocol.EventCost: true, protocol.EventTrace: true}

func (r *reporter) flush(ctx context.Context) {
	for {
		evs, err := r.st.Events(ctx, []string{r.id}, r.since, 200)
		if err != nil || len(evs) == 0 {
			return
		}
		batch := make([]Event, 0, len(evs))
		for _, e := range evs {
			if !relayed[e.Kind] {
				continue
			}
			if e.Kind == protocol.EventState && (e.Text == string(protocol.StateQueued) || e.Text == string(protocol.StatePreparing)) {
				continue
			}
			ev := Event{Event: e}
			if e.Kind == protocol.EventQuestion {
				ev.Question = r.question(ctx, e)
			}
			batch = append(batch, ev)
		}
		if len(batch) > 0 {
			if err := r.w.Client.SignalWorkflow(ctx, r.job, r.runID, SignalEvents, batch); err != nil {
				r.w.Log.Warn().Err(err).Str("job", r.id).Msg("report the journal")
				return // the next round tries again from the same place
			}
		}
		r.since = evs[len(evs)-1].Cursor
	}
}

// question finds the question an event asks among the job's pending ones.
func (r *reporter) question(ctx context.Context, e protocol.Event) *Question {
	qs, err := r.st.PendingQuestions(ctx, r.id)
	if err != nil {
		return nil
	}
	for _, q := range qs {
		if q.Cursor == e.Cursor {
			return &Question{ID: q.ID, Kind: q.Kind, Text: q.Text, Context: q.Context, AskedAt: q.AskedAt, ExpiresAt: q.ExpiresAt}
		}
	}
	return nil
}

// follow reads the workflow's history for what the supervisor sent: each
// steering message is queued for the worker, each reply delivered to its
// question, and a cancel request stops the job.
func (w *Worker) follow(ctx context.Context, st *store.Store, in Input, id, runID string, stop chan<- string, log zerolog.Logger) {
	dc := converter.GetDefaultDataConverter()
	_ = followHistory(ctx, w.Client, in.ID, runID, log, func(ev *history.HistoryEvent) bool {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() != SignalSteer {
				return false
			}
			var text string
			if err := dc.FromPayloads(a.GetInput(), &text); err != nil || text == "" {
				return false
			}
			if _, err := st.AddSteer(ctx, id, text, time.Now().UTC()); err != nil {
				log.Warn().Err(err).Msg("queue steering")
				return false
			}
			callShim(w.Paths, id, func(c protocol.ShimClient) error {
				_, err := c.ShimSteer(ctx, protocol.ShimSteerParams{Text: text})
				return err
			})
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			r, ok := acceptedReply(dc, ev)
			if !ok {
				return false
			}
			callShim(w.Paths, id, func(c protocol.ShimClient) error {
				_, err := c.ShimReply(ctx, protocol.ShimReplyParams{QuestionID: r.QuestionID, Text: r.Text})
				return err
			})
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
			select {
			case stop <- "stopped by request":
			default:
			}
		}
		return false
	})
}

// acceptedReply is the reply an accepted Update carries.
func acceptedReply(dc converter.DataConverter, ev *history.HistoryEvent) (Reply, bool) {
	a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes()
	req := a.GetAcceptedRequest()
	if req.GetInput().GetName() != UpdateReply {
		return Reply{}, false
	}
	var r Reply
	if err := dc.FromPayloads(req.GetInput().GetArgs(), &r); err != nil {
		return Reply{}, false
	}
	return r, true
}

// callShim calls the local shim of job id (best effort: a shim gone has ended).
func callShim(paths config.Paths, id string, fn func(protocol.ShimClient) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := rpc.Dial(ctx, paths.ShimSocket(id))
	if err != nil {
		return
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	_ = fn(protocol.ShimClient{C: c})
}

// finish pushes the job's branch to the remote and says how it ended. A
// push that fails fails the job, with the reason; the commit stays here.
func (w *Worker) finish(ctx context.Context, st *store.Store, in Input, j *store.Job, clone string) (*Ending, error) {
	end := &Ending{State: j.State, Category: j.Category, Reason: j.Error, Head: j.HeadSHA, Salvaged: j.Salvaged,
		CostMicros: int64(j.CostMicros), CostKnown: j.CostKnown, Tokens: j.Tokens, Summary: j.Summary,
		Evidence: j.Evidence, Verify: j.Verify, Worker: w.Identity, Clone: clone}
	if end.Head == "" {
		end.Head = in.BaseSHA
	}
	if in.Kind != protocol.KindWrite || in.Branch == "" || end.Head == in.BaseSHA {
		w.tidy(ctx, st, in, j, clone)
		return end, nil
	}
	w.clones.Lock()
	_, err := gitx.Git(ctx, clone, "push", "--quiet", "--force", "--no-verify", in.Remote, end.Head+":refs/heads/"+in.Branch)
	w.clones.Unlock()
	end.Pushed = err == nil
	if err != nil {
		end.State, end.Category = protocol.StateFailed, protocol.CategoryRemote
		end.Reason = fmt.Sprintf("the worker %s could not push %s to %s: %v; the commit %s stays on that worker in %s (branch %s)",
			w.Identity, in.Branch, in.Remote, err, end.Head, clone, j.Branch)
		_, _ = st.AppendEvent(ctx, j.ID, protocol.EventError, end.Reason, nil, time.Now().UTC())
		return end, nil
	}
	w.tidy(ctx, st, in, j, clone)
	return end, nil
}

// tidy removes what an attempt left on this worker once its work is on the
// remote (or it had none to push): its worktree and verify tree, its
// engine's folder and caches, its branch and the clone's refs of the job.
// A worker runs job after job, and nothing else would ever remove them.
// Its record, journal and logs stay in the worker's HUB_HOME.
func (w *Worker) tidy(ctx context.Context, st *store.Store, in Input, j *store.Job, clone string) {
	repo, err := gitx.Open(clone)
	if err != nil {
		w.Log.Warn().Err(err).Str("job", j.ID).Msg("tidy: open the clone")
		return
	}
	w.clones.Lock()
	defer w.clones.Unlock()
	err = job.Checkout(w.Paths, j, repo).Remove(ctx)
	_ = job.VerifyCheckout(w.Paths, j.ID, repo).Remove(ctx) // there only while verify ran
	refs := []string{in.BaseRef, wipRef(in.ID)}
	if j.Branch != "" {
		refs = append(refs, "refs/heads/"+j.Branch)
	}
	for _, ref := range refs {
		if _, rerr := gitx.Git(ctx, clone, "update-ref", "-d", ref); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	// The engine's folder and the job's caches, as hub gc would; its logs stay.
	for _, dir := range []string{w.Paths.EngineHome(j.ID), w.Paths.JobCache(j.ID), w.Paths.SetupHome(j.ID)} {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	if uerr := st.Update(ctx, j.ID, func(r *store.Job) error { r.Worktree = ""; return nil }); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if err != nil {
		w.Log.Warn().Err(err).Str("job", j.ID).Msg("tidy what the job left on this worker")
	}
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// checkpointer pushes a running job's work to the remote now and then.
type checkpointer struct {
	w     *Worker
	st    *store.Store
	in    Input
	id    string
	clone string
	base  string
	sc    *gitx.Scratch
	last  string // the last checkpoint pushed
	tree  string // its tree
}

// take snapshots the job's work tree — committed or not, ignored files
// out — as a commit on the last checkpoint (the attempt's base at first),
// and pushes it when it changed.
func (c *checkpointer) take(ctx context.Context, log zerolog.Logger) {
	j, err := c.st.Job(ctx, c.id)
	if err != nil || (j.State != protocol.StateRunning && j.State != protocol.StateNeedsInput) {
		return
	}
	if c.sc == nil {
		repo, err := gitx.Open(c.clone)
		if err != nil {
			return
		}
		c.sc = &gitx.Scratch{Repo: repo, Dir: filepath.Join(c.w.Paths.JobDir(c.id), "checkpoints")}
	}
	co := job.Checkout(c.w.Paths, j, c.sc.Repo)
	parent := c.base
	if c.last != "" {
		parent = c.last // checkpoints chain, so each one's history holds the ones before
	}
	commit, tree, err := c.sc.Checkpoint(ctx, co, parent, filepath.Join(c.sc.Dir, "index"),
		fmt.Sprintf("hub: checkpoint of job %s (work in progress on worker %s)\n", c.in.ID, c.w.Identity))
	if err != nil {
		log.Debug().Err(err).Msg("no checkpoint")
		return
	}
	if tree == c.tree {
		return
	}
	c.w.clones.Lock()
	err = c.sc.Push(ctx, c.in.Remote, commit, wipRef(c.in.ID))
	c.w.clones.Unlock()
	if err != nil {
		log.Warn().Err(err).Msg("push a checkpoint")
		return
	}
	c.last, c.tree = commit, tree
	log.Debug().Str("checkpoint", commit).Msg("checkpoint pushed")
}

func (c *checkpointer) remove() {
	if c.sc != nil {
		_ = c.sc.Remove()
	}
}
