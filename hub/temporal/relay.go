package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/atomicfile"
	"github.com/hub-agents/hub/internal/micros"
)

// Dial connects to a queue's Temporal frontend.
func Dial(q config.Queue, identity string, log zerolog.Logger) (client.Client, error) {
	o := client.Options{HostPort: q.Address, Namespace: q.Namespace, Identity: identity, Logger: logAdapter{log}}
	tc, err := TLSConfig(q)
	if err != nil {
		return nil, err
	}
	o.ConnectionOptions.TLS = tc
	c, err := client.Dial(o)
	if err != nil {
		return nil, fmt.Errorf("reach Temporal at %s (namespace %s): %w", q.Address, q.Namespace, err)
	}
	return c, nil
}

// TLSConfig is the TLS a queue's settings ask for: nil for none; a client
// certificate when tls_cert and tls_key are set; the server checked
// against tls_ca when it is set, else against the system's roots.
func TLSConfig(q config.Queue) (*tls.Config, error) {
	if q.TLSCert == "" && q.TLSKey == "" && q.TLSCA == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if q.TLSCert != "" || q.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(q.TLSCert, q.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("the queue's client certificate (tls_cert %s, tls_key %s): %w", q.TLSCert, q.TLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if q.TLSCA != "" {
		pem, err := os.ReadFile(q.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("the queue's CA (tls_ca): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the queue's CA %s holds no PEM certificate", q.TLSCA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// dialPatience is how long a relay that finds its job already out on the
// queue waits for Temporal to answer.
const dialPatience = 2 * time.Minute

// Relay stands in for a remote job's shim on the hub's machine: it holds
// the job's lock, starts (or finds again) the job's workflow, records
// what the worker reports in the hub's store, passes the supervisor's
// steering, replies and stop on, and at the end fetches the job's branch
// and closes the job.
type Relay struct {
	Paths config.Paths
	JobID string
	Log   zerolog.Logger
	// Settings reads hub's settings; default config.Load.
	Settings func() (config.Settings, error)

	st     *store.Store
	job    *store.Job
	queue  string
	q      config.Queue
	remote string // the remote's URL or path
	c      client.Client
	notes  *shim.Notifier

	mu      sync.Mutex
	seen    map[string]int64 // per attempt, the last worker event recorded
	started bool             // the workflow is there to cancel
	stopped bool             // a stop came; the workflow is (or will be) cancelled
}

// Run relays the job to its end.
func (r *Relay) Run(ctx context.Context) error {
	if r.Settings == nil {
		r.Settings = config.Load
	}
	release, err := shim.TakeLock(r.Paths, r.JobID)
	if err != nil {
		return err
	}
	defer release()
	r.notes = shim.NewNotifier(r.Paths.Socket(), r.JobID)
	nctx, ncancel := context.WithCancel(context.Background())
	go r.notes.Run(nctx)
	defer func() { ncancel(); r.notes.Flush() }() // the daemon hears of the end before the lock goes
	if r.st, err = store.Open(r.Paths.DB()); err != nil {
		return err
	}
	defer r.st.Close()
	if r.job, err = r.st.Job(ctx, r.JobID); err != nil {
		return err
	}
	if r.job.State.Terminal() {
		return nil
	}
	p, err := store.DecodeSpec(r.job.Spec)
	if err != nil {
		return r.fail(ctx, "the job's spec: "+err.Error())
	}
	set, err := r.Settings()
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	q, ok := set.Queues[p.Queue]
	if !ok {
		return r.fail(ctx, fmt.Sprintf("queue %q is not in config.json", p.Queue))
	}
	r.queue, r.q = p.Queue, q.Defaulted(p.Queue)
	r.seen = r.loadSeen()
	if r.remote, err = remoteURL(ctx, r.job.Repo, r.q.Remote); err != nil {
		return r.fail(ctx, err.Error())
	}
	host, _ := os.Hostname()
	// A job already out on the queue waits for Temporal to come back (a
	// server restarting) rather than failing at once.
	for wait := time.Now().Add(dialPatience); ; {
		if r.c, err = Dial(r.q, "hub-relay@"+host, r.Log); err == nil {
			break
		}
		if r.job.State == protocol.StatePreparing || time.Now().After(wait) {
			return r.fail(ctx, err.Error())
		}
		r.Log.Warn().Err(err).Msg("Temporal is not answering; trying again")
		time.Sleep(2 * time.Second)
	}
	defer r.c.Close()

	_ = os.Remove(r.Paths.ShimSocket(r.JobID))
	ln, err := rpc.Listen(r.Paths.ShimSocket(r.JobID))
	if err != nil {
		return r.fail(ctx, fmt.Sprintf("cannot open the job's socket: %v", err))
	}
	sctx, scancel := context.WithCancel(context.Background())
	go rpc.Serve(sctx, ln, r.handle, &rpc.Options{Logger: &r.Log}, nil)
	defer func() {
		scancel()
		ln.Close()
		os.Remove(r.Paths.ShimSocket(r.JobID))
	}()

	run, err := r.start(ctx, p)
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	r.mu.Lock()
	r.started = true
	stopped := r.stopped
	r.mu.Unlock()
	if stopped { // a stop that came before the workflow was there
		if err := r.cancel(ctx); err != nil {
			r.Log.Warn().Err(err).Msg("cancel the job's workflow")
		}
	}
	end, err := r.follow(ctx, run)
	if err != nil {
		return err
	}
	r.close(ctx, end)
	return nil
}

// start pushes the job's base to the remote and starts the job's
// workflow, or finds the one already started for it.
func (r *Relay) start(ctx context.Context, p protocol.StartParams) (client.WorkflowRun, error) {
	j := r.job
	baseRef := baseRef(j.ID)
	if j.State == protocol.StatePreparing {
		if _, err := gitx.Git(ctx, j.Repo, "push", "--quiet", "--no-verify", r.remote, j.BaseSHA+":"+baseRef); err != nil {
			return nil, fmt.Errorf("push the job's base to %s: %v", r.q.Remote, err)
		}
		if j.Branch != "" {
			// The job's branch is there from the start, as for a local job.
			_, _ = gitx.Git(ctx, j.Repo, "update-ref", "refs/heads/"+j.Branch, j.BaseSHA, "")
		}
	}
	in := Input{ID: j.ID, Kind: j.Kind, Engine: j.Engine, Model: j.Model, Isolation: j.Isolation, Task: j.Task,
		BaseSHA: j.BaseSHA, Branch: j.Branch, MaxMicros: int64(j.MaxMicros), CostKnown: j.CostKnown, Notes: j.Notes,
		Spec: j.Spec, Remote: r.remote, BaseRef: baseRef}
	run, err := r.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: j.ID, TaskQueue: r.q.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		// It ran to its end before this relay could record it.
		return r.c.GetWorkflow(ctx, j.ID, ""), nil
	}
	if err != nil {
		return nil, fmt.Errorf("start the job's workflow on %s: %w", r.q.Address, err)
	}
	if j.State == protocol.StatePreparing {
		r.record(ctx, protocol.EventProgress, r.waiting(ctx), nil)
	}
	return run, nil
}

// waiting says the job waits for a worker of its queue, and whether one is
// there to take it: a queue nobody serves would otherwise wait unseen.
func (r *Relay) waiting(ctx context.Context) string {
	text := fmt.Sprintf("waiting for a worker on queue %s (task queue %s at %s)", r.queue, r.q.TaskQueue, r.q.Address)
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch h := QueueHealth(hctx, r.c, r.q.TaskQueue); {
	case h.Error != "":
		return text + "; " + h.Error
	case h.Workers == 0:
		ns := ""
		if r.q.Namespace != "default" {
			ns = " --namespace " + r.q.Namespace
		}
		return text + fmt.Sprintf("; no worker polls it now: start one with `hub-temporal worker --temporal %s%s --queue %s`", r.q.Address, ns, r.q.TaskQueue)
	default:
		return text + fmt.Sprintf("; %d worker(s) poll it: %s", h.Workers, strings.Join(h.Identities, ", "))
	}
}

// follow records what the workflow's history says until it closes, and
// returns how the job ended.
func (r *Relay) follow(ctx context.Context, run client.WorkflowRun) (*Ending, error) {
	dc := converter.GetDefaultDataConverter()
	var end *Ending
	failed := func(reason string) *Ending {
		return &Ending{State: protocol.StateFailed, Category: protocol.CategoryRemote, Reason: reason}
	}
	err := followHistory(ctx, r.c, r.JobID, run.GetRunID(), r.Log, func(ev *history.HistoryEvent) bool {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() != SignalEvents {
				return false
			}
			var batch []Event
			if err := dc.FromPayloads(a.GetInput(), &batch); err != nil {
				r.Log.Warn().Err(err).Msg("a worker's events")
				return false
			}
			r.apply(ctx, a.GetIdentity(), batch)
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			if err := dc.FromPayloads(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &end); err != nil || end == nil {
				end = failed(fmt.Sprintf("the workflow's result: %v", err))
			}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			f := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure()
			end = failed("on queue " + r.queue + ": " + failureText(f.GetMessage(), f.GetCause().GetMessage()))
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			end = &Ending{State: protocol.StateCancelled, Reason: "stopped before a worker of queue " + r.queue + " took it"}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
			if why := ev.GetWorkflowExecutionTerminatedEventAttributes().GetReason(); why == stopUnstarted {
				end = &Ending{State: protocol.StateCancelled, Reason: "stopped before a worker of queue " + r.queue + " took it"}
			} else {
				end = failed("its workflow was terminated in Temporal: " + why)
			}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
			end = &Ending{State: protocol.StateTimedOut, Reason: "its workflow timed out in Temporal"}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			end = failed("its workflow continued as new, which hub does not do")
		}
		return end != nil
	})
	if err != nil {
		return nil, err
	}
	return end, nil
}

func failureText(msg, cause string) string {
	if cause != "" && !strings.Contains(msg, cause) {
		return msg + ": " + cause
	}
	return msg
}

// apply records a batch of a worker's journal in the hub's store, once:
// the events of each attempt are taken in order, from after the last one
// recorded.
func (r *Relay) apply(ctx context.Context, worker string, batch []Event) {
	now := time.Now().UTC()
	for _, e := range batch {
		// A journal's events come in cursor order; a worker's own notes
		// (cursor 0: not of its journal) once each.
		key, cursor := worker, e.Cursor
		if cursor == 0 {
			key, cursor = worker+" "+e.Text, 1
		}
		r.mu.Lock()
		if cursor <= r.seen[key] {
			r.mu.Unlock()
			continue
		}
		r.seen[key] = cursor
		r.mu.Unlock()
		var err error
		switch e.Kind {
		case protocol.EventState:
			var d struct {
				Reason string `json:"reason"`
			}
			_ = json.Unmarshal(e.Data, &d)
			to := protocol.State(e.Text)
			if to.Terminal() || to == protocol.StateQueued || to == protocol.StatePreparing || to == protocol.StateNeedsInput {
				continue // the ending is the activity's; a question moves the job itself
			}
			_, err = r.st.SetState(ctx, r.JobID, nil, to, d.Reason, now)
		case protocol.EventQuestion:
			if e.Question == nil {
				continue
			}
			err = r.st.AddQuestion(ctx, &store.Question{ID: e.Question.ID, JobID: r.JobID, Kind: e.Question.Kind, Text: e.Question.Text,
				Context: e.Question.Context, AskedAt: e.Question.AskedAt, ExpiresAt: e.Question.ExpiresAt}, now)
		case protocol.EventAnswer:
			var d struct {
				QuestionID string `json:"question_id"`
				Expired    bool   `json:"expired"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Expired {
				err = r.st.ExpireQuestion(ctx, r.JobID, d.QuestionID, now)
			}
		case protocol.EventCost:
			var c protocol.CostEvent
			if err = json.Unmarshal(e.Data, &c); err == nil {
				_, err = r.st.ReportCost(ctx, r.JobID, micros.FromUSD(c.USD), c, now)
			}
		default:
			_, err = r.st.AppendEvent(ctx, r.JobID, e.Kind, e.Text, e.Data, now)
		}
		if err != nil {
			r.Log.Debug().Err(err).Str("kind", string(e.Kind)).Msg("a worker's event not recorded")
		}
	}
	r.saveSeen()
	r.poke()
}

// The last event recorded of each attempt is kept in the job's folder, so
// a relay that starts again (its process died; the daemon started another)
// records nothing twice.
func (r *Relay) seenPath() string { return filepath.Join(r.Paths.JobDir(r.JobID), "relay.json") }

func (r *Relay) loadSeen() map[string]int64 {
	m := map[string]int64{}
	if b, err := os.ReadFile(r.seenPath()); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

func (r *Relay) saveSeen() {
	r.mu.Lock()
	b, _ := json.Marshal(r.seen)
	r.mu.Unlock()
	if err := atomicfile.Write(r.seenPath(), b, 0o600); err != nil {
		r.Log.Warn().Err(err).Msg("keep what was recorded")
	}
}

// baseRef is where the relay pushes a job's base on its remote.
func baseRef(id string) string { return "refs/hub/base/" + id }

// close fetches the job's branch from the remote and closes the job. When
// the worker's last commit did not come back (its push or the fetch
// failed, or no worker ended the job), the job's last checkpoint on the
// remote, if any, is brought onto its branch instead, so what the workers
// had saved is not lost. Once everything the remote holds of the job is
// here, the job's refs there are deleted.
func (r *Relay) close(ctx context.Context, end *Ending) {
	j := r.job
	if end.Head == "" {
		end.Head = j.BaseSHA
	}
	back := end.Head == j.BaseSHA // it is on the job's branch here
	home := true                  // what the remote holds of the job is here
	if j.Branch != "" && end.Pushed && end.Head != j.BaseSHA {
		_, err := gitx.Git(ctx, j.Repo, "fetch", "--quiet", "--no-tags", r.remote, "+refs/heads/"+j.Branch+":refs/heads/"+j.Branch)
		got, _ := gitx.Git(ctx, j.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+j.Branch)
		switch {
		case err != nil:
			end.State, end.Category = protocol.StateFailed, protocol.CategoryRemote
			end.Reason = fmt.Sprintf("could not fetch %s from %s: %v; the worker pushed %s there", j.Branch, r.q.Remote, err, end.Head)
			home = false
		case string(trim(got)) != end.Head:
			end.State, end.Category = protocol.StateFailed, protocol.CategoryRemote
			end.Reason = fmt.Sprintf("%s on %s is %s, not %s, the commit the worker ended on; it moved after the worker pushed",
				j.Branch, r.q.Remote, trim(got), end.Head)
			_, _ = gitx.Git(ctx, j.Repo, "update-ref", "refs/heads/"+j.Branch, j.BaseSHA)
			home = false
		default:
			back = true
		}
	}
	if !back {
		end.Head = j.BaseSHA // nothing of the job's came back (a push that failed says where its commit stays)
	}
	if j.Branch != "" && j.Kind == protocol.KindWrite && (!back || end.Worker == "") {
		cp, err := r.salvage(ctx)
		switch {
		case err != nil:
			r.Log.Warn().Err(err).Msg("bring the job's last checkpoint back")
			home = false
		case cp != "":
			end.Head, end.Salvaged = cp, true
			end.Reason += fmt.Sprintf("; its last checkpoint (%s, pushed while it ran) is on %s here", view.ShortSHA(cp), j.Branch)
		}
	}
	if len(end.Verify) > 0 {
		_ = r.st.Update(ctx, j.ID, func(rec *store.Job) error { rec.Verify = end.Verify; return nil })
	}
	var ev *protocol.Evidence
	if len(end.Evidence) > 0 {
		ev = &protocol.Evidence{}
		if err := json.Unmarshal(end.Evidence, ev); err != nil {
			ev = nil
		}
	}
	if ev == nil {
		ev = job.Evidence(ctx, j, end.Head)
	}
	// The worker's record is of its clone and its attempt (which may have
	// started from an earlier attempt's checkpoint); the job is the hub's,
	// from its base.
	ev.ID, ev.Repo, ev.Base, ev.Branch, ev.Head = j.ID, j.Repo, j.BaseSHA, j.Branch, end.Head
	ev.Files, ev.Commits = []protocol.FileChange{}, []protocol.Commit{}
	if j.Branch != "" && end.Head != j.BaseSHA {
		if files, commits, err := job.Changes(ctx, j.Repo, j.ID, j.BaseSHA, end.Head); err == nil {
			ev.Files, ev.Commits = files, commits
		}
	}
	if end.Worker != "" {
		ev.Notes = append(ev.Notes, fmt.Sprintf("ran on worker %s of queue %s", end.Worker, r.queue))
	}
	if _, err := job.Close(ctx, r.st, j, job.End{State: end.State, Category: end.Category, Reason: end.Reason, Head: end.Head,
		Salvaged: end.Salvaged, CostMicros: micros.Micros(end.CostMicros), CostKnown: end.CostKnown, Tokens: end.Tokens,
		Evidence: ev}, time.Now().UTC()); err != nil && !errors.Is(err, store.ErrWrongState) {
		r.Log.Error().Err(err).Msg("close the job")
		home = false
	}
	r.poke()
	if home {
		r.tidyRemote(ctx)
	}
}

// salvage brings the job's last checkpoint on the remote onto its branch
// here and returns it ("" when no worker pushed one).
func (r *Relay) salvage(ctx context.Context) (string, error) {
	j := r.job
	out, err := gitx.Git(ctx, j.Repo, "ls-remote", r.remote, wipRef(j.ID))
	if err != nil {
		return "", fmt.Errorf("look for its checkpoint on %s: %w", r.q.Remote, err)
	}
	if len(trim(out)) == 0 {
		return "", nil
	}
	branch := "refs/heads/" + j.Branch
	if _, err := gitx.Git(ctx, j.Repo, "fetch", "--quiet", "--no-tags", r.remote, "+"+wipRef(j.ID)+":"+branch); err != nil {
		return "", fmt.Errorf("fetch its checkpoint from %s: %w", r.q.Remote, err)
	}
	got, err := gitx.Git(ctx, j.Repo, "rev-parse", "--verify", branch+"^{commit}")
	cp := string(trim(got))
	if err == nil {
		_, err = gitx.Git(ctx, j.Repo, "merge-base", "--is-ancestor", j.BaseSHA, cp)
	}
	if err != nil {
		_, _ = gitx.Git(ctx, j.Repo, "update-ref", branch, j.BaseSHA)
		return "", fmt.Errorf("its checkpoint %s on %s is not on the job's base %s", cp, r.q.Remote, j.BaseSHA)
	}
	if cp == j.BaseSHA {
		return "", nil
	}
	return cp, nil
}

// tidyRemote deletes the job's refs on the remote (its base, its
// checkpoint, its branch): what they hold is here now, and a team's
// remote would otherwise keep three refs of every job it ever ran. Each
// goes only if it is still what it was when looked at.
func (r *Relay) tidyRemote(ctx context.Context) {
	j := r.job
	refs := []string{baseRef(j.ID), wipRef(j.ID)}
	if j.Branch != "" {
		refs = append(refs, "refs/heads/"+j.Branch)
	}
	out, err := gitx.Git(ctx, j.Repo, append([]string{"ls-remote", r.remote}, refs...)...)
	if err != nil {
		r.Log.Warn().Err(err).Msg("list the job's refs on its remote")
		return
	}
	args := []string{"push", "--quiet", "--no-verify"}
	var gone []string
	for _, line := range strings.Split(string(out), "\n") {
		sha, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || !slices.Contains(refs, ref) {
			continue
		}
		args = append(args, "--force-with-lease="+ref+":"+sha)
		gone = append(gone, ":"+ref)
	}
	if len(gone) == 0 {
		return
	}
	if _, err := gitx.Git(ctx, j.Repo, append(append(args, r.remote), gone...)...); err != nil {
		r.Log.Warn().Err(err).Strs("refs", gone).Msg("delete the job's refs on its remote")
	}
}

// fail closes the job as failed before a worker ran it.
func (r *Relay) fail(ctx context.Context, msg string) error {
	_, err := job.Fail(ctx, r.st, r.job, protocol.CategoryRemote, msg, time.Now().UTC())
	r.poke()
	if err != nil {
		return err
	}
	return errors.New(msg)
}

func (r *Relay) record(ctx context.Context, kind protocol.EventKind, text string, data any) {
	if _, err := r.st.AppendEvent(ctx, r.JobID, kind, text, data, time.Now().UTC()); err != nil {
		r.Log.Warn().Err(err).Msg("record")
	}
	r.poke()
}

// poke tells the daemon the job's records changed.
func (r *Relay) poke() { r.notes.Poke() }

// handle serves the job's socket for the daemon: steering, replies, stop.
// Nothing of the worker's runs here, so the worker's methods are refused.
func (r *Relay) handle(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
	res, served, err := protocol.DispatchShim(ctx, relayServer{r}, req.Method, func(p any) error {
		if req.Params == nil {
			return rpc.Errorf(protocol.CodeInvalidParams, "send the parameters the method documents", "missing params")
		}
		return rpc.DecodeParams(req, p)
	})
	if !served {
		return nil, rpc.MethodNotFound(req.Method)
	}
	return res, err
}

type relayServer struct{ r *Relay }

var _ protocol.ShimServer = relayServer{}

// ShimSteer sends the job's queued steering to the worker.
func (s relayServer) ShimSteer(ctx context.Context, _ protocol.ShimSteerParams) (*protocol.Empty, error) {
	steers, err := s.r.st.TakeSteers(ctx, s.r.JobID, time.Now().UTC())
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeInternal, "", "read steering: %v", err)
	}
	for _, m := range steers {
		if err := s.r.c.SignalWorkflow(ctx, s.r.JobID, "", SignalSteer, m.Text); err != nil {
			return nil, rpc.Errorf(protocol.CodeInternal, "try again", "send steering to the worker: %v", err)
		}
	}
	s.r.poke()
	return &protocol.Empty{}, nil
}

// ShimStop cancels the job's workflow: the worker stops the job, commits
// what it left and pushes it. A stop before the workflow is there cancels
// it as soon as it is.
func (s relayServer) ShimStop(ctx context.Context, p protocol.ShimStopParams) (*protocol.Empty, error) {
	s.r.mu.Lock()
	already, started := s.r.stopped, s.r.started
	s.r.stopped = true
	s.r.mu.Unlock()
	if already || !started {
		return &protocol.Empty{}, nil
	}
	if err := s.r.cancel(ctx); err != nil {
		s.r.mu.Lock()
		s.r.stopped = false // the next stop tries again
		s.r.mu.Unlock()
		return nil, rpc.Errorf(protocol.CodeInternal, "try again", "cancel the job's workflow: %v", err)
	}
	return &protocol.Empty{}, nil
}

// stopUnstarted is the reason the relay terminates a stopped job's
// workflow that no worker had started: one the relay reads as stopped.
const stopUnstarted = "stopped before a worker took it"

// cancel cancels the job's workflow. A cancel is carried out by a worker of
// the queue; when none has the job after a moment (none is up, or none
// took it), the workflow is terminated instead, which needs no worker.
func (r *Relay) cancel(ctx context.Context) error {
	if err := r.c.CancelWorkflow(ctx, r.JobID, ""); err != nil {
		return err
	}
	go func() {
		time.Sleep(cancelGrace)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := r.c.DescribeWorkflowExecution(ctx, r.JobID, "")
		if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return
		}
		for _, a := range d.GetPendingActivities() {
			if st := a.GetState(); st == enums.PENDING_ACTIVITY_STATE_STARTED || st == enums.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED {
				return // its worker stops it, salvages and pushes
			}
		}
		if err := r.c.TerminateWorkflow(ctx, r.JobID, "", stopUnstarted); err != nil {
			r.Log.Warn().Err(err).Msg("terminate the stopped job's workflow")
		}
	}()
	return nil
}

// cancelGrace is how long a cancelled workflow gets to be carried out by a
// worker before the relay terminates it.
const cancelGrace = 3 * time.Second

// ShimReply answers the worker's question: in the hub's store, then to the
// worker through an Update the workflow takes once per question.
func (s relayServer) ShimReply(ctx context.Context, p protocol.ShimReplyParams) (*protocol.ReplyResult, error) {
	q, err := s.r.st.AnswerQuestion(ctx, s.r.JobID, p.QuestionID, p.Text, time.Now().UTC())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, rpc.Errorf(protocol.CodeNotFound, "check the job's status for its pending question", "%v", err)
	case errors.Is(err, store.ErrWrongState):
		return nil, rpc.Errorf(protocol.CodeWrongState, "the worker went on without it; steer it instead if it still matters", "%v", err)
	case err != nil:
		return nil, rpc.Errorf(protocol.CodeInternal, "", "%v", err)
	}
	s.r.poke()
	h, err := s.r.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: s.r.JobID, UpdateID: q.ID,
		UpdateName: UpdateReply, Args: []any{Reply{QuestionID: q.ID, Text: p.Text}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	delivered := err == nil && h.Get(ctx, nil) == nil
	return &protocol.ReplyResult{ID: s.r.JobID, QuestionID: q.ID, Delivered: delivered}, nil
}

func (s relayServer) WorkerProgress(context.Context, protocol.ProgressParams) (*protocol.ProgressResult, error) {
	return nil, notHere()
}

func (s relayServer) WorkerAsk(context.Context, protocol.AskParams) (*protocol.AskResult, error) {
	return nil, notHere()
}

func notHere() error {
	return rpc.Errorf(protocol.CodeRefused, "the job runs on a remote worker; its worker asks and reports there",
		"no worker of this job runs on this machine")
}

// remoteURL is the remote the queue names: a remote of the repository by
// name, else the URL or path as given.
func remoteURL(ctx context.Context, repo, remote string) (string, error) {
	if out, err := gitx.Git(ctx, repo, "remote", "get-url", remote); err == nil {
		return string(trim(out)), nil
	}
	if strings.Contains(remote, ":") || filepath.IsAbs(remote) {
		return remote, nil
	}
	return "", fmt.Errorf("the queue's remote %q is neither a remote of %s nor a URL or absolute path; fix the queue's remote", remote, repo)
}
