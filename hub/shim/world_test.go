//go:build unix

package shim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/internal/hubtest/world"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// These tests drive a job's shim in-process (package world) through its
// socket, as its worker and its daemon do.

// shimClient connects to job id's shim socket.
func shimClient(t *testing.T, w *world.World, id string) protocol.ShimClient {
	t.Helper()
	nc, err := rpc.Dial(w.Ctx, w.Paths.ShimSocket(id))
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.NewConn(w.Ctx, nc, nil, nil)
	t.Cleanup(func() { c.Close() })
	return protocol.ShimClient{C: c}
}

// TestShimWakesTheDaemon: a progress report the shim takes reaches a
// subscriber of the daemon as job/changed, pushed by the shim's
// shim/changed call (the daemon does not poll).
func TestShimWakesTheDaemon(t *testing.T) {
	w := world.New(t, world.Options{})
	got := make(chan protocol.JobStatus, 64)
	sub, err := client.Connect(w.Ctx, w.Paths, client.Options{ClientName: "subscriber",
		Handler: func(_ context.Context, _ *rpc.Conn, req *jsonrpc2.Request) (any, error) {
			var st protocol.JobStatus
			if req.Method == protocol.NotifyJobChanged && req.Params != nil && json.Unmarshal(*req.Params, &st) == nil {
				got <- st
			}
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	hubtest.Daemon(t, sub).Subscribe(w.Ctx, protocol.SubscribeParams{})
	r := w.Start(w.Repo(map[string]string{"a.txt": "a\n"}), `sleep 60`)
	w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })

	sc := shimClient(t, w, r.ID)
	sent := time.Now()
	if _, err := sc.WorkerProgress(w.Ctx, protocol.ProgressParams{Job: r.ID, Note: "half way"}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case st := <-got:
			if st.ID == r.ID && st.Progress == "half way" {
				t.Logf("progress reached the subscriber %s after it was sent", time.Since(sent).Round(time.Millisecond))
				hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: r.ID})
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the progress note did not reach the subscriber in 10s")
		}
	}
}

// TestShimDeliversAReply: a worker's question makes the job need input; the
// supervisor's job/reply goes through the daemon to the shim, whose
// shim/reply says it was delivered, and the worker's ask returns it.
func TestShimDeliversAReply(t *testing.T) {
	w := world.New(t, world.Options{})
	r := w.Start(w.Repo(map[string]string{"a.txt": "a\n"}), `sleep 60`)
	w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	sc := shimClient(t, w, r.ID)
	var (
		wg     sync.WaitGroup
		answer *protocol.AskResult
		askErr error
	)
	wg.Go(func() {
		answer, askErr = sc.WorkerAsk(w.Ctx, protocol.AskParams{Job: r.ID, Question: "tabs or spaces?"})
	})
	st := w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateNeedsInput })
	if st.Question == nil || st.Question.Text != "tabs or spaces?" {
		t.Fatalf("the pending question: %+v", st.Question)
	}
	rep := hubtest.Daemon(t, w.C).JobReply(w.Ctx, protocol.ReplyParams{ID: r.ID, Text: "spaces"})
	if !rep.Delivered || rep.QuestionID != st.Question.ID {
		t.Errorf("reply result %+v", rep)
	}
	wg.Wait()
	if askErr != nil || answer.Answer != "spaces" || answer.QuestionID != st.Question.ID {
		t.Fatalf("the worker's ask returned %+v, %v", answer, askErr)
	}
	w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: r.ID})
	if st := w.Ended(r.ID)[0]; st.State != protocol.StateCancelled {
		t.Errorf("stopped job ended %s", st.State)
	}
}

// TestShimStopEndsTheWorkersTree: stop ends the worker and what it left
// running, in its group or in a session of its own, and keeps what it wrote.
func TestShimStopEndsTheWorkersTree(t *testing.T) {
	w := world.New(t, world.Options{})
	r := w.Start(w.Repo(map[string]string{"a.txt": "a\n"}),
		`setsid sleep 301 & sleep 302 & echo started > started.txt; wait`)
	w.Until(r.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	marker := []byte("HUB_JOB=" + r.ID + "\x00")
	deadline := time.Now().Add(10 * time.Second)
	for len(jobProcesses(marker)) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(jobProcesses(marker)); n < 2 {
		t.Fatalf("the worker's sleeps did not start (%d found)", n)
	}
	hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: r.ID})
	st := w.Ended(r.ID)[0]
	if st.State != protocol.StateCancelled || st.Category != protocol.CategoryStopped {
		t.Fatalf("stopped job: %s (%s): %s", st.State, st.Category, st.Error)
	}
	if left := jobProcesses(marker); len(left) > 0 {
		t.Errorf("the job's processes outlived it: %v", left)
	}
	if got := hubtest.Git(t, w.Status(r.ID).Repo, "show", r.Branch+":started.txt"); got != "started" {
		t.Errorf("the branch has started.txt = %q", got)
	}
}

// jobProcesses lists the live processes whose environment holds marker.
func jobProcesses(marker []byte) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			continue // a zombie is gone
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out = append(out, filepath.Base(d)+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// TestShimSettlesADeadShimsJob: a job whose shim died mid-run (it let go of
// the job's lock with the job still running) is settled: what its worktree
// holds is committed on its branch as salvage, and it ends failed, saying
// why, with its slot freed.
func TestShimSettlesADeadShimsJob(t *testing.T) {
	held := make(chan *os.File, 1)
	w := world.New(t, world.Options{Spawn: func(_ *world.World, id string, lock *os.File) error {
		fd, err := syscall.Dup(int(lock.Fd()))
		if err != nil {
			return err
		}
		held <- os.NewFile(uintptr(fd), lock.Name()) // a shim that took the job, and will die
		return nil
	}})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	r := w.Start(repo, `true`)
	lock := <-held
	// What the dead shim had made: the job's worktree on its branch, with
	// the worker's uncommitted work in it, and the job running.
	wt := w.Paths.Worktree(r.ID)
	hubtest.Git(t, repo, "worktree", "add", "-q", "-b", r.Branch, wt, r.Base)
	if err := os.WriteFile(filepath.Join(wt, "half.txt"), []byte("half\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := w.Store()
	if err := st.Update(w.Ctx, r.ID, func(j *store.Job) error { j.Worktree = wt; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetState(w.Ctx, r.ID, []protocol.State{protocol.StatePreparing}, protocol.StateRunning, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	lock.Close() // the shim dies
	end := w.Ended(r.ID)[0]
	if end.State != protocol.StateFailed || !end.Salvaged || !strings.Contains(end.Error, "the job's shim died") ||
		!strings.Contains(end.Error, "committed as salvage on "+r.Branch) {
		t.Fatalf("settled: %s salvaged %v: %s", end.State, end.Salvaged, end.Error)
	}
	if got := hubtest.Git(t, repo, "show", r.Branch+":half.txt"); got != "half" {
		t.Errorf("the branch has half.txt = %q", got)
	}
	res := hubtest.Daemon(t, w.C).JobResult(w.Ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	if ev := res.Evidence; ev == nil || len(ev.Files) != 1 || ev.Files[0].Path != "half.txt" || ev.State != protocol.StateFailed {
		t.Errorf("the settled job's evidence: %+v", res.Evidence)
	}
	if n, _, err := st.CountActive(w.Ctx); err != nil || n != 0 {
		t.Errorf("%d slots held after settling (%v)", n, err)
	}
}

// TestShimEndings: the shim ends a job by what happened — the worker's exit,
// verify's — each with its category, and the evidence the shim observed.
func TestShimEndings(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	worker := w.Start(repo, `echo part > part.txt; exit 3`)
	verify := w.Start(repo, `echo v > v.txt`, func(p *protocol.StartParams) { p.Verify = "echo checking; exit 4" })
	timeout := w.Start(repo, `echo t > t.txt; sleep 30`, func(p *protocol.StartParams) { p.TimeoutS = 1 })
	w.Ended(worker.ID, verify.ID, timeout.ID)
	for _, c := range []struct {
		id       string
		state    protocol.State
		category string
		errHas   string
		file     string
	}{
		{worker.ID, protocol.StateFailed, protocol.CategoryWorker, "code 3", "part.txt"},
		{verify.ID, protocol.StateFailed, protocol.CategoryVerify, "exited 4", "v.txt"},
		{timeout.ID, protocol.StateTimedOut, protocol.CategoryTimeout, "timed out", "t.txt"},
	} {
		res := hubtest.Daemon(t, w.C).JobResult(w.Ctx, protocol.ResultParams{ID: c.id, Evidence: true})
		ev := res.Evidence
		if res.State != c.state || ev == nil || ev.Category != c.category || !strings.Contains(ev.Error, c.errHas) {
			t.Errorf("job %s: %s, evidence %+v; want %s (%s) with %q", c.id, res.State, ev, c.state, c.category, c.errHas)
			continue
		}
		if hubtest.Git(t, repo, "cat-file", "-t", "hub/"+c.id+":"+c.file) != "blob" {
			t.Errorf("job %s: %s is not on its branch", c.id, c.file)
		}
		if c.category == protocol.CategoryVerify && (ev.Verify == nil || ev.Verify.ExitCode != 4 || !strings.Contains(ev.Verify.OutputTail, "checking")) {
			t.Errorf("verify's evidence: %+v", ev.Verify)
		}
	}
}
