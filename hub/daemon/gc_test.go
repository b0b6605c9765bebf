package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/gc"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/micros"
)

// gcWorld is a HUB_HOME, its store and a daemon Server (not serving) over a
// real git repository, all under t.TempDir(). Jobs are made the way the shim
// makes them: a record, a worktree on hub/<id>, an engine folder and logs.
type gcWorld struct {
	t     *testing.T
	ctx   context.Context
	s     *Server
	st    *store.Store
	paths config.Paths
	repo  string // the repository's top
	base  string // main's first commit, every job's base
	now   time.Time
}

const gcRetention = 30 * 24 * time.Hour

func newGCWorld(t *testing.T) *gcWorld {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"HOME": filepath.Join(dir, "home"), "XDG_CONFIG_HOME": filepath.Join(dir, "home", ".config"),
		"HUB_HOME": filepath.Join(dir, "hub"), "HUB_CONFIG_DIR": filepath.Join(dir, "config"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@localhost",
		"GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@localhost",
		"HUB_JOB_RETENTION_DAYS": "",
	} {
		t.Setenv(k, v)
	}
	paths := config.Paths{Home: filepath.Join(dir, "hub")}
	if err := paths.Ensure(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	top := hubtest.Repo(t, filepath.Join(dir, "repo"), map[string]string{"a.txt": "a\n"})
	r, err := gitx.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{o: Options{Paths: paths, Log: zerolog.Nop()}.withDefaults(), st: st, subs: map[*rpc.Conn]*subscriber{},
		changed: make(chan struct{}), pumpCh: make(chan struct{}, 1), schedCh: make(chan struct{}, 1), watching: map[string]bool{}}
	return &gcWorld{t: t, ctx: context.Background(), s: s, st: st, paths: paths, repo: r.Top,
		base: hubtest.Git(t, r.Top, "rev-parse", "HEAD"), now: time.Now().UTC()}
}

// job makes write job id, created 90 days ago, with its worktree, engine
// folder, logs and journal; with commit its worker committed a file.
func (w *gcWorld) job(id string, commit bool) {
	w.t.Helper()
	ctx, t := w.ctx, w.t
	j := &store.Job{ID: id, Kind: protocol.KindWrite, Engine: "exec", Isolation: protocol.IsolationWorktree,
		Repo: w.repo, BaseSHA: w.base, Branch: job.Branch(id), Task: "task " + id}
	if err := w.st.CreateJob(ctx, j, w.now.Add(-90*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, err := gitx.Open(w.repo)
	if err != nil {
		t.Fatal(err)
	}
	want := job.Checkout(w.paths, j, r)
	if err := os.MkdirAll(w.paths.JobDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := gitx.MakeCheckout(ctx, r, gitx.CheckoutOptions{Dir: want.Dir, Index: want.Index, Branch: j.Branch, Base: w.base})
	if err != nil {
		t.Fatal(err)
	}
	wt := c.Dir
	if err := w.st.Update(ctx, id, func(r *store.Job) error { r.Worktree = wt; return nil }); err != nil {
		t.Fatal(err)
	}
	if commit {
		gcWriteFile(t, filepath.Join(wt, id+".txt"), "work of "+id+"\n")
		hubtest.Git(t, wt, "add", "-A")
		hubtest.Git(t, wt, "commit", "-q", "-m", "work of "+id)
	}
	// What the job's shim does at its end.
	if _, err := c.Commit(ctx, gitx.CommitOptions{Message: "hub", Who: gitx.HubIdentity, Base: w.base}); err != nil {
		t.Fatal(err)
	}
	gcWriteFile(t, filepath.Join(w.paths.EngineHome(id), "state", "session.json"), strings.Repeat("e", 4096))
	gcWriteFile(t, w.paths.ShimLog(id), strings.Repeat("s", 300))
	gcWriteFile(t, w.paths.WorkerLog(id), strings.Repeat("w", 1000))
}

// ended is job then end: a job that ended at at.
func (w *gcWorld) ended(id string, commit bool, at time.Time) {
	w.t.Helper()
	w.job(id, commit)
	w.end(id, at)
}

// end finishes job id at the given time.
func (w *gcWorld) end(id string, at time.Time) {
	w.t.Helper()
	if _, err := w.st.Finish(w.ctx, id, store.Ending{State: protocol.StateSucceeded, CostKnown: true, Text: "done"}, at); err != nil {
		w.t.Fatal(err)
	}
}

// run admits job id and moves it to running.
func (w *gcWorld) run(id string) {
	w.t.Helper()
	if adm, err := w.st.Admit(w.ctx, id, store.Limits{MaxRunning: 1000, MonthlyCap: micros.Micros(1) << 50}, w.now); err != nil || !adm.Admitted {
		w.t.Fatalf("admit %s: %+v %v", id, adm, err)
	}
	if _, err := w.st.SetState(w.ctx, id, nil, protocol.StateRunning, "", w.now); err != nil {
		w.t.Fatal(err)
	}
}

// ask makes running job id ask a question nobody answers.
func (w *gcWorld) ask(id string) {
	w.t.Helper()
	w.run(id)
	if err := w.st.AddQuestion(w.ctx, &store.Question{ID: "q-" + id, JobID: id, Kind: "question", Text: "tabs or spaces?",
		ExpiresAt: w.now.Add(time.Hour)}, w.now); err != nil {
		w.t.Fatal(err)
	}
}

// merge merges job id's branch into main.
func (w *gcWorld) merge(id string) {
	w.t.Helper()
	hubtest.Git(w.t, w.repo, "merge", "-q", "--no-ff", "--no-edit", job.Branch(id))
}

func (w *gcWorld) gc(apply, force bool) *protocol.GCResult {
	w.t.Helper()
	res, err := w.s.collector().Collect(w.ctx, protocol.GCParams{Apply: apply, Force: force}, gcRetention, w.now)
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *gcWorld) branchExists(id string) bool {
	w.t.Helper()
	r, err := gitx.Open(w.repo)
	if err != nil {
		w.t.Fatal(err)
	}
	ok, err := gitx.BranchExists(w.ctx, r, job.Branch(id))
	if err != nil {
		w.t.Fatal(err)
	}
	return ok
}

// left says what of job id is still there, as one word per thing.
func (w *gcWorld) left(id string) []string {
	w.t.Helper()
	var got []string
	for _, c := range []struct{ name, path string }{
		{"worktree", w.paths.Worktree(id)}, {"engine", w.paths.EngineHome(id)}, {"shim.log", w.paths.ShimLog(id)},
		{"worker.log", w.paths.WorkerLog(id)},
	} {
		if gc.Exists(c.path) {
			got = append(got, c.name)
		}
	}
	if w.branchExists(id) {
		got = append(got, "branch")
	}
	if _, err := w.st.Job(w.ctx, id); err == nil {
		got = append(got, "record")
	}
	return got
}

// gcActions sums a result up as id → job action, and id/kind → item action.
func gcActions(res *protocol.GCResult) map[string]string {
	m := map[string]string{}
	for _, j := range res.Jobs {
		m[j.ID] = j.Action
		for _, it := range j.Items {
			k := j.ID + "/" + it.Kind
			if it.Kind == protocol.GCLog {
				k += "/" + filepath.Base(it.Path)
			}
			m[k] = it.Action
			if it.Error != "" {
				m[k] += " error: " + it.Error
			}
		}
	}
	return m
}

func gcReason(t *testing.T, res *protocol.GCResult, id, kind string) string {
	t.Helper()
	for _, j := range res.Jobs {
		if j.ID != id {
			continue
		}
		if kind == "" {
			return j.Reason
		}
		for _, it := range j.Items {
			if it.Kind == kind {
				return it.Reason
			}
		}
	}
	t.Fatalf("no %s %q in the result", id, kind)
	return ""
}

var (
	gcEverything = []string{"worktree", "engine", "shim.log", "worker.log", "branch", "record"}
	gcCollected  = []string{"record"}
)

// TestGCKeepsWhatItMust: an old ended job whose work is merged (or that has
// no work) loses its worktree, branch, engine folder and logs, and keeps its
// record and journal; a running job, a job with an unanswered question, a
// job that ended recently, an unmerged branch and a worktree with
// uncommitted changes are kept, each with its reason.
func TestGCKeepsWhatItMust(t *testing.T) {
	w := newGCWorld(t)
	old := w.now.Add(-60 * 24 * time.Hour)
	w.ended("merged01", true, old)
	w.merge("merged01")
	w.ended("nowork01", false, old)
	w.ended("unmerged", true, old)
	w.ended("dirty001", true, old)
	gcWriteFile(t, filepath.Join(w.paths.Worktree("dirty001"), "a.txt"), "changed after the job ended\n")
	w.job("running1", true)
	w.run("running1")
	w.job("asking01", false)
	w.ask("asking01")
	w.job("young001", true)
	w.end("young001", w.now.Add(-2*24*time.Hour))
	w.merge("young001")

	res := w.gc(true, false)

	want := map[string]string{
		"merged01": "remove", "merged01/worktree": "remove", "merged01/branch": "remove",
		"merged01/engine": "remove", "merged01/log/shim.log": "remove", "merged01/log/worker.log": "remove",
		"nowork01": "remove", "nowork01/worktree": "remove", "nowork01/branch": "remove",
		"nowork01/engine": "remove", "nowork01/log/shim.log": "remove", "nowork01/log/worker.log": "remove",
		"unmerged": "remove", "unmerged/worktree": "remove", "unmerged/branch": "keep",
		"unmerged/engine": "remove", "unmerged/log/shim.log": "remove", "unmerged/log/worker.log": "remove",
		"dirty001": "remove", "dirty001/worktree": "keep", "dirty001/branch": "keep",
		"dirty001/engine": "remove", "dirty001/log/shim.log": "remove", "dirty001/log/worker.log": "remove",
		"running1": "keep", "asking01": "keep", "young001": "keep",
	}
	if diff := cmp.Diff(want, gcActions(res)); diff != "" {
		t.Errorf("gcActions (-want +got):\n%s", diff)
	}
	for id, wantLeft := range map[string][]string{
		"merged01": gcCollected,
		"nowork01": gcCollected,
		"unmerged": {"branch", "record"},
		"dirty001": {"worktree", "branch", "record"},
		"running1": gcEverything,
		"asking01": gcEverything,
		"young001": gcEverything,
	} {
		if diff := cmp.Diff(wantLeft, w.left(id)); diff != "" {
			t.Errorf("%s: what is left (-want +got):\n%s", id, diff)
		}
	}
	for _, c := range []struct{ id, kind, want string }{
		{"merged01", protocol.GCBranch, "its work is merged into main"},
		{"nowork01", protocol.GCBranch, "it has no commits beyond its base"},
		{"unmerged", protocol.GCBranch, "is on no other branch; merge it, or pass --force"},
		{"dirty001", protocol.GCWorktree, "uncommitted changes; gc never removes those, not even with --force"},
		{"dirty001", protocol.GCBranch, "checked out in the job's worktree, which is kept"},
		{"running1", "", "it is running; gc never touches a job that has not ended"},
		{"asking01", "", "its question q-asking01 is not answered yet"},
		{"young001", "", "it ended 2d ago; the retention is 30d"},
	} {
		if got := gcReason(t, res, c.id, c.kind); !strings.Contains(got, c.want) {
			t.Errorf("%s %s: reason %q, want it to say %q", c.id, c.kind, got, c.want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(w.paths.Worktree("dirty001"), "a.txt")); string(got) != "changed after the job ended\n" {
		t.Errorf("the dirty worktree's change is gone: %q", got)
	}
	if res.Failed != 0 || res.FreedBytes == 0 || !res.Applied {
		t.Errorf("failed %d, freed %d, applied %v", res.Failed, res.FreedBytes, res.Applied)
	}

	// The records say so: no worktree, and a note in the journal.
	j, err := w.st.Job(w.ctx, "merged01")
	if err != nil || j.Worktree != "" {
		t.Errorf("merged01's record: worktree %q, %v; want it cleared", j.Worktree, err)
	}
	evs, err := w.st.Events(w.ctx, []string{"merged01"}, 0, 0)
	if err != nil || len(evs) == 0 || !strings.HasPrefix(evs[len(evs)-1].Text, "gc: worktree removed, branch hub/merged01 deleted") {
		t.Errorf("merged01's last event: %+v, %v", evs, err)
	}
	if wt := hubtest.Git(t, w.repo, "worktree", "list", "--porcelain"); strings.Contains(wt, "merged01") {
		t.Errorf("git still lists merged01's worktree:\n%s", wt)
	}

	// A second run finds nothing more of the collected jobs.
	again := w.gc(true, false)
	if again.Clean != 2 {
		t.Errorf("second run: %d clean jobs, want 2 (merged01, nowork01)", again.Clean)
	}
	for _, g := range again.Jobs {
		if g.ID == "merged01" || g.ID == "nowork01" {
			t.Errorf("second run lists %s: %+v", g.ID, g)
		}
	}
}

// TestGCForce deletes an unmerged branch, but never anything of a running
// job and never a worktree with uncommitted changes.
func TestGCForce(t *testing.T) {
	w := newGCWorld(t)
	old := w.now.Add(-60 * 24 * time.Hour)
	w.ended("unmerged", true, old)
	w.job("running1", true)
	w.run("running1")
	w.job("asking01", true)
	w.ask("asking01")
	w.ended("dirty001", true, old)
	gcWriteFile(t, filepath.Join(w.paths.Worktree("dirty001"), "new.txt"), "untracked\n")

	res := w.gc(true, true)

	got := gcActions(res)
	for k, want := range map[string]string{
		"unmerged/branch": "remove", "unmerged/worktree": "remove",
		"running1": "keep", "asking01": "keep", "dirty001/worktree": "keep", "dirty001/branch": "keep",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if r := gcReason(t, res, "unmerged", protocol.GCBranch); !strings.Contains(r, "deleted because of --force") {
		t.Errorf("unmerged branch reason %q", r)
	}
	for id, wantLeft := range map[string][]string{
		"unmerged": gcCollected,
		"running1": gcEverything,
		"asking01": gcEverything,
		"dirty001": {"worktree", "branch", "record"},
	} {
		if diff := cmp.Diff(wantLeft, w.left(id)); diff != "" {
			t.Errorf("%s: what is left (-want +got):\n%s", id, diff)
		}
	}
}

// TestGCDryRunChangesNothing plans the most it could do (old jobs, --force)
// without apply and checks that HUB_HOME's files, the repository's files
// (.git included), its refs and worktrees, and the store are as they were.
func TestGCDryRunChangesNothing(t *testing.T) {
	w := newGCWorld(t)
	old := w.now.Add(-60 * 24 * time.Hour)
	w.ended("merged01", true, old)
	w.merge("merged01")
	w.ended("unmerged", true, old)
	w.ended("dirty001", true, old)
	gcWriteFile(t, filepath.Join(w.paths.Worktree("dirty001"), "a.txt"), "changed\n")
	w.job("running1", true)
	w.run("running1")
	if err := os.MkdirAll(filepath.Join(w.paths.VerifyTree("merged01"), "x"), 0o700); err != nil {
		t.Fatal(err)
	}

	before := w.snapshot()
	res := w.gc(false, true)
	after := w.snapshot()

	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("a dry run changed things (-before +after):\n%s", diff)
	}
	if res.Applied || res.FreedBytes == 0 {
		t.Errorf("applied %v, would free %d; want a dry run that would free something", res.Applied, res.FreedBytes)
	}
	got := gcActions(res)
	for k, want := range map[string]string{
		"merged01/worktree": "remove", "merged01/verify_tree": "remove", "merged01/branch": "remove",
		"unmerged/branch": "remove", "dirty001/worktree": "keep", "running1": "keep",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

// gcState is everything gc could change.
type gcState struct {
	Files     map[string]string // path → mode and content hash, under HUB_HOME and the repo
	Refs      string
	Worktrees string
	Cursor    int64
	Jobs      map[string]store.Job
}

func (w *gcWorld) snapshot() gcState {
	w.t.Helper()
	s := gcState{Files: map[string]string{}, Jobs: map[string]store.Job{}}
	for _, root := range []string{w.paths.Home, w.repo} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(filepath.Base(p), "hub.db") { // the store is compared through its API
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			v := fi.Mode().String()
			switch {
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				v += " " + hex.EncodeToString(sum[:])
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				v += " -> " + target
			}
			s.Files[p] = v
			return nil
		})
		if err != nil {
			w.t.Fatal(err)
		}
	}
	s.Refs = hubtest.Git(w.t, w.repo, "for-each-ref", "--format=%(refname) %(objectname)")
	s.Worktrees = hubtest.Git(w.t, w.repo, "worktree", "list", "--porcelain")
	var err error
	if s.Cursor, err = w.st.LastCursor(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	jobs, err := w.st.ListJobs(w.ctx, nil, "", 0)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, j := range jobs {
		s.Jobs[j.ID] = *j
	}
	return s
}

// TestGCRepoGone: a job whose repository moved keeps its worktree (it may
// hold work found nowhere else) with a reason; its engine folder and logs
// under HUB_HOME go.
func TestGCRepoGone(t *testing.T) {
	w := newGCWorld(t)
	w.job("moved001", true)
	w.end("moved001", w.now.Add(-60*24*time.Hour))
	if err := os.Rename(w.repo, w.repo+"-moved"); err != nil {
		t.Fatal(err)
	}

	res := w.gc(true, true)

	got := gcActions(res)
	for k, want := range map[string]string{"moved001/worktree": "skip", "moved001/engine": "remove", "moved001/log/worker.log": "remove"} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if r := gcReason(t, res, "moved001", protocol.GCWorktree); !strings.Contains(r, "cannot be opened") || !strings.Contains(r, "remove it by hand") {
		t.Errorf("worktree reason %q", r)
	}
	if !gc.Exists(w.paths.Worktree("moved001")) {
		t.Error("the worktree of a job whose repo moved was removed")
	}
	if got := hubtest.Git(t, w.repo+"-moved", "branch", "--list", "hub/moved001"); got == "" {
		t.Error("the branch of a job whose repo moved was deleted")
	}
}

// TestGCOlderThan: the retention comes from older_than_s, else from the
// job_retention_days setting; a negative one is refused.
func TestGCOlderThan(t *testing.T) {
	w := newGCWorld(t)
	t.Setenv("HUB_JOB_RETENTION_DAYS", "7")
	res, err := w.s.GC(w.ctx, protocol.GCParams{})
	if err != nil || res.OlderThanS != 7*24*3600 {
		t.Errorf("default retention: %+v, %v; want 7 days from the setting", res, err)
	}
	zero := int64(0)
	if res, err := w.s.GC(w.ctx, protocol.GCParams{OlderThanS: &zero}); err != nil || res.OlderThanS != 0 {
		t.Errorf("older_than_s 0: %+v, %v", res, err)
	}
	neg := int64(-1)
	if _, err := w.s.GC(w.ctx, protocol.GCParams{OlderThanS: &neg}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("older_than_s -1: %v; want it refused", err)
	}
	t.Setenv("HUB_JOB_RETENTION_DAYS", "0")
	if _, err := w.s.GC(w.ctx, protocol.GCParams{}); err == nil || !strings.Contains(err.Error(), "HUB_JOB_RETENTION_DAYS") {
		t.Errorf("job_retention_days 0: %v; want a config error", err)
	}
}

// TestDU measures each part of a job and sorts the jobs largest first.
func TestDU(t *testing.T) {
	w := newGCWorld(t)
	w.job("small001", false)
	w.job("large001", false)
	gcWriteFile(t, filepath.Join(w.paths.EngineHome("large001"), "big"), strings.Repeat("x", 100_000))
	if err := os.MkdirAll(w.paths.VerifyTree("large001"), 0o700); err != nil {
		t.Fatal(err)
	}
	gcWriteFile(t, filepath.Join(w.paths.VerifyTree("large001"), "v"), strings.Repeat("v", 50))

	res, err := w.s.DU(w.ctx, protocol.DUParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 2 || res.Jobs[0].ID != "large001" || res.Jobs[1].ID != "small001" {
		t.Fatalf("jobs %+v; want large001 then small001", res.Jobs)
	}
	wt := gc.DiskUse(w.ctx, w.paths.Worktree("small001")) + gc.DiskUse(w.ctx, w.paths.HubIndex("small001"))
	if wt == 0 {
		t.Fatal("the worktree measures 0 bytes")
	}
	// The job folder also holds the store-independent files the shim makes;
	// here only the ones the fixture wrote.
	wantSmall := protocol.DUUsage{WorktreeBytes: wt, LogsBytes: 1300, EngineBytes: 4096,
		TotalBytes: wt + 1300 + 4096}
	if diff := cmp.Diff(wantSmall, res.Jobs[1].DUUsage); diff != "" {
		t.Errorf("small001 (-want +got):\n%s", diff)
	}
	large := res.Jobs[0].DUUsage
	if large.EngineBytes != 104_096 || large.WorktreeBytes != wt+50 {
		t.Errorf("large001: %+v; want engine 104096 and the verify tree in the worktree bytes", large)
	}
	if res.JobsTotal.TotalBytes != large.TotalBytes+wantSmall.TotalBytes {
		t.Errorf("jobs total %d", res.JobsTotal.TotalBytes)
	}
	if res.DBBytes == 0 || res.HomeBytes < res.JobsTotal.TotalBytes+res.DBBytes || res.Home != w.paths.Home {
		t.Errorf("home %s: db %d, home %d, jobs %d", res.Home, res.DBBytes, res.HomeBytes, res.JobsTotal.TotalBytes)
	}
}

func gcWriteFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGCEnvCache: gc removes the cache entries no job used for as long as
// the retention (with their ready copies) and what an interrupted install
// left over an hour ago; a recently used entry, and a scratch folder an
// install may still be writing, stay. du counts them all.
func TestGCEnvCache(t *testing.T) {
	w := newGCWorld(t)
	c := deps.Cache{Dir: w.paths.EnvsDir()}
	from := t.TempDir()
	gcWriteFile(t, filepath.Join(from, "node_modules", "dep", "index.js"), "module.exports = 1\n")
	old, recent := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for _, key := range []string{old, recent} {
		if line := c.Keep(w.ctx, key, deps.Meta{Manager: "npm", Lockfile: "package-lock.json"}, deps.CopyFill(from, []string{"node_modules"}), nil); !strings.Contains(line, "made 2 ready copies") {
			t.Fatalf("keep %s: %q", key, line)
		}
	}
	long := w.now.Add(-40 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(c.Dir, old, "meta.json"), long, long); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(c.Dir, ".new-stale"), filepath.Join(c.Dir, ".new-fresh")
	gcWriteFile(t, filepath.Join(stale, "tree", "x"), "x")
	gcWriteFile(t, filepath.Join(fresh, "tree", "x"), "x")
	if err := os.Chtimes(stale, w.now.Add(-2*time.Hour), w.now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	du, err := w.s.DU(w.ctx, protocol.DUParams{})
	if err != nil || len(du.Envs) != 2 || du.Envs[0].Key != recent || du.Envs[1].Bytes < 3*int64(len("module.exports = 1\n")) {
		t.Fatalf("du: %+v, %v", du.Envs, err)
	}
	for _, apply := range []bool{false, true} {
		res := w.gc(apply, false)
		var paths []string
		for _, it := range res.Envs {
			if it.Action != protocol.GCRemove || it.Error != "" {
				t.Errorf("apply %v: %+v", apply, it)
			}
			paths = append(paths, filepath.Base(it.Path))
		}
		if strings.Join(paths, ",") != old+",.new-stale" {
			t.Errorf("apply %v: gc would remove %v", apply, paths)
		}
	}
	for p, want := range map[string]bool{filepath.Join(c.Dir, old): false, stale: false, filepath.Join(c.Dir, recent): true, fresh: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	if _, scratch, _ := c.List(); len(scratch) != 1 {
		t.Errorf("scratch after gc: %+v (want the fresh one only)", scratch)
	}
}
