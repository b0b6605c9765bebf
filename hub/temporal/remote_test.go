package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/temporal"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

var (
	runnerOnce sync.Once
	runnerPath string
	runnerErr  error
)

// runner builds hub-temporal beside the hub binary, where the daemon looks
// for a queue's runner.
func runner(t *testing.T) string {
	t.Helper()
	runnerOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			runnerErr = err
			return
		}
		runnerPath, runnerErr = hubtest.BuildBeside(dir, "./cmd/hub-temporal", "hub-temporal")
	})
	if runnerErr != nil {
		t.Fatal(runnerErr)
	}
	return runnerPath
}

// world is a hub (daemon, MCP front end) whose jobs on queue "far" run on
// worker processes of their own, through a Temporal test server.
type world struct {
	t      *testing.T
	env    *hubtest.Env
	ts     *temporaltest.TestServer // nil on a dev server
	runner string
	// addr and namespace are the Temporal server's.
	addr, namespace string
	repo            string   // the user's repository
	bare            string   // the git remote both sides reach
	workerEnv       []string // what workers started from now on have in their environment besides
}

func newWorld(t *testing.T) *world {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	w := newWorldAt(t, ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	w.ts = ts
	return w
}

// newWorldAt is a world whose queue is the Temporal server at addr.
func newWorldAt(t *testing.T, addr, namespace string) *world {
	env := hubtest.NewEnv(t)
	w := &world{t: t, env: env, runner: runner(t), addr: addr, namespace: namespace}
	base := t.TempDir()
	w.repo = hubtest.Repo(t, filepath.Join(base, "repo"), map[string]string{"README.md": "hello\n", "bug.txt": "broken\n"})
	w.bare = filepath.Join(base, "remote.git")
	hubtest.Git(t, base, "init", "-q", "--bare", w.bare)
	hubtest.Git(t, w.repo, "remote", "add", "origin", w.bare)
	hubtest.Git(t, w.repo, "push", "-q", "origin", "main")
	w.config(nil, nil)
	return w
}

// config writes config.json: queue "far" at the world's Temporal with
// extra keys of the queue's, and extra top-level keys.
func (w *world) config(queue, top map[string]any) {
	far := map[string]any{"runner": "temporal", "address": w.addr, "namespace": w.namespace, "remote": "origin"}
	for k, v := range queue {
		far[k] = v
	}
	cfg := map[string]any{"queues": map[string]any{"far": far}}
	for k, v := range top {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	t := w.t
	env := w.env
	dir := filepath.Join(env.UserDir, ".config", "hub")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// worker is a hub-temporal worker process with a HUB_HOME and HOME of its own.
type worker struct {
	name string
	home string // its HUB_HOME
	cmd  *exec.Cmd
	log  string
}

func (w *world) startWorker(name string, flags ...string) *worker {
	w.t.Helper()
	return w.startWorkerIn(name, false, flags...)
}

// startWorkerIn starts a worker; sealed, in a network namespace of its own
// (bubblewrap), reaching Temporal through a unix socket only, with the
// hub's HUB_HOME, HOME and the user's repository hidden from it: all it
// has of the hub is the git remote and Temporal.
func (w *world) startWorkerIn(name string, sealed bool, flags ...string) *worker {
	w.t.Helper()
	base := w.t.TempDir()
	wk := &worker{name: name, home: filepath.Join(base, "hub"), log: filepath.Join(base, "worker.log")}
	user := filepath.Join(base, "home")
	if err := os.MkdirAll(user, 0o700); err != nil {
		w.t.Fatal(err)
	}
	logf, err := os.Create(wk.log)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	addr := w.addr
	if sealed {
		addr = "unix://" + bridge(w.t, filepath.Join(base, "temporal.sock"), w.addr)
	}
	args := append([]string{"worker", "--temporal", addr, "--namespace", w.namespace,
		"--queue", "far", "--identity", name}, flags...)
	cmd := exec.Command(w.runner, args...)
	if sealed {
		bw := []string{"--unshare-net", "--die-with-parent", "--dev-bind", "/", "/"}
		for _, d := range []string{w.env.Home, w.env.UserDir, w.repo} {
			bw = append(bw, "--tmpfs", d)
		}
		cmd = exec.Command("bwrap", append(append(bw, "--", w.runner), args...)...)
	}
	var env []string
	for _, kv := range w.env.Vars {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HUB_HOME", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "HUB_HOME="+wk.home, "HOME="+user, "XDG_CONFIG_HOME="+filepath.Join(user, ".config"),
		"XDG_DATA_HOME="+filepath.Join(user, ".local", "share"), "HUB_LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, w.workerEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	wk.cmd = cmd
	w.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if w.t.Failed() {
			b, _ := os.ReadFile(wk.log)
			w.t.Logf("worker %s log:\n%s", name, b)
		}
	})
	return wk
}

func (w *world) mcp(ctx context.Context) *mcp.ClientSession {
	w.t.Helper()
	cmd := exec.Command(hubtest.MustBinary(w.t), "mcp")
	cmd.Env = w.env.Vars
	c := mcp.NewClient(&mcp.Implementation{Name: "remote-e2e", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args, out any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text.String())
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return text.String()
}

// waitFor calls wait until the jobs are done (or one asks), and returns their statuses by id.
func waitFor(t *testing.T, ctx context.Context, cs *mcp.ClientSession, ids ...string) map[string]protocol.JobStatus {
	t.Helper()
	var wr protocol.WaitResult
	call(t, ctx, cs, "wait", map[string]any{"ids": ids, "timeout_s": 120}, &wr)
	if !wr.Done {
		t.Fatalf("wait timed out: %+v", wr)
	}
	out := map[string]protocol.JobStatus{}
	for _, s := range wr.Jobs {
		out[s.ID] = s
	}
	return out
}

func (w *world) start(t *testing.T, ctx context.Context, cs *mcp.ClientSession, params map[string]any) string {
	t.Helper()
	params["repo"], params["queue"] = w.repo, "far"
	if params["engine"] == nil {
		params["engine"] = "exec"
	}
	var sr protocol.StartResult
	call(t, ctx, cs, "start", params, &sr)
	if sr.ID == "" {
		t.Fatalf("start: %+v", sr)
	}
	return sr.ID
}

// TestRemoteJob: a job started from the MCP start tool runs on a remote
// worker (its own process, HUB_HOME and clone), and wait, result,
// evidence, verify and the commit on hub/<id> are as for a local job.
func TestRemoteJob(t *testing.T) {
	w := newWorld(t)
	wk := w.startWorkerIn("far-1", true)
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	// What the worker's machine can reach of the hub's: nothing but the
	// git remote and Temporal (through the worker's own connection).
	probe := fmt.Sprintf(`{ (exec 3<>/dev/tcp/%s/%s) 2>/dev/null && echo "temporal: reached" || echo "temporal: unreachable"
  test -e %s && echo "hub home: seen" || echo "hub home: hidden"
  test -e %s/README.md && echo "user repo: seen" || echo "user repo: hidden"; } > reach.txt`,
		strings.Split(w.addr, ":")[0], strings.Split(w.addr, ":")[1], filepath.Join(w.env.Home, "hub.db"), w.repo)
	id := w.start(t, ctx, cs, map[string]any{"task": "fix bug.txt",
		"exec":   probe + ` && printf 'fixed\n' > bug.txt && hub progress "fixed bug.txt" && echo "fixed it"`,
		"verify": `grep -qx fixed bug.txt`})
	st := waitFor(t, ctx, cs, id)[id]
	verified(t, st)
	head := hubtest.Git(t, w.repo, "rev-parse", "hub/"+id)
	if st.Head != head {
		t.Errorf("status head %s, branch hub/%s at %s", st.Head, id, head)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on hub/%s: %q", id, got)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":reach.txt"); got != "temporal: unreachable\nhub home: hidden\nuser repo: hidden" {
		t.Errorf("what the worker reached:\n%s", got)
	}
	if got := hubtest.Git(t, w.repo, "rev-parse", "hub/"+id+"^"); got != st.Base {
		t.Errorf("the commit's parent is %s, the base %s", got, st.Base)
	}

	var rr protocol.ResultResult
	call(t, ctx, cs, "result", map[string]any{"id": id, "evidence": true}, &rr)
	if !strings.Contains(rr.Summary, "bug.txt") {
		t.Errorf("result summary does not name bug.txt:\n%s", rr.Summary)
	}
	ev := rr.Evidence
	if ev == nil || ev.Repo != w.repo || ev.Head != head || len(ev.Files) != 2 || ev.Files[0].Path != "bug.txt" {
		t.Fatalf("evidence: %+v", ev)
	}
	if ev.Verify == nil || ev.Verify.ExitCode != 0 {
		t.Errorf("evidence verify: %+v", ev.Verify)
	}
	if !slices.Contains(ev.Notes, "ran on worker far-1 of queue far") {
		t.Errorf("evidence notes: %q", ev.Notes)
	}

	// The worker's progress reached the hub's journal.
	out, _, code := hubtest.Hub(t, "events", id)
	if code != 0 || !strings.Contains(out, "fixed bug.txt") || !strings.Contains(out, "attempt 1 taken by worker far-1") {
		t.Errorf("events (exit %d):\n%s", code, out)
	}
	// The worker ran it in its own clone, under its own HUB_HOME.
	if _, err := os.Stat(filepath.Join(wk.home, "hub.db")); err != nil {
		t.Errorf("the worker's store: %v", err)
	}
	// The money: booked and closed once, in the hub's ledger.
	closedOnce(t, id)
	// It lands as a local job does: checked again on main's tip, here.
	var lr protocol.LandResult
	call(t, ctx, cs, "land", map[string]any{"ids": []string{id}}, &lr)
	if len(lr.Jobs) != 1 || lr.Tip == lr.From || hubtest.Git(t, w.repo, "show", "main:bug.txt") != "fixed" {
		t.Errorf("land: %+v", lr)
	}
	// Its work home, nothing of it is left on the remote, and on the worker
	// only its record.
	w.tidied(t, id)
	for _, left := range []string{filepath.Join(wk.home, "worktrees", id), filepath.Join(wk.home, "jobs", id, "engine")} {
		if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still on the worker: %v", left, err)
		}
	}
	clones, _ := filepath.Glob(filepath.Join(wk.home, "clones", "*"))
	if len(clones) != 1 {
		t.Fatalf("the worker's clones: %q", clones)
	}
	if refs := refsOf(t, clones[0], id); len(refs) > 0 {
		t.Errorf("the worker's clone keeps refs of the job: %q", refs)
	}
	if out := hubtest.Git(t, clones[0], "worktree", "list", "--porcelain"); strings.Contains(out, id) {
		t.Errorf("the worker's clone still lists the job's worktree:\n%s", out)
	}
}

// refsOf lists the refs of the repository at dir that name job id.
func refsOf(t *testing.T, dir, id string) []string {
	t.Helper()
	var out []string
	for _, ref := range strings.Fields(hubtest.Git(t, dir, "for-each-ref", "--format=%(refname)")) {
		if strings.Contains(ref, id) {
			out = append(out, ref)
		}
	}
	return out
}

// tidied waits until the remote holds no ref of job id (the relay deletes
// them after it closed the job).
func (w *world) tidied(t *testing.T, id string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; {
		refs := refsOf(t, w.bare, id)
		if len(refs) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the remote keeps refs of job %s: %q", id, refs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRemoteQuestions: a question the remote worker asks reaches the
// supervisor; the answer reaches the worker once (a second reply is
// refused, and so is an Update for a question already answered).
func TestRemoteQuestions(t *testing.T) {
	w := newWorld(t)
	wk := w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	id := w.start(t, ctx, cs, map[string]any{"task": "write the colour and the size the supervisor names",
		"exec":   `c=$(hub ask "which colour?") && s=$(hub ask "which size?") && printf '%s %s\n' "$c" "$s" > pick.txt`,
		"verify": `test -s pick.txt`})
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateNeedsInput || st.Question == nil || st.Question.Text != "which colour?" {
		t.Fatalf("status: %+v", st)
	}
	first := st.Question.ID
	var rr protocol.ReplyResult
	call(t, ctx, cs, "reply", map[string]any{"id": id, "text": "teal"}, &rr)
	if !rr.Delivered || rr.QuestionID != first {
		t.Fatalf("reply: %+v", rr)
	}
	st = waitFor(t, ctx, cs, id)[id]
	for st.State != protocol.StateNeedsInput || st.Question == nil || st.Question.ID == first {
		time.Sleep(100 * time.Millisecond)
		call(t, ctx, cs, "status", map[string]any{"id": id}, &st)
	}
	if st.Question.Text != "which size?" {
		t.Fatalf("second question: %+v", st.Question)
	}
	// The workflow says which question waits.
	v, err := w.ts.GetDefaultClient().QueryWorkflow(ctx, id, "", temporal.QueryStatus)
	var ws temporal.Status
	if err == nil {
		err = v.Get(&ws)
	}
	if err != nil || len(ws.Pending) != 1 || ws.Pending[0] != st.Question.ID || ws.Done {
		t.Errorf("the workflow's status: %+v %v", ws, err)
	}
	// The first question again, to the hub and to the workflow itself.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reply", Arguments: map[string]any{"id": id, "question_id": first, "text": "red"}})
	if err != nil || !res.IsError {
		t.Errorf("a second reply to %s was not refused: %v %+v", first, err, res)
	}
	c := w.ts.GetDefaultClient()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: "again-" + first, UpdateName: temporal.UpdateReply,
		Args: []any{temporal.Reply{QuestionID: first, Text: "red"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "already answered") {
		t.Errorf("an Update answering %s again: %v", first, err)
	}
	call(t, ctx, cs, "reply", map[string]any{"id": id, "text": "large"}, &rr)
	st = waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateSucceeded {
		t.Fatalf("status: %+v", st)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":pick.txt"); got != "teal large" {
		t.Errorf("pick.txt: %q", got)
	}
	// On the worker, each question was answered once.
	wst, err := store.Open(filepath.Join(wk.home, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer wst.Close()
	evs, err := wst.Events(ctx, []string{id}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, e := range evs {
		if e.Kind == protocol.EventAnswer {
			answers++
		}
	}
	if answers != 2 {
		t.Errorf("the worker's journal has %d answers, want 2", answers)
	}
}

// TestRemoteStop: stop ends a job running on a remote worker with its
// work salvaged onto hub/<id>, and the worker's processes gone.
func TestRemoteStop(t *testing.T) {
	w := newWorld(t)
	wk := w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	id := w.start(t, ctx, cs, map[string]any{"task": "write half and hang",
		"exec": `printf 'half\n' > half.txt && hub progress "half done" && sleep 300`})
	progressed(t, ctx, cs, id, func(p string) bool { return p == "half done" })
	call(t, ctx, cs, "stop", map[string]any{"id": id}, nil)
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateCancelled || !st.Salvaged {
		t.Fatalf("status: %+v", st)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":half.txt"); got != "half" {
		t.Errorf("half.txt on hub/%s: %q", id, got)
	}
	// The worker's own: other tests on this machine may sleep 300 too.
	if left := procs(wk.home, func(c string) bool { return strings.Contains(c, "sleep 300") }); len(left) > 0 {
		t.Errorf("the worker's sleep is still running: %v", left)
	}
}

// TestRemoteBatch: two workers share a batch of 10 jobs.
func TestRemoteBatch(t *testing.T) {
	w := newWorld(t)
	w.startWorker("far-1", "--slots", "2")
	w.startWorker("far-2", "--slots", "2")
	ctx := hubtest.Deadline(t, 4*time.Minute)
	cs := w.mcp(ctx)

	var jobs []map[string]any
	for i := range 10 {
		jobs = append(jobs, map[string]any{"task": fmt.Sprintf("write n%d.txt", i), "repo": w.repo, "queue": "far", "engine": "exec",
			"exec": fmt.Sprintf(`sleep 1; echo %d > n%d.txt`, i, i), "verify": fmt.Sprintf(`test "$(cat n%d.txt)" = %d`, i, i)})
	}
	var sm protocol.StartManyResult
	call(t, ctx, cs, "start_many", map[string]any{"jobs": jobs}, &sm)
	var ids []string
	for i, r := range sm.Results {
		if r.Error != nil || r.StartResult == nil {
			t.Fatalf("item %d: %+v", i, r.Error)
		}
		ids = append(ids, r.ID)
	}
	for {
		sts := waitFor(t, ctx, cs, ids...)
		ended := 0
		for _, s := range sts {
			if s.State.Terminal() {
				ended++
			}
		}
		if ended == len(ids) {
			break
		}
	}
	by := map[string]int{}
	for i, id := range ids {
		var rr protocol.ResultResult
		call(t, ctx, cs, "result", map[string]any{"id": id, "evidence": true}, &rr)
		if rr.State != protocol.StateSucceeded || rr.Evidence.Verify == nil || rr.Evidence.Verify.ExitCode != 0 {
			t.Errorf("job %d (%s): %s\n%s", i, id, rr.State, rr.Summary)
			continue
		}
		for _, n := range rr.Evidence.Notes {
			if strings.HasPrefix(n, "ran on worker ") {
				by[strings.Fields(n)[3]]++
			}
		}
		if got := hubtest.Git(t, w.repo, "show", fmt.Sprintf("hub/%s:n%d.txt", id, i)); got != fmt.Sprint(i) {
			t.Errorf("n%d.txt on hub/%s: %q", i, id, got)
		}
	}
	if by["far-1"] == 0 || by["far-2"] == 0 || by["far-1"]+by["far-2"] != 10 {
		t.Errorf("jobs per worker: %v", by)
	}
}

// killHome kills -9 every process of a worker's machine: the worker and
// everything running with its HUB_HOME (its jobs' shims and workers), as
// a machine that dies would.
func killHome(t *testing.T, wk *worker) {
	t.Helper()
	_ = wk.cmd.Process.Kill()
	for range 3 {
		for _, pid := range procs(wk.home, func(string) bool { return true }) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRemoteWorkerKilled: a worker killed -9 mid-job (its machine gone) →
// the job completes on another worker from the checkpoint, with nothing
// checkpointed lost, and its reservation closed once.
func TestRemoteWorkerKilled(t *testing.T) {
	w := newWorld(t)
	first := w.startWorker("far-1", "--checkpoint-every", "1s")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	steps := `for i in 1 2 3 4 5 6 7 8; do
  if [ ! -f step$i.txt ]; then date +%s%N > step$i.txt; hub progress "step $i"; sleep 1; fi
done; echo "all steps done"`
	id := w.start(t, ctx, cs, map[string]any{"task": "write eight steps", "exec": steps, "max_usd": 1,
		"verify": `for i in 1 2 3 4 5 6 7 8; do test -s step$i.txt || exit 1; done`})

	// Wait for a checkpoint with at least two steps in it.
	var cp string
	for {
		out, _ := exec.Command("git", "-C", w.bare, "ls-tree", "--name-only", "refs/hub/wip/"+id).Output()
		if strings.Count(string(out), "step") >= 2 {
			cp = hubtest.Git(t, w.bare, "rev-parse", "refs/hub/wip/"+id)
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no checkpoint with two steps")
		}
		time.Sleep(100 * time.Millisecond)
	}
	killHome(t, first)
	saved := map[string]string{}
	for _, f := range strings.Fields(hubtest.Git(t, w.bare, "ls-tree", "--name-only", cp)) {
		saved[f] = hubtest.Git(t, w.bare, "rev-parse", cp+":"+f)
	}
	w.startWorker("far-2", "--checkpoint-every", "1s")

	st := waitFor(t, ctx, cs, id)[id]
	verified(t, st)
	for f, blob := range saved {
		if got := hubtest.Git(t, w.repo, "rev-parse", "hub/"+id+":"+f); got != blob {
			t.Errorf("%s on hub/%s is %s, the checkpoint had %s", f, id, got, blob)
		}
	}
	if err := exec.Command("git", "-C", w.repo, "merge-base", "--is-ancestor", cp, "hub/"+id).Run(); err != nil {
		t.Errorf("the checkpoint %s is not in hub/%s's history", cp, id)
	}
	var rr protocol.ResultResult
	call(t, ctx, cs, "result", map[string]any{"id": id, "evidence": true}, &rr)
	if rr.Evidence == nil || len(rr.Evidence.Files) != 8 || rr.Evidence.Base != st.Base || !slices.Contains(rr.Evidence.Notes, "ran on worker far-2 of queue far") {
		t.Errorf("evidence: %+v", rr.Evidence)
	}
	out, _, _ := hubtest.Hub(t, "events", id)
	if !strings.Contains(out, "attempt 2 taken by worker far-2, from checkpoint ") {
		t.Errorf("events:\n%s", out)
	}
	closedOnce(t, id)
}

// TestRemoteHubKilled: the hub's daemon and the job's relay killed -9
// mid-job → a new daemon starts the relay again, which finds the job's
// workflow; the job completes, its journal has nothing twice, and its
// reservation is closed once.
func TestRemoteHubKilled(t *testing.T) {
	w := newWorld(t)
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	steps := `for i in 1 2 3 4 5 6; do date +%s%N > step$i.txt; hub progress "step $i"; sleep 0.5; done; echo "all steps done"`
	id := w.start(t, ctx, cs, map[string]any{"task": "write six steps", "exec": steps, "max_usd": 1,
		"verify": `for i in 1 2 3 4 5 6; do test -s step$i.txt || exit 1; done`})
	progressed(t, ctx, cs, id, func(p string) bool { return p == "step 2" })
	// The daemon and the relay (the relay holds the job's lock), at once.
	pids := append(pidsOf(w.env.Home, "relay "+id), pidsOf(w.env.Home, "serve")...)
	if len(pids) != 2 {
		t.Fatalf("the relay and the daemon: %v", pids)
	}
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", p, err)
		}
	}
	time.Sleep(time.Second)
	cs.Close()
	cs = w.mcp(ctx) // a new session starts a new daemon

	st := waitFor(t, ctx, cs, id)[id]
	verified(t, st)
	out := stepsOnce(t, id, 6)
	if n := strings.Count(out, "attempt 1 taken"); n != 1 {
		t.Errorf("the attempt's note is there %d times", n)
	}
	closedOnce(t, id)
}

// pidsOf lists the processes running with HUB_HOME home whose command
// line (its arguments joined by spaces) ends with args.
func pidsOf(home, args string) []int {
	return procs(home, func(cmdline string) bool { return strings.HasSuffix(cmdline, " "+args) })
}

// procs lists the processes but this one running with HUB_HOME home whose
// command line (its arguments joined by spaces) matches.
func procs(home string, match func(cmdline string) bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !match(strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " ")) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if slices.Contains(strings.Split(string(env), "\x00"), "HUB_HOME="+home) {
			out = append(out, pid)
		}
	}
	return out
}

// closedOnce checks the hub's ledger holds job id once, closed.
func closedOnce(t *testing.T, id string) {
	t.Helper()
	out, _, code := hubtest.Hub(t, "ledger", "--json")
	if code != 0 || strings.Count(out, fmt.Sprintf(`"job_id": %q`, id)) != 1 || strings.Contains(out, `"open": true`) {
		t.Errorf("ledger (exit %d):\n%s", code, out)
	}
}

// TestRemotePushFails: a worker whose push of hub/<id> is refused → the
// job fails with the reason, and the worker keeps the commit; the last
// checkpoint it pushed while the job ran is brought onto hub/<id> here.
func TestRemotePushFails(t *testing.T) {
	w := newWorld(t)
	wk := w.startWorker("far-1", "--checkpoint-every", "1s")
	hook := filepath.Join(w.bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nwhile read old new ref; do case $ref in refs/heads/hub/*) echo \"branches of jobs are not taken here\" >&2; exit 1;; esac; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)
	gate := filepath.Join(t.TempDir(), "gate")
	id := w.start(t, ctx, cs, map[string]any{"task": "fix bug.txt", "verify": `grep -qx fixed bug.txt`,
		"exec": fmt.Sprintf(`printf 'fixed\n' > bug.txt; until [ -e %s ]; do sleep 0.1; done; echo more > late.txt`, gate)})
	var cp string
	for cp == "" {
		if ctx.Err() != nil {
			t.Fatal("no checkpoint of the job on the remote")
		}
		if out, err := exec.Command("git", "-C", w.bare, "rev-parse", "-q", "--verify", "refs/hub/wip/"+id).Output(); err == nil {
			cp = strings.TrimSpace(string(out))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateFailed || st.Category != protocol.CategoryRemote ||
		!strings.Contains(st.Error, "could not push hub/"+id) || !strings.Contains(st.Error, "branches of jobs are not taken here") ||
		!strings.Contains(st.Error, "its last checkpoint ("+cp[:10]+", ") {
		t.Fatalf("status: %+v", st)
	}
	if st.Progress != "attempt 1 taken by worker far-1" {
		t.Errorf("progress: %q", st.Progress)
	}
	// What the worker had checkpointed is here; its last commit is not.
	if !st.Salvaged || st.Head != cp || hubtest.Git(t, w.repo, "rev-parse", "hub/"+id) != cp {
		t.Errorf("the hub's branch: head %s, salvaged %v; the checkpoint %s", st.Head, st.Salvaged, cp)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on hub/%s: %q", id, got)
	}
	w.tidied(t, id)
	// The commit is on the worker, where the reason says.
	var sha, clone string
	for _, f := range strings.Fields(st.Error) {
		if len(f) == 40 {
			sha = f
		}
		if strings.HasPrefix(f, wk.home) {
			clone = f
		}
	}
	if sha == "" || clone == "" {
		t.Fatalf("the reason names no commit or clone: %s", st.Error)
	}
	if got := hubtest.Git(t, clone, "show", sha+":late.txt"); got != "more" {
		t.Errorf("late.txt in the worker's commit: %q", got)
	}
	if got := hubtest.Git(t, clone, "rev-parse", "hub/"+id); got != sha {
		t.Errorf("the worker's branch hub/%s is %s, not %s", id, got, sha)
	}
}

// devServer runs `hub-temporal dev-server` on db and port until it is
// ready, and returns the process.
func devServer(t *testing.T, db string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(runner(t), "dev-server", "--db", db, "--port", fmt.Sprint(port))
	logf, err := os.OpenFile(db+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	for deadline := time.Now().Add(time.Minute); ; {
		b, _ := os.ReadFile(db + ".log")
		if strings.Count(string(b), "dev server ready") > restarts(db) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev server did not start:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	started[db]++
	return cmd
}

// started counts, per database, the dev servers started on it.
var started = map[string]int{}

func restarts(db string) int { return started[db] }

// TestRemoteTemporalRestarts: the Temporal server killed -9 and started
// again mid-job → the job still completes, its journal whole and nothing
// in it twice.
func TestRemoteTemporalRestarts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := devServer(t, db, port)
	w := newWorldAt(t, fmt.Sprintf("127.0.0.1:%d", port), "default")
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	steps := `for i in 1 2 3 4 5 6 7 8; do date +%s%N > step$i.txt; hub progress "step $i"; sleep 0.5; done; echo "all steps done"`
	id := w.start(t, ctx, cs, map[string]any{"task": "write eight steps", "exec": steps,
		"verify": `for i in 1 2 3 4 5 6 7 8; do test -s step$i.txt || exit 1; done`})
	progressed(t, ctx, cs, id, func(p string) bool { return p == "step 2" })
	_ = srv.Process.Kill()
	_, _ = srv.Process.Wait()
	devServer(t, db, port)

	st := waitFor(t, ctx, cs, id)[id]
	verified(t, st)
	stepsOnce(t, id, 8)
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":step8.txt"); got == "" {
		t.Errorf("step8.txt is empty on hub/%s", id)
	}
}

// TestRemoteSteer: steering reaches a worker on a remote machine.
func TestRemoteSteer(t *testing.T) {
	w := newWorld(t)
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)
	id := w.start(t, ctx, cs, map[string]any{"task": "wait for a steer and write it down",
		"exec": `for i in $(seq 1 600); do s=$(hub progress "waiting for steering"); if [ -n "$s" ]; then printf '%s\n' "$s" > steer.txt; exit 0; fi; sleep 0.1; done; exit 1`})
	progressed(t, ctx, cs, id, func(p string) bool { return p == "waiting for steering" })
	call(t, ctx, cs, "steer", map[string]any{"id": id, "text": "use teal"}, nil)
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateSucceeded {
		t.Fatalf("status: %+v", st)
	}
	if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":steer.txt"); got != "SUPERVISOR STEERING (overrides earlier guidance): use teal" {
		t.Errorf("steer.txt: %q", got)
	}
}

// bridge serves a unix socket at path that forwards each connection to the
// TCP address target, and returns path.
func bridge(t *testing.T, path, target string) string {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return path
}

// TestRemoteWorkerStops: a worker shut down (SIGTERM) mid-job hands the
// job back: what it did goes to the remote as the job's checkpoint, and
// another worker finishes the job from there; the job is not cancelled.
func TestRemoteWorkerStops(t *testing.T) {
	w := newWorld(t)
	first := w.startWorker("far-1", "--checkpoint-every", "1m")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	steps := `for i in 1 2 3 4 5 6; do
  if [ ! -f step$i.txt ]; then date +%s%N > step$i.txt; hub progress "step $i"; sleep 1; fi
done; echo "all steps done"`
	id := w.start(t, ctx, cs, map[string]any{"task": "write six steps", "exec": steps,
		"verify": `for i in 1 2 3 4 5 6; do test -s step$i.txt || exit 1; done`})
	progressed(t, ctx, cs, id, func(p string) bool { return p == "step 2" })
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := first.cmd.Process.Wait(); err != nil {
		t.Fatal(err)
	}
	cp := hubtest.Git(t, w.bare, "rev-parse", "refs/hub/wip/"+id)
	saved := map[string]string{}
	for _, f := range strings.Fields(hubtest.Git(t, w.bare, "ls-tree", "--name-only", cp)) {
		saved[f] = hubtest.Git(t, w.bare, "rev-parse", cp+":"+f)
	}
	if saved["step1.txt"] == "" || saved["step2.txt"] == "" {
		t.Fatalf("the handed-back checkpoint holds %v", saved)
	}
	w.startWorker("far-2")
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateSucceeded {
		t.Fatalf("status: %+v", st)
	}
	for f, blob := range saved {
		if got := hubtest.Git(t, w.repo, "rev-parse", "hub/"+id+":"+f); got != blob {
			t.Errorf("%s on hub/%s is %s, the checkpoint had %s", f, id, got, blob)
		}
	}
	out, _, _ := hubtest.Hub(t, "events", id)
	if !strings.Contains(out, "attempt 2 taken by worker far-2, from checkpoint "+cp[:10]) {
		t.Errorf("events:\n%s", out)
	}
}

// TestRemoteAutoRoute: with this machine's slots busy, engine auto sends a
// job to a queue that takes auto jobs and has a live worker, and says why.
func TestRemoteAutoRoute(t *testing.T) {
	w := newWorld(t)
	w.config(map[string]any{"auto": true}, map[string]any{"max_running": 1})
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	// The one local slot, taken.
	var sr protocol.StartResult
	call(t, ctx, cs, "start", map[string]any{"task": "hold the slot", "repo": w.repo, "engine": "exec",
		"exec": `hub progress "holding"; sleep 60`}, &sr)
	busy := sr.ID
	progressed(t, ctx, cs, busy, func(p string) bool { return p == "holding" })
	// The worker polls the queue (what the router reads).
	for {
		out, _ := exec.Command(w.runner, "health", "far").Output()
		if strings.Contains(string(out), `"workers":1`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("health: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _, code := hubtest.Hub(t, "route", "explain", "--repo", w.repo, "--exec", "true", "--task", "t")
	if code != 0 || !strings.Contains(out, "where: queue far: this machine's 1 slots are busy; far has 4 of 4 slots free and 1 worker(s)") {
		t.Errorf("route explain (exit %d):\n%s", code, out)
	}
	call(t, ctx, cs, "start", map[string]any{"task": "fix bug.txt", "repo": w.repo, "engine": "auto",
		"exec": `printf 'fixed\n' > bug.txt`, "verify": `grep -qx fixed bug.txt`}, &sr)
	notes := strings.Join(sr.Notes, "\n")
	if !strings.Contains(notes, "engine auto: queue far: this machine's 1 slots are busy") || !strings.Contains(notes, "runs on queue far") {
		t.Errorf("start notes:\n%s", notes)
	}
	st := waitFor(t, ctx, cs, sr.ID)[sr.ID]
	if st.State != protocol.StateSucceeded {
		t.Fatalf("status: %+v", st)
	}
	var rr protocol.ResultResult
	call(t, ctx, cs, "result", map[string]any{"id": sr.ID, "evidence": true}, &rr)
	if !slices.Contains(rr.Evidence.Notes, "ran on worker far-1 of queue far") {
		t.Errorf("evidence notes: %q", rr.Evidence.Notes)
	}
	call(t, ctx, cs, "stop", map[string]any{"id": busy}, nil)
}

// TestRemoteStopWaiting: a remote job stopped while it waits for a worker
// ends cancelled at once, with nothing booked left open.
func TestRemoteStopWaiting(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	cs := w.mcp(ctx)
	id := w.start(t, ctx, cs, map[string]any{"task": "never taken", "exec": "true"})
	progressed(t, ctx, cs, id, func(p string) bool {
		return p == fmt.Sprintf("waiting for a worker on queue far (task queue far at %s); no worker polls it now: "+
			"start one with `hub-temporal worker --temporal %s --namespace %s --queue far`", w.addr, w.addr, w.namespace)
	})
	call(t, ctx, cs, "stop", map[string]any{"id": id}, nil)
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateCancelled || st.Error != "stopped before a worker of queue far took it" || st.Head != st.Base {
		t.Fatalf("status: %+v", st)
	}
	closedOnce(t, id)
}

// TestRemoteRelayKilled: the job's relay killed -9 twice while the daemon
// lives → the daemon starts it again each time (it keeps watching the new
// one), and the job completes with nothing in its journal twice.
func TestRemoteRelayKilled(t *testing.T) {
	w := newWorld(t)
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)

	steps := `for i in 1 2 3 4 5 6; do date +%s%N > step$i.txt; hub progress "step $i"; sleep 0.5; done`
	id := w.start(t, ctx, cs, map[string]any{"task": "write six steps", "exec": steps,
		"verify": `for i in 1 2 3 4 5 6; do test -s step$i.txt || exit 1; done`})
	for _, at := range []int{2, 4} {
		progressed(t, ctx, cs, id, func(p string) bool {
			n := 0
			_, _ = fmt.Sscanf(p, "step %d", &n)
			return n >= at
		})
		pids := pidsOf(w.env.Home, "relay "+id)
		if len(pids) != 1 {
			t.Fatalf("relays of %s at step %d: %v", id, at, pids)
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	verified(t, waitFor(t, ctx, cs, id)[id])
	stepsOnce(t, id, 6)
	closedOnce(t, id)
}

// progressed polls the job's status until its progress note is one ok
// takes, failing the test if the job ends first, and returns that status.
func progressed(t *testing.T, ctx context.Context, cs *mcp.ClientSession, id string, ok func(progress string) bool) protocol.JobStatus {
	t.Helper()
	var st protocol.JobStatus
	for !ok(st.Progress) {
		time.Sleep(50 * time.Millisecond)
		call(t, ctx, cs, "status", map[string]any{"id": id}, &st)
		if st.State.Terminal() {
			t.Fatalf("ended before the progress looked for: %+v", st)
		}
	}
	return st
}

// verified fails the test unless the job succeeded with its verify passed.
func verified(t *testing.T, st protocol.JobStatus) {
	t.Helper()
	if st.State != protocol.StateSucceeded || st.VerifyExit == nil || *st.VerifyExit != 0 {
		t.Fatalf("status: %+v", st)
	}
}

// stepsOnce checks the job's journal has each of "step 1" to "step n" once,
// and returns the journal as hub events prints it.
func stepsOnce(t *testing.T, id string, n int) string {
	t.Helper()
	out, _, _ := hubtest.Hub(t, "events", id)
	for i := 1; i <= n; i++ {
		if c := strings.Count(out, fmt.Sprintf("step %d\n", i)); c != 1 {
			t.Errorf("step %d is %d times in the journal:\n%s", i, c, out)
		}
	}
	return out
}

// TestRemoteWorkerRewritesGit: a job's worker points the clone's origin
// elsewhere and plants a pre-push hook in it; the worker still pushes the
// job's branch to the remote the job named, without running the hook, and
// the next job on that worker fetches its base from the right remote.
func TestRemoteWorkerRewritesGit(t *testing.T) {
	w := newWorld(t)
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 3*time.Minute)
	cs := w.mcp(ctx)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hostile := fmt.Sprintf(`git remote set-url origin /nonexistent/remote.git
hooks=$(git rev-parse --git-common-dir)/hooks; mkdir -p "$hooks"
printf '#!/bin/sh\ntouch %s\nexit 1\n' > "$hooks/pre-push"; chmod +x "$hooks/pre-push"
printf 'fixed\n' > bug.txt`, marker)
	for _, task := range []string{"fix bug.txt and rewrite the clone's git", "fix bug.txt after"} {
		id := w.start(t, ctx, cs, map[string]any{"task": task, "exec": hostile, "verify": `grep -qx fixed bug.txt`})
		verified(t, waitFor(t, ctx, cs, id)[id])
		if got := hubtest.Git(t, w.repo, "show", "hub/"+id+":bug.txt"); got != "fixed" {
			t.Errorf("bug.txt on hub/%s: %q", id, got)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the job's pre-push hook ran")
	}
}

// TestRemoteIsolationRefused: a job asks for a level its worker's machine
// cannot give (no sandbox there, though the hub's machine has one) → the
// worker refuses it rather than run it at a lower level, the job fails
// saying why, and the worker goes on with the jobs it can run.
func TestRemoteIsolationRefused(t *testing.T) {
	w := newWorld(t)
	w.workerEnv = []string{"HUB_SANDBOX=none"} // a mechanism that is no mechanism: nothing sandboxes there
	w.startWorker("far-1")
	ctx := hubtest.Deadline(t, 2*time.Minute)
	cs := w.mcp(ctx)
	id := w.start(t, ctx, cs, map[string]any{"task": "fix bug.txt", "exec": `printf 'fixed\n' > bug.txt`, "isolation": "isolated"})
	st := waitFor(t, ctx, cs, id)[id]
	if st.State != protocol.StateFailed || !strings.Contains(st.Error, "HUB_SANDBOX") || st.Head != st.Base ||
		hubtest.Git(t, w.repo, "rev-parse", "hub/"+id) != st.Base {
		t.Fatalf("status: %+v", st)
	}
	t.Logf("refused on the worker: %s: %s", st.Category, st.Error)
	id = w.start(t, ctx, cs, map[string]any{"task": "fix bug.txt", "exec": `printf 'fixed\n' > bug.txt`, "verify": `grep -qx fixed bug.txt`})
	verified(t, waitFor(t, ctx, cs, id)[id])
}
