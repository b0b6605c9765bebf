//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestLifecycle covers the endings and the watchdogs, each on a real exec job.
func TestLifecycle(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")

	type want struct {
		state    protocol.State
		errHas   string
		salvaged bool
		file     string // a file the branch must carry
	}
	cases := []struct {
		name string
		p    protocol.StartParams
		want want
	}{
		{"ask times out and the worker goes on",
			protocol.StartParams{Exec: `hub ask "anyone?" || echo "went on alone" > alone.txt`, AskTimeoutS: 1},
			want{state: protocol.StateSucceeded, file: "alone.txt"}},
		{"silence is a stall",
			protocol.StartParams{Exec: `echo half > half.txt; sleep 30`, StallTimeoutS: 1},
			want{state: protocol.StateFailed, errHas: "stalled", salvaged: true, file: "half.txt"}},
		{"progress keeps a long worker alive",
			protocol.StartParams{Exec: `for i in $(seq 1 15); do hub progress "step $i"; sleep 0.3; done; echo ok > ok.txt`, StallTimeoutS: 3},
			want{state: protocol.StateSucceeded, file: "ok.txt"}},
		{"hard timeout",
			protocol.StartParams{Exec: `echo t > t.txt; while true; do echo tick; sleep 0.2; done`, TimeoutS: 2},
			want{state: protocol.StateTimedOut, errHas: "timed out", salvaged: true, file: "t.txt"}},
		{"worker exits non-zero",
			protocol.StartParams{Exec: `echo partial > p.txt; exit 7`},
			want{state: protocol.StateFailed, errHas: "code 7", salvaged: true, file: "p.txt"}},
		{"verify times out",
			protocol.StartParams{Exec: `echo v > v.txt`, Verify: "sleep 30", VerifyTimeoutS: 1},
			want{state: protocol.StateFailed, errHas: "verify timed out", file: "v.txt"}},
		{"a huge line and binary output do not fail the run",
			protocol.StartParams{Exec: `head -c 200000 /dev/zero | tr '\0' x; echo; head -c 3000 /dev/urandom; echo; echo fine > fine.txt`},
			want{state: protocol.StateSucceeded, file: "fine.txt"}},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		tc.p.Task, tc.p.Repo, tc.p.Engine = tc.name, repo, "exec"
		ids[i] = hubtest.Daemon(t, c).JobStart(ctx, tc.p).ID
	}
	// With the default 4 slots the rest queue; wait for all.
	var wr protocol.WaitResult
	for {
		wr = hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 90, Since: wr.Cursor})
		if !wr.Done {
			t.Fatalf("jobs did not end: %+v", wr)
		}
		all := true
		for _, st := range wr.Jobs {
			all = all && st.State.Terminal()
		}
		if all {
			break
		}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: ids[i]})
			if st.State != tc.want.state || !strings.Contains(st.Error, tc.want.errHas) || st.Salvaged != tc.want.salvaged {
				t.Fatalf("got state %s error %q salvaged %v; want %s, %q, %v", st.State, st.Error, st.Salvaged,
					tc.want.state, tc.want.errHas, tc.want.salvaged)
			}
			if tc.want.file != "" {
				hubtest.Git(t, repo, "cat-file", "-e", "hub/"+ids[i]+":"+tc.want.file)
			}
		})
	}
	checkLedger(t, w)
}

// TestStop: stopping a running job cancels it, kills its process group and
// keeps its work; stopping a queued job cancels it at once.
func TestStop(t *testing.T) {
	w := newWorld(t)
	t.Setenv("HUB_MAX_RUNNING", "1")
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	run := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "long", Repo: repo,
		Engine: "exec", Exec: `echo some > some.txt; hub progress started; sleep 300 & sleep 300`})
	queued := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "waits", Repo: repo,
		Engine: "exec", Exec: "true"})
	w.until(ctx, run.ID, func(s protocol.JobStatus) bool { return s.Progress == "started" })
	if st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: queued.ID}); st.State != protocol.StateQueued {
		t.Fatalf("second job should queue behind the one slot: %s", st.State)
	}
	qs := hubtest.Daemon(t, c).JobStop(ctx, protocol.IDParams{ID: queued.ID})
	if qs.State != protocol.StateCancelled {
		t.Errorf("stopped queued job is %s", qs.State)
	}
	st := hubtest.Daemon(t, c).JobStop(ctx, protocol.IDParams{ID: run.ID})
	if st.State != protocol.StateCancelled || !st.Salvaged {
		t.Fatalf("stopped job: %+v", st)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+run.ID+":some.txt"); got != "some" {
		t.Errorf("stopped job's work: %q", got)
	}
	st2, _ := storeJob(t, w, run.ID)
	if proc.GroupAlive(st2.EnginePGID) {
		t.Errorf("the stopped job's process group %d is alive", st2.EnginePGID)
	}
	checkLedger(t, w)
}

// TestReadJob: a read job answers in a throwaway checkout; no branch stays.
func TestReadJob(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "what does bug.txt say?",
		Repo: repo, Kind: protocol.KindRead, Engine: "exec", Exec: `echo "bug.txt says: $(cat bug.txt)"; echo scratch > scratch.txt`})
	if r.Branch != "" {
		t.Errorf("read job got a branch %s", r.Branch)
	}
	hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30})
	rr := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	if rr.State != protocol.StateSucceeded || !strings.Contains(rr.Summary, "bug.txt says: broken") {
		t.Errorf("read result:\n%s", rr.Summary)
	}
	if br := hubtest.Git(t, repo, "branch", "--list", "hub/*"); br != "" {
		t.Errorf("read job left a branch: %s", br)
	}
	if _, err := os.Stat(filepath.Join(w.paths.Worktree(r.ID))); err == nil {
		t.Error("read job left its checkout")
	}
	// cwd without a repo: exec cannot run read-only there, so it is refused.
	_, err := c.Daemon().JobStart(ctx, protocol.StartParams{Task: "look", Cwd: t.TempDir(), Kind: protocol.KindRead, Engine: "exec", Exec: "ls"})
	assertErr(t, err, protocol.CodeRefused, "read-only")
}

// TestDirtyCheckout: uncommitted changes in the user's checkout are not
// carried, and the result says so.
func TestDirtyCheckout(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	if err := os.WriteFile(filepath.Join(repo, "bug.txt"), []byte("my local edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "read bug.txt",
		Repo: repo, Engine: "exec", Exec: `cp bug.txt seen.txt`})
	hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30})
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":seen.txt"); got != "broken" {
		t.Errorf("the worker saw %q; it must start from the commit", got)
	}
	rr := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	if !rr.Evidence.Observed.UserCheckoutDirty || !strings.Contains(rr.Summary, "uncommitted changes") {
		t.Errorf("result does not say the checkout was dirty:\n%s", rr.Summary)
	}
	if got := readFile(t, filepath.Join(repo, "bug.txt")); got != "my local edit" {
		t.Errorf("the user's edit was touched: %q", got)
	}
}

// TestQuestionSurvivesDaemonRestart: a question asked before the daemon dies
// is still visible after, and the answer still reaches the worker.
func TestQuestionSurvivesDaemonRestart(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "ask",
		Repo: repo, Engine: "exec", Exec: `hub ask "name?" > name.txt`})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })
	if err := syscall.Kill(c.Info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.DisconnectNotify()
	c2 := w.connect(ctx)
	st := hubtest.Daemon(t, c2).JobStatus(ctx, protocol.IDParams{ID: r.ID})
	if st.Question == nil || st.Question.Text != "name?" {
		t.Fatalf("after restart the question is gone: %+v", st)
	}
	hubtest.Daemon(t, c2).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "ada"})
	wr := hubtest.Daemon(t, c2).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 30, Since: st.Question.Cursor})
	if wr.Jobs[0].State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s", wr.Jobs[0].State, wr.Jobs[0].Error)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":name.txt"); got != "ada" {
		t.Errorf("answer did not reach the worker: %q", got)
	}
}

// TestStopDuringVerify: stopping a job while its verify runs cancels it
// (not failed, not verified), kills verify's process tree, and closes the
// reservation once.
func TestStopDuringVerify(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "slow verify", Repo: repo,
		Engine: "exec", Exec: "echo v > v.txt", Verify: "sleep 300 & sleep 300"})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateVerifying })
	st := hubtest.Daemon(t, c).JobStop(ctx, protocol.IDParams{ID: r.ID})
	if st.State != protocol.StateCancelled {
		t.Fatalf("stopped during verify: %+v", st)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+r.ID+":v.txt"); got != "v" {
		t.Errorf("the work is not on the branch: %q", got)
	}
	// No sleep of verify's is left anywhere (they ran in the verify checkout).
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, w.paths.VerifyTree(r.ID)) {
			t.Errorf("process %s still runs in the verify checkout", e.Name())
		}
	}
	checkLedger(t, w)
}
