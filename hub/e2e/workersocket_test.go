package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/sandbox"
)

// rawCallEnv makes this test binary, run by a worker, a raw client of the
// job's own socket (HUB_SOCKET): it sends the daemon's method the variable
// names, as the daemon would, and prints what it got. See rawCall.
const rawCallEnv = "HUB_E2E_RAW_CALL"

func init() {
	if method := os.Getenv(rawCallEnv); method != "" {
		os.Exit(rawCall(method))
	}
}

// rawCall calls method (shim/reply, shim/steer or shim/stop) on HUB_SOCKET;
// a reply names the job's pending question, which it reads from the daemon
// (HUB_HOME). It prints "ok" or "error <code> <message> (hint: <hint>)" and
// exits 0 or 1.
func rawCall(method string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var params any
	switch method {
	case protocol.MethodShimReply:
		qid, err := pendingQuestion(ctx)
		if err != nil {
			fmt.Println("setup:", err)
			return 2
		}
		params = protocol.ShimReplyParams{QuestionID: qid, Text: "yes, answered by the worker itself"}
	case protocol.MethodShimSteer:
		params = protocol.ShimSteerParams{Text: "steered by the worker itself"}
	case protocol.MethodShimStop:
		params = protocol.ShimStopParams{Reason: "stopped by the worker itself"}
	}
	nc, err := rpc.Dial(ctx, os.Getenv("HUB_SOCKET"))
	if err != nil {
		fmt.Println("setup:", err)
		return 2
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	err = c.Call(ctx, method, params, nil)
	var je *jsonrpc2.Error
	switch {
	case err == nil:
		fmt.Println("ok")
		return 0
	case errors.As(err, &je):
		fmt.Printf("error %d %s (hint: %s)\n", je.Code, je.Message, rpc.HintOf(err))
		return 1
	}
	fmt.Println("setup:", err)
	return 2
}

// pendingQuestion is the id of the job's pending question, from the daemon.
func pendingQuestion(ctx context.Context) (string, error) {
	c, err := client.Connect(ctx, config.Paths{Home: os.Getenv("HUB_HOME")}, client.Options{ClientName: "e2e-raw"})
	if err != nil {
		return "", err
	}
	defer c.Close()
	st, err := c.Daemon().JobStatus(ctx, protocol.IDParams{ID: os.Getenv("HUB_JOB")})
	if err != nil {
		return "", err
	}
	if st.Question == nil {
		return "", fmt.Errorf("job %s has no pending question (%s)", st.ID, st.State)
	}
	return st.Question.ID, nil
}

// workerTries begins the worker of the tests below: it asks (in the
// background); what follows tries to answer it, steer and stop its own job
// through its socket (raw, as the daemon would) and through the daemon
// (`hub reply`, `hub steer`, `hub stop`), writing what each got into
// report.txt as "<attempt>: <exit code> <output>", and says so in a progress
// note; it ends once its question is answered.
const workerTries = `try() { name=$1; shift; out=$( ( "$@" ) 2>&1 ); printf '%s: %s %s\n' "$name" "$?" "$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-400)" >> report.txt; }
hub ask "may I drop the production database?" > answer.txt &
asked=$!
`

// socketAttempts and daemonAttempts are the attempts the worker writes into
// report.txt, on its socket and through the daemon, and what the refusal of
// each must say.
var socketAttempts = map[string]string{
	"raw-reply": "worker cannot answer", "raw-steer": "worker cannot answer", "raw-stop": "worker cannot answer",
}
var daemonAttempts = map[string]string{
	"cli-reply": "own worker cannot reply to it", "cli-steer": "own worker cannot steer it", "cli-stop": "own worker cannot stop it",
}

// TestWorkerSocket: a worker can ask and report, and nothing more: its
// attempts to answer its own question, steer or stop its job — on the job's
// socket as the daemon would, or through the daemon — are each refused
// with a reason; the question stays pending until the supervisor answers,
// and the worker gets the supervisor's answer.
func TestWorkerSocket(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw := func(method string) string { return fmt.Sprintf("env %s=%s '%s'", rawCallEnv, method, self) }
	// HUB_HOME is set here for the daemon's commands in case the worker's
	// environment lacks it.
	exec := `export HUB_HOME='` + w.paths.Home + `'
` + workerTries + `hub wait "$HUB_JOB" --timeout 30s > /dev/null
try raw-reply ` + raw(protocol.MethodShimReply) + `
try raw-steer ` + raw(protocol.MethodShimSteer) + `
try raw-stop ` + raw(protocol.MethodShimStop) + `
try cli-reply hub reply "$HUB_JOB" "yes, answered by the worker itself"
try cli-steer hub steer "$HUB_JOB" "steered by the worker itself"
try cli-stop hub stop "$HUB_JOB"
hub progress "tried everything"
wait $asked
`
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "answer yourself", Repo: repo,
		Engine: "exec", Exec: exec})
	st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.Progress == "tried everything" || s.State.Terminal() })
	if st.State != protocol.StateNeedsInput || st.Question == nil {
		t.Fatalf("after the worker's attempts the job is %s (question %+v), want its question still pending: %s\n%s",
			st.State, st.Question, st.Error, readFile(t, w.paths.WorkerLog(r.ID)))
	}
	qid := st.Question.ID

	// Nothing of it reached the store: no answer, no steering.
	evs := hubtest.Daemon(t, c).JobEvents(ctx, protocol.EventsParams{ID: r.ID})
	for _, ev := range evs.Events {
		if ev.Kind == protocol.EventAnswer || strings.Contains(ev.Text, "by the worker itself") {
			t.Errorf("the worker's attempt left a %s event: %q", ev.Kind, ev.Text)
		}
	}

	// The supervisor answers; the worker gets that answer.
	rep := hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, QuestionID: qid, Text: "no, keep it"})
	if !rep.Delivered || rep.QuestionID != qid {
		t.Errorf("the supervisor's reply: %+v", rep)
	}
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30, Since: st.Question.Cursor})
	if end := wr.Jobs[0]; end.State != protocol.StateSucceeded {
		t.Fatalf("the job ended %s: %s", end.State, end.Error)
	}
	if a := hubtest.Git(t, repo, "show", "hub/"+r.ID+":answer.txt"); a != "no, keep it" {
		t.Errorf("the worker got %q, want the supervisor's answer", a)
	}
	checkAttempts(t, hubtest.Git(t, repo, "show", "hub/"+r.ID+":report.txt"), socketAttempts, daemonAttempts)
}

// TestWorkerSocketSandboxed: inside bubblewrap the worker still asks through
// its socket (the shim sees its pid from outside the sandbox's namespace),
// and `hub reply` there neither reaches the daemon nor starts one: it says
// what works inside a job.
func TestWorkerSocketSandboxed(t *testing.T) {
	if a := sandbox.Probe(); !a.OK {
		t.Fatalf("the sandbox does not work here (make test installs bubblewrap): %s", a.Reason)
	}
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	exec := `export HUB_HOME='` + w.paths.Home + `'
` + workerTries + `try cli-reply hub reply "$HUB_JOB" "yes, answered by the worker itself"
hub progress "tried everything"
wait $asked
`
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "answer yourself", Repo: repo,
		Engine: "exec", Isolation: protocol.IsolationIsolated, Exec: exec})
	// The worker cannot wait on the daemon from in there: its question
	// may come after its note.
	st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool {
		return s.Progress == "tried everything" && s.State == protocol.StateNeedsInput || s.State.Terminal()
	})
	if st.State != protocol.StateNeedsInput || st.Question == nil {
		t.Fatalf("after the worker's attempt the job is %s (question %+v), want its question pending: %s\n%s",
			st.State, st.Question, st.Error, readFile(t, w.paths.WorkerLog(r.ID)))
	}
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, QuestionID: st.Question.ID, Text: "no, keep it"})
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30, Since: st.Question.Cursor})
	if end := wr.Jobs[0]; end.State != protocol.StateSucceeded {
		t.Fatalf("the job ended %s: %s", end.State, end.Error)
	}
	if a := hubtest.Git(t, repo, "show", "hub/"+r.ID+":answer.txt"); a != "no, keep it" {
		t.Errorf("the worker got %q, want the supervisor's answer", a)
	}
	checkAttempts(t, hubtest.Git(t, repo, "show", "hub/"+r.ID+":report.txt"),
		map[string]string{"cli-reply": "`hub ask` and `hub progress` work there"})
}

// TestWorkerSocketOtherJob: a worker cannot answer, steer or stop another
// job through that job's socket either (it is not that job's descendant,
// but it is a job's worker).
func TestWorkerSocketOtherJob(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "ask", Repo: repo, Engine: "exec",
		Exec: `hub ask "may I drop the production database?" > answer.txt`})
	stA := w.until(ctx, a.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput || s.State.Terminal() })
	if stA.Question == nil {
		t.Fatalf("job %s is %s without a question", a.ID, stA.State)
	}
	raw := func(method string) string {
		return fmt.Sprintf("env HUB_SOCKET='%s' HUB_JOB=%s %s=%s '%s'", w.paths.ShimSocket(a.ID), a.ID, rawCallEnv, method, self)
	}
	exec := `export HUB_HOME='` + w.paths.Home + `'
` + `try() { name=$1; shift; out=$( ( "$@" ) 2>&1 ); printf '%s: %s %s
' "$name" "$?" "$(printf '%s' "$out" | tr '
' ' ' | cut -c1-400)" >> report.txt; }
try raw-reply ` + raw(protocol.MethodShimReply) + `
try raw-steer ` + raw(protocol.MethodShimSteer) + `
try raw-stop ` + raw(protocol.MethodShimStop) + `
`
	b := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "answer another", Repo: repo, Engine: "exec", Exec: exec})
	if end := w.until(ctx, b.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() }); end.State != protocol.StateSucceeded {
		t.Fatalf("job %s ended %s: %s", b.ID, end.State, end.Error)
	}
	checkAttempts(t, hubtest.Git(t, repo, "show", "hub/"+b.ID+":report.txt"), socketAttempts)
	if st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: a.ID}); st.State != protocol.StateNeedsInput ||
		st.Question == nil || st.Question.ID != stA.Question.ID {
		t.Fatalf("job %s is %s after the other worker's attempts; want its question still pending", a.ID, st.State)
	}
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: a.ID, QuestionID: stA.Question.ID, Text: "no"})
	if end := w.until(ctx, a.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() }); end.State != protocol.StateSucceeded {
		t.Errorf("job %s ended %s: %s", a.ID, end.State, end.Error)
	}
}

// checkAttempts checks that each attempt in report failed saying what want has for it.
func checkAttempts(t *testing.T, report string, want ...map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(report, "\n") {
		if name, rest, ok := strings.Cut(line, ": "); ok {
			got[name] = rest
		}
	}
	for _, m := range want {
		for name, says := range m {
			out, ok := got[name]
			switch {
			case !ok:
				t.Errorf("no %s attempt in the report:\n%s", name, report)
			case strings.HasPrefix(out, "0 "):
				t.Errorf("%s went through: %s", name, out)
			case !strings.Contains(out, says):
				t.Errorf("%s: %s; want it refused saying %q", name, out, says)
			}
		}
	}
	b, _ := json.Marshal(got)
	t.Logf("the worker's attempts: %s", b)
}
