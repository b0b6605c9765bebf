package daemon_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/internal/hubtest/world"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// lines is a file of n numbered lines.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// conflictWith reports the forecast's conflict with other ("target" or a job id), if any.
func conflictWith(st protocol.JobStatus, other string) *protocol.Conflict {
	if st.Forecast == nil {
		return nil
	}
	for i, c := range st.Forecast.Conflicts {
		if c.With == other {
			return &st.Forecast.Conflicts[i]
		}
	}
	return nil
}

// TestForecastRunningJobs: two jobs editing the same line are forecast to
// conflict while both still run — from their work trees, nothing committed
// yet — and a third one touching another file is not; the forecast is a
// journal event and part of status's one line.
func TestForecastRunningJobs(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": lines(10), "b.txt": "b\n"})
	a := w.Start(repo, `sed -i 's/^line 5$/line five by a/' a.txt; sleep 60`)
	b := w.Start(repo, `sed -i 's/^line 5$/line 5 by b/' a.txt; sleep 60`)
	c := w.Start(repo, `echo c >> b.txt; sleep 60`)
	sa := w.Until(a.ID, func(st protocol.JobStatus) bool { return conflictWith(st, b.ID) != nil })
	sb := w.Until(b.ID, func(st protocol.JobStatus) bool { return conflictWith(st, a.ID) != nil })
	for _, st := range []protocol.JobStatus{sa, sb} {
		if st.State != protocol.StateRunning {
			t.Errorf("job %s is %s when its conflict is forecast; it should still run", st.ID, st.State)
		}
	}
	cf := conflictWith(sa, b.ID)
	if !slices.Equal(cf.Files, []string{"a.txt"}) || cf.Branch != b.Branch || cf.Line != "conflicts with "+b.Branch+" in a.txt" {
		t.Errorf("a's conflict: %+v", cf)
	}
	if !strings.Contains(sa.Forecast.Target, "main") || !slices.Equal(sa.Forecast.Touched, []string{"a.txt"}) {
		t.Errorf("a's forecast: %+v", sa.Forecast)
	}
	line := hubtest.Daemon(t, w.C).JobList(w.Ctx, protocol.ListParams{}).Jobs
	for _, st := range line {
		if st.ID == a.ID && (st.Forecast == nil || len(st.Forecast.Conflicts) == 0) {
			t.Errorf("job/list shows no forecast for %s", a.ID)
		}
	}
	sc := w.Until(c.ID, func(st protocol.JobStatus) bool { return st.Forecast != nil && len(st.Forecast.Touched) > 0 })
	if len(sc.Forecast.Conflicts) != 0 {
		t.Errorf("a job touching only b.txt is forecast to conflict: %+v", sc.Forecast.Conflicts)
	}
	// A job started now that names a.txt is told who is changing it.
	d := w.Start(repo, `true`, func(p *protocol.StartParams) { p.Files = []string{"a.txt"} })
	if !slices.ContainsFunc(d.Notes, func(n string) bool {
		return strings.Contains(n, "job "+a.ID+" ("+a.Branch+") is already changing a.txt") && strings.Contains(n, "serialise")
	}) {
		t.Errorf("start notes of a job naming a.txt: %q", d.Notes)
	}
	w.Ended(d.ID)
	var ev *protocol.Event
	for _, e := range w.Events(a.ID) {
		if e.Kind == protocol.EventConflict {
			ev = &e
			break
		}
	}
	if ev == nil || !strings.Contains(ev.Text, "conflicts with "+b.Branch) {
		t.Errorf("no conflict event in a's journal: %+v", ev)
	}
	// Nothing was written to the user's repository: no ref, no object.
	if refs := hubtest.Git(t, repo, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "forecast") {
		t.Errorf("refs after a forecast: %s", refs)
	}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: id})
	}
	w.Ended(a.ID, b.ID, c.ID)
	// Ended, their branches hold the work: the forecast still says so.
	sa = w.Until(a.ID, func(st protocol.JobStatus) bool { return conflictWith(st, b.ID) != nil })
	if !strings.Contains(sa.Forecast.Conflicts[0].Line, "a.txt") {
		t.Errorf("after the end: %+v", sa.Forecast)
	}
}

// TestForecastBaseMoved: the target moving under a running job is reported:
// how far it moved, and the conflict when it touched the same lines.
func TestForecastBaseMoved(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": lines(10), "b.txt": "b\n"})
	a := w.Start(repo, `sed -i 's/^line 5$/line five by a/' a.txt; sleep 60`)
	c := w.Start(repo, `echo c >> b.txt; sleep 60`)
	w.Until(a.ID, func(st protocol.JobStatus) bool { return st.Forecast != nil && len(st.Forecast.Touched) > 0 })
	// The user commits on main meanwhile, on the same line.
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte(strings.Replace(lines(10), "line 5\n", "line 5 by the user\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	hubtest.Git(t, repo, "commit", "-qam", "the user's change")
	sa := w.Until(a.ID, func(st protocol.JobStatus) bool { return conflictWith(st, "target") != nil })
	cf := conflictWith(sa, "target")
	if sa.Forecast.Behind != 1 || cf.Branch != "main" || cf.Line != "main moved: rebase needed, conflicts in a.txt" {
		t.Errorf("forecast of a job whose base moved: %+v, %+v", sa.Forecast, cf)
	}
	if !strings.Contains(sa.Forecast.Conflicts[0].Line, "main moved") {
		t.Errorf("line: %+v", sa.Forecast.Conflicts)
	}
	sc := w.Until(c.ID, func(st protocol.JobStatus) bool { return st.Forecast != nil && st.Forecast.Behind == 1 })
	if len(sc.Forecast.Conflicts) != 0 {
		t.Errorf("a job the move does not touch: %+v", sc.Forecast)
	}
	for _, id := range []string{a.ID, c.ID} {
		hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: id})
	}
	w.Ended(a.ID, c.ID)
}

// land is job/land.
func land(t *testing.T, w *world.World, p protocol.LandParams) *protocol.LandResult {
	t.Helper()
	r := hubtest.Daemon(t, w.C).JobLand(w.Ctx, p)
	return &r
}

// TestLandBatch: ten jobs that do not conflict land in one call, each
// checked on the integrated commit, the target moving once per job and the
// user's clean checkout of it fast-forwarded with it.
func TestLandBatch(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	var ids []string
	for i := range 10 {
		r := w.Start(repo, fmt.Sprintf(`echo %d > f%d.txt`, i, i), func(p *protocol.StartParams) {
			p.Verify = fmt.Sprintf("test -f f%d.txt && test -f a.txt", i)
		})
		ids = append(ids, r.ID)
	}
	for _, st := range w.Ended(ids...) {
		if st.State != protocol.StateSucceeded || st.Target != "main" {
			t.Fatalf("job %s: %s (target %q): %s", st.ID, st.State, st.Target, st.Error)
		}
	}
	from := hubtest.Git(t, repo, "rev-parse", "main")
	res := land(t, w, protocol.LandParams{IDs: ids, Verify: "ls f*.txt > /dev/null"})
	if res.Into != "main" || res.From != from || res.Checkout != "updated" {
		t.Errorf("result: into %s from %s checkout %q", res.Into, res.From, res.Checkout)
	}
	tip := from
	for i, it := range res.Jobs {
		if it.ID != ids[i] || it.Outcome != protocol.LandLanded {
			t.Fatalf("job %d: %+v", i, it)
		}
		if it.Verify == nil || it.Verify.Commit != it.Commit || it.Verify.ExitCode != 0 || it.Batch == nil || it.Batch.Commit != it.Commit {
			t.Errorf("job %s was not checked on its integrated commit %s: verify %+v, batch %+v", it.ID, it.Commit, it.Verify, it.Batch)
		}
		if parent := hubtest.Git(t, repo, "rev-parse", it.Commit+"^1"); parent != tip {
			t.Errorf("job %s's commit is on %s, not on the tip before it %s", it.ID, parent, tip)
		}
		tip = it.Commit
		st := w.Status(it.ID)
		if st.Landed == nil || st.Landed.Commit != it.Commit || st.Landed.Into != "main" || !strings.Contains(st.Landed.Verified, "exit 0") {
			t.Errorf("job %s's landing record: %+v", it.ID, st.Landed)
		}
	}
	if res.Tip != tip || hubtest.Git(t, repo, "rev-parse", "main") != tip {
		t.Errorf("main is at %s; the last landing made %s", hubtest.Git(t, repo, "rev-parse", "main"), tip)
	}
	if n := hubtest.Git(t, repo, "rev-list", "--first-parent", "--count", from+"..main"); n != "10" {
		t.Errorf("main moved %s times, want once per job", n)
	}
	// The user's checkout moved with its branch: clean, every file there.
	if st := hubtest.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the user's checkout after landing: %q", st)
	}
	for i := range 10 {
		if _, err := os.Stat(filepath.Join(repo, fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Errorf("the user's checkout lacks f%d.txt: %v", i, err)
		}
	}
	// Landing one again is refused, and nothing moves.
	_, err := w.C.Daemon().JobLand(w.Ctx, protocol.LandParams{IDs: ids[:1]})
	if client.Code(err) != protocol.CodeWrongState || !strings.Contains(err.Error(), "already landed on main") {
		t.Errorf("landing a landed job: %v", err)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != tip {
		t.Error("a refused landing moved main")
	}
}

// TestLandConflictAndRed: in a batch, a job that conflicts with one landed
// before it and a job whose check fails on the integrated commit (though it
// passed on its own) are reported with files and reasons; the others land,
// and the target never holds a red commit. A conflict can start the job
// that resolves it.
func TestLandConflictAndRed(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": lines(10)})
	a := w.Start(repo, `sed -i 's/^line 1$/line one by a/' a.txt; echo x > x.txt`)
	b := w.Start(repo, `sed -i 's/^line 1$/line 1 by b/' a.txt`)
	// d's check holds on its own head; a's x.txt makes it fail once both are in.
	d := w.Start(repo, `echo d > d.txt`, func(p *protocol.StartParams) { p.Verify = "test -f d.txt && test ! -f x.txt" })
	e := w.Start(repo, `echo e > e.txt`)
	ids := []string{a.ID, b.ID, d.ID, e.ID}
	for _, st := range w.Ended(ids...) {
		if st.State != protocol.StateSucceeded {
			t.Fatalf("job %s: %s: %s", st.ID, st.State, st.Error)
		}
	}
	from := hubtest.Git(t, repo, "rev-parse", "main")
	res := land(t, w, protocol.LandParams{IDs: ids, Resolve: true})
	got := map[string]protocol.LandItem{}
	for _, it := range res.Jobs {
		got[it.ID] = it
	}
	if got[a.ID].Outcome != protocol.LandLanded || got[e.ID].Outcome != protocol.LandLanded {
		t.Errorf("a and e should land: %+v, %+v", got[a.ID], got[e.ID])
	}
	if it := got[b.ID]; it.Outcome != protocol.LandConflict || !slices.Equal(it.Files, []string{"a.txt"}) || !strings.Contains(it.Reason, "a.txt") || it.FollowUp == "" {
		t.Errorf("b: %+v", it)
	}
	if it := got[d.ID]; it.Outcome != protocol.LandRed || it.Verify == nil || it.Verify.ExitCode == 0 || !strings.Contains(it.Reason, "verify") {
		t.Errorf("d: %+v", it)
	}
	tip := hubtest.Git(t, repo, "rev-parse", "main")
	if tip != res.Tip || tip != got[e.ID].Commit {
		t.Errorf("main at %s; result tip %s; e landed as %s", tip, res.Tip, got[e.ID].Commit)
	}
	for _, id := range []string{b.ID, d.ID} {
		if w.Status(id).Landed != nil {
			t.Errorf("job %s has a landing record", id)
		}
		if err := osexec.Command("git", "-C", repo, "merge-base", "--is-ancestor", "hub/"+id, "main").Run(); err == nil {
			t.Errorf("main holds job %s's work", id)
		}
	}
	// Every commit main moved through passes d's check or is not d's: main
	// never held d, and a's and e's landings are first-parent steps.
	if n := hubtest.Git(t, repo, "rev-list", "--first-parent", "--count", from+"..main"); n != "2" {
		t.Errorf("main moved %s times, want 2", n)
	}
	// The follow-up is a job on b's engine, from main as a left it, told the files.
	fu := w.Status(got[b.ID].FollowUp)
	if fu.Engine != "exec" || fu.Base != got[a.ID].Commit || fu.Target != "main" || !strings.HasPrefix(fu.Task, "Merge commit "+w.Status(b.ID).Head) {
		t.Errorf("follow-up: %+v", fu)
	}
	// The follow-up runs b's command again, which may end before the stop
	// arrives: stopping it is then refused as ended, which is fine here.
	if _, err := w.C.Daemon().JobStop(w.Ctx, protocol.IDParams{ID: fu.ID}); err != nil && client.Code(err) != protocol.CodeWrongState {
		t.Errorf("stopping the follow-up: %v", err)
	}
	w.Ended(fu.ID)
}

// TestLandCheckouts: a user's checkout with changes of its own, on another
// branch, keeps them while the target moves; the target checked out with
// uncommitted changes is refused, and nothing moves.
func TestLandCheckouts(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n", "u.txt": "u\n"})
	j := w.Start(repo, `echo j > j.txt`)
	k := w.Start(repo, `echo k > k.txt`)
	w.Ended(j.ID, k.ID)
	// Dirty, and on main: refused.
	if err := os.WriteFile(filepath.Join(repo, "u.txt"), []byte("the user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := hubtest.Git(t, repo, "rev-parse", "main")
	_, err := w.C.Daemon().JobLand(w.Ctx, protocol.LandParams{IDs: []string{j.ID}})
	if client.Code(err) != protocol.CodeWrongState || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Errorf("landing onto a dirty checkout of main: %v", err)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != from || w.Status(j.ID).Landed != nil {
		t.Error("a refused landing moved main")
	}
	// Dirty, on another branch: main moves, the user's files stay.
	hubtest.Git(t, repo, "switch", "-q", "-c", "feature")
	res := land(t, w, protocol.LandParams{IDs: []string{j.ID, k.ID}, Into: "main"})
	if res.Jobs[0].Outcome != protocol.LandLanded || res.Jobs[1].Outcome != protocol.LandLanded || res.Checkout != "" {
		t.Fatalf("landing beside a dirty checkout: %+v", res)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != res.Tip || res.Tip == from {
		t.Error("main did not move")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "u.txt")); string(b) != "the user's edit\n" {
		t.Errorf("the user's edit is now %q", b)
	}
	if head := hubtest.Git(t, repo, "branch", "--show-current"); head != "feature" {
		t.Errorf("the user's checkout is on %s", head)
	}
	if _, err := os.Stat(filepath.Join(repo, "j.txt")); err == nil {
		t.Error("the landed files appeared in a checkout of another branch")
	}
	// A job the user merged by hand is found there, and recorded so.
	m := w.Start(repo, `echo m > m.txt`)
	w.Ended(m.ID)
	hubtest.Git(t, repo, "stash", "-q")
	hubtest.Git(t, repo, "switch", "-q", "main")
	hubtest.Git(t, repo, "merge", "-q", "--no-edit", m.Branch)
	res = land(t, w, protocol.LandParams{IDs: []string{m.ID}, Into: "main"})
	if it := res.Jobs[0]; it.Outcome != protocol.LandAlready || res.Tip != res.From {
		t.Errorf("landing a job merged by hand: %+v", res)
	}
	if st := w.Status(m.ID); st.Landed == nil || !strings.Contains(st.Landed.Verified, "not checked by hub") {
		t.Errorf("its record: %+v", st.Landed)
	}
}

// TestLandBadInput: each refusal says why and moves nothing.
func TestLandBadInput(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	done := w.Start(repo, `echo d > d.txt`)
	empty := w.Start(repo, `true`)
	w.Ended(done.ID, empty.ID)
	running := w.Start(repo, `echo r > r.txt; sleep 60`)
	w.Until(running.ID, func(st protocol.JobStatus) bool { return st.State == protocol.StateRunning })
	from := hubtest.Git(t, repo, "rev-parse", "main")
	cases := []struct {
		name  string
		p     protocol.LandParams
		code  int64
		field string
		says  string
	}{
		{"no ids", protocol.LandParams{}, protocol.CodeInvalidParams, "ids", "ids is empty"},
		{"unknown id", protocol.LandParams{IDs: []string{"nosuchjb"}}, protocol.CodeNotFound, "", "unknown job id"},
		{"running", protocol.LandParams{IDs: []string{done.ID, running.ID}}, protocol.CodeWrongState, "", "only an ended job can land"},
		{"changed nothing", protocol.LandParams{IDs: []string{empty.ID}}, protocol.CodeWrongState, "", "has no commits"},
		{"unknown target", protocol.LandParams{IDs: []string{done.ID}, Into: "nosuch"}, protocol.CodeInvalidParams, "into", `no branch "nosuch"`},
		{"a job's branch", protocol.LandParams{IDs: []string{done.ID}, Into: done.Branch}, protocol.CodeInvalidParams, "into", "a job's own branch"},
		{"bad order", protocol.LandParams{IDs: []string{done.ID}, Order: "random"}, protocol.CodeInvalidParams, "order", "unknown order"},
		{"bad mode", protocol.LandParams{IDs: []string{done.ID}, Mode: "rebase-i"}, protocol.CodeInvalidParams, "mode", "unknown mode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.C.Daemon().JobLand(w.Ctx, c.p)
			if client.Code(err) != c.code || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v (code %d), want code %d saying %q", err, client.Code(err), c.code, c.says)
			}
			if c.field != "" && rpc.DataOf(err).Field != c.field {
				t.Errorf("field %q, want %q", rpc.DataOf(err).Field, c.field)
			}
			if hubtest.Git(t, repo, "rev-parse", "main") != from || w.Status(done.ID).Landed != nil {
				t.Error("a refused landing moved something")
			}
		})
	}
	hubtest.Daemon(t, w.C).JobStop(w.Ctx, protocol.IDParams{ID: running.ID})
	w.Ended(running.ID)
}

// TestReview: the packet flags what deserves a second look, says what to
// do next, and stays about a hundred bytes a job.
func TestReview(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n", "go.sum": "x v1 h1:a\n", "src/x_test.go": "package x\n", "src/old_test.go": "package x\n"})
	lock := w.Start(repo, `echo 'y v1 h1:b' >> go.sum`)
	skip := w.Start(repo, `printf 'func TestX(t *testing.T) { t.Skip("later") }\n' >> src/x_test.go; git rm -q src/old_test.go`)
	secret := w.Start(repo, `echo 'key = "AKIAIOSFODNN7EXAMPLE"' > conf.txt`)
	outside := w.Start(repo, `echo o > other.txt`, func(p *protocol.StartParams) { p.Files = []string{"src/"} })
	clean := w.Start(repo, `echo c > src/c.txt`, func(p *protocol.StartParams) { p.Files = []string{"src"} })
	ids := []string{lock.ID, skip.ID, secret.ID, outside.ID, clean.ID}
	w.Ended(ids...)
	r := hubtest.Daemon(t, w.C).JobReview(w.Ctx, protocol.ReviewParams{IDs: ids})
	want := map[string][]string{lock.ID: {"lockfile"}, skip.ID: {"tests-deleted", "tests-skipped"}, secret.ID: {"secret"},
		outside.ID: {"outside"}, clean.ID: nil}
	for _, it := range r.Jobs {
		if !slices.Equal(it.Risks, want[it.ID]) {
			t.Errorf("job %s risks %v, want %v", it.ID, it.Risks, want[it.ID])
		}
	}
	if strings.Contains(r.Text, "AKIAIOSFODNN7EXAMPLE") {
		t.Error("the packet quotes the secret")
	}
	for _, it := range r.Jobs {
		if it.ID == clean.ID && (it.Next != "land" || it.Files != 1 || it.Verify != "none") {
			t.Errorf("the clean job: %+v", it)
		}
	}
	// Twenty jobs fit in ~2 KB.
	var many []string
	for i := range 15 {
		many = append(many, w.Start(repo, fmt.Sprintf(`echo %d > m%d.txt`, i, i)).ID)
	}
	w.Ended(many...)
	r = hubtest.Daemon(t, w.C).JobReview(w.Ctx, protocol.ReviewParams{AllEnded: true})
	if len(r.Jobs) != 20 || len(r.Text) > 2200 {
		t.Errorf("a packet of %d jobs is %d bytes:\n%s", len(r.Jobs), len(r.Text), r.Text)
	}
	t.Logf("packet of %d jobs, %d bytes:\n%s", len(r.Jobs), len(r.Text), r.Text)
}

// TestForecastEndedOnly: a round that sees only ended jobs forecasts them
// from their branches: here, the target moving under two ended jobs.
func TestForecastEndedOnly(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": lines(10), "b.txt": "b\n"})
	a := w.Start(repo, `sed -i 's/^line 5$/line five by a/' a.txt`)
	c := w.Start(repo, `echo c >> b.txt`)
	w.Ended(a.ID, c.ID)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte(strings.Replace(lines(10), "line 5\n", "line 5 by the user\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	hubtest.Git(t, repo, "commit", "-qam", "the user's change")
	sa := w.Until(a.ID, func(st protocol.JobStatus) bool { return conflictWith(st, "target") != nil })
	if sa.Forecast.Behind != 1 {
		t.Errorf("forecast: %+v", sa.Forecast)
	}
	w.Until(c.ID, func(st protocol.JobStatus) bool {
		return st.Forecast != nil && st.Forecast.Behind == 1 && len(st.Forecast.Conflicts) == 0
	})
}

// TestLandSquash: squashed, each job is one commit on the target's tip, a
// line of history; the branch, whose tip is on no other branch, can still
// be deleted, as the landing record says its work is in.
func TestLandSquash(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	j := w.Start(repo, `echo j > j.txt; git add j.txt; git commit -qm one; echo j2 >> j.txt`)
	k := w.Start(repo, `echo k > k.txt`)
	w.Ended(j.ID, k.ID)
	from := hubtest.Git(t, repo, "rev-parse", "main")
	res := land(t, w, protocol.LandParams{IDs: []string{j.ID, k.ID}, Mode: protocol.LandSquash})
	for _, it := range res.Jobs {
		if it.Outcome != protocol.LandLanded {
			t.Fatalf("%+v", it)
		}
	}
	if got := hubtest.Git(t, repo, "rev-list", "--count", "--merges", from+"..main"); got != "0" {
		t.Errorf("%s merge commits after a squashed landing", got)
	}
	if got := hubtest.Git(t, repo, "rev-list", "--count", from+"..main"); got != "2" {
		t.Errorf("%s commits after landing two jobs squashed", got)
	}
	if got := hubtest.Git(t, repo, "show", "main:j.txt"); got != "j\nj2" {
		t.Errorf("j.txt on main: %q", got)
	}
	if st := w.Status(j.ID); st.Landed == nil || st.Landed.Mode != protocol.LandSquash {
		t.Errorf("landing record: %+v", st.Landed)
	}
	r := hubtest.Daemon(t, w.C).JobCleanup(w.Ctx, protocol.CleanupParams{ID: j.ID, DeleteBranch: true})
	if !r.BranchDeleted {
		t.Errorf("cleanup of a squashed job: %+v", r)
	}
}

// TestLandConcurrent: two landings of the same jobs at once land each job
// once; the one that comes second is refused, and main holds each job once.
func TestLandConcurrent(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	var ids []string
	for i := range 3 {
		ids = append(ids, w.Start(repo, fmt.Sprintf(`echo %d > c%d.txt`, i, i)).ID)
	}
	w.Ended(ids...)
	from := hubtest.Git(t, repo, "rev-parse", "main")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := w.C.Daemon().JobLand(w.Ctx, protocol.LandParams{IDs: ids, Mode: protocol.LandSquash})
			errs <- err
		}()
	}
	var refused int
	for range 2 {
		if err := <-errs; err != nil {
			if client.Code(err) != protocol.CodeWrongState || !strings.Contains(err.Error(), "already landed") {
				t.Errorf("the second landing: %v", err)
			}
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d of two concurrent landings refused, want one", refused)
	}
	if n := hubtest.Git(t, repo, "rev-list", "--count", from+"..main"); n != "3" {
		t.Errorf("main gained %s commits for three squashed jobs", n)
	}
}

// TestReviewFresh: the packet reads the forecast as it is when asked: two
// jobs on the same line, reviewed at once after they end, both say so; once
// one landed, the other is behind main and conflicts with it.
func TestReviewFresh(t *testing.T) {
	w := world.New(t, world.Options{ForecastEvery: time.Hour})
	repo := w.Repo(map[string]string{"a.txt": lines(10)})
	a := w.Start(repo, `sed -i 's/^line 5$/line five by a/' a.txt`)
	b := w.Start(repo, `sed -i 's/^line 5$/line 5 by b/' a.txt`)
	w.Ended(a.ID, b.ID)
	r := hubtest.Daemon(t, w.C).JobReview(w.Ctx, protocol.ReviewParams{IDs: []string{a.ID, b.ID, a.ID}})
	if len(r.Jobs) != 2 {
		t.Fatalf("a packet of %d jobs for two ids, one given twice", len(r.Jobs))
	}
	for _, it := range r.Jobs {
		if len(it.Conflicts) != 1 || it.Next == "land" {
			t.Errorf("job %s: conflicts %+v, next %q", it.ID, it.Conflicts, it.Next)
		}
	}
	land(t, w, protocol.LandParams{IDs: []string{a.ID}})
	r = hubtest.Daemon(t, w.C).JobReview(w.Ctx, protocol.ReviewParams{IDs: []string{b.ID}})
	if it := r.Jobs[0]; len(it.Conflicts) != 1 || it.Conflicts[0].With != "target" || !strings.Contains(r.Text, "1 with conflicts") {
		t.Errorf("after a landed: %+v\n%s", it, r.Text)
	}
}

// TestLandRebase: rebased, each job's commits are replayed on main's tip
// as they were (messages kept), main a line of history, each job checked
// on its last replayed commit; a job whose branch has a merge is refused
// before anything moves.
func TestLandRebase(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	j := w.Start(repo, `echo 1 > r1.txt && git add r1.txt && git commit -qm "first of j" && echo 2 > r2.txt && git add r2.txt && git commit -qm "second of j"`,
		func(p *protocol.StartParams) { p.Verify = "test -f r1.txt && test -f r2.txt && test -f k.txt" })
	k := w.Start(repo, `echo k > k.txt && git add k.txt && git commit -qm "k's only"`)
	m := w.Start(repo, `git switch -q -c side && echo s > s.txt && git add s.txt && git commit -qm side && git switch -q - && git merge -q --no-ff --no-edit side`)
	w.Ended(j.ID, k.ID, m.ID)
	from := hubtest.Git(t, repo, "rev-parse", "main")
	_, err := w.C.Daemon().JobLand(w.Ctx, protocol.LandParams{IDs: []string{k.ID, m.ID}, Mode: protocol.LandRebase})
	if client.Code(err) != protocol.CodeWrongState || !strings.Contains(err.Error(), "merge commits") {
		t.Errorf("rebasing a branch with a merge: %v", err)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != from {
		t.Fatal("a refused rebase moved main")
	}
	res := land(t, w, protocol.LandParams{IDs: []string{k.ID, j.ID}, Mode: protocol.LandRebase})
	for _, it := range res.Jobs {
		if it.Outcome != protocol.LandLanded {
			t.Fatalf("%+v", it)
		}
	}
	if log := hubtest.Git(t, repo, "log", "--format=%s", from+"..main"); log != "second of j\nfirst of j\nk's only" {
		t.Errorf("main's history after a rebase: %q", log)
	}
	if n := hubtest.Git(t, repo, "rev-list", "--merges", "--count", from+"..main"); n != "0" {
		t.Errorf("%s merges after a rebase", n)
	}
	if it := res.Jobs[1]; it.Verify == nil || it.Verify.Commit != it.Commit || it.Verify.ExitCode != 0 {
		t.Errorf("j's check: %+v", it.Verify)
	}
	if st := w.Status(j.ID); st.Landed == nil || st.Landed.Mode != protocol.LandRebase || st.Landed.Commit != res.Tip {
		t.Errorf("j's landing: %+v", st.Landed)
	}
}

// TestLandRun: a landing is work with its own record. Detached, the
// request answers at once with the run's id and land/wait follows it to
// its end; a landing whose request went away goes on and lands; one
// refused under the lock is a failed run saying why; an unknown run is
// NotFound.
func TestLandRun(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n", "u.txt": "u\n"})
	// A check that waits for the gate on main (held.txt), not on the job's own commit.
	gate := filepath.Join(t.TempDir(), "gate")
	held := "if [ -f held.txt ]; then while [ ! -f " + gate + " ]; do sleep 0.05; done; fi"
	a := w.Start(repo, `echo a > a1.txt`, func(p *protocol.StartParams) { p.Verify = held })
	b := w.Start(repo, `echo b > b1.txt`)
	c := w.Start(repo, `echo c > c1.txt`)
	w.Ended(a.ID, b.ID, c.ID)
	commitHeld(t, repo)
	from := hubtest.Git(t, repo, "rev-parse", "main")
	// Detached: the landing's check waits for the gate; the answer does not.
	res := land(t, w, protocol.LandParams{IDs: []string{a.ID}, Detach: true})
	if !strings.HasPrefix(res.Run, "land-") || len(res.Jobs) != 0 || !strings.Contains(res.Line, "hub land --run "+res.Run) {
		t.Fatalf("a detached landing answered %+v", res)
	}
	d := hubtest.Daemon(t, w.C)
	if rec := d.LandWait(w.Ctx, protocol.LandWaitParams{Run: res.Run, TimeoutS: 0.2}); rec.State != protocol.LandRunRunning ||
		rec.Into != "main" || !slices.Equal(rec.IDs, []string{a.ID}) || rec.Result != nil {
		t.Errorf("the run while its check waits: %+v", rec)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != from {
		t.Error("main moved before the check passed")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := d.LandWait(w.Ctx, protocol.LandWaitParams{Run: res.Run, TimeoutS: 60})
	if rec.State != protocol.LandRunDone || rec.Result == nil || rec.Result.Jobs[0].Outcome != protocol.LandLanded || rec.EndedAt.IsZero() ||
		hubtest.Git(t, repo, "rev-parse", "main") != rec.Result.Tip {
		t.Fatalf("the run once its check passed: %+v", rec)
	}
	// The request goes away while the landing checks: the landing goes on.
	_ = os.Remove(gate)
	gone, cancel := context.WithTimeout(w.Ctx, 300*time.Millisecond)
	_, err := w.C.Daemon().JobLand(gone, protocol.LandParams{IDs: []string{b.ID}, Verify: held})
	cancel()
	if err == nil {
		t.Fatal("the landing ended before its gate opened")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := w.Until(b.ID, func(st protocol.JobStatus) bool { return st.Landed != nil }); st.Landed.Into != "main" {
		t.Errorf("b landed as %+v", st.Landed)
	}
	// Refused under the lock (the target's checkout has changes): a failed run, nothing moved.
	if err := os.WriteFile(filepath.Join(repo, "u.txt"), []byte("the user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tip := hubtest.Git(t, repo, "rev-parse", "main")
	res = land(t, w, protocol.LandParams{IDs: []string{c.ID}, Detach: true})
	rec = d.LandWait(w.Ctx, protocol.LandWaitParams{Run: res.Run, TimeoutS: 60})
	if rec.State != protocol.LandRunFailed || !strings.Contains(rec.Error, "uncommitted changes") || !strings.Contains(rec.Error, "commit or stash") ||
		rec.Result != nil || hubtest.Git(t, repo, "rev-parse", "main") != tip {
		t.Errorf("a landing refused under the lock: %+v", rec)
	}
	if _, err := w.C.Daemon().LandWait(w.Ctx, protocol.LandWaitParams{Run: "land-nothere"}); client.Code(err) != protocol.CodeNotFound {
		t.Errorf("waiting for an unknown run: %v", err)
	}
}

// TestLandRunInterrupted: a daemon shutting down interrupts the landing
// in its check (the check stops; the target stays where it was) and ends
// its record, interrupted, saying so.
func TestLandRunInterrupted(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})
	marks := t.TempDir()
	// The check holds on main (held.txt), not on the job's own commit.
	j := w.Start(repo, `echo j > j.txt`, func(p *protocol.StartParams) {
		p.Verify = "if [ -f held.txt ]; then touch " + marks + "/began; sleep 5; touch " + marks + "/after; fi"
	})
	w.Ended(j.ID)
	commitHeld(t, repo)
	from := hubtest.Git(t, repo, "rev-parse", "main")
	res := land(t, w, protocol.LandParams{IDs: []string{j.ID}, Detach: true})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marks, "began")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the landing's check did not begin")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := w.C.Daemon().Shutdown(w.Ctx, protocol.Empty{}); err != nil {
		t.Fatal(err)
	}
	st := w.Store()
	var rec *protocol.LandRun
	for {
		r, err := st.LandRun(w.Ctx, res.Run)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != protocol.LandRunRunning {
			rec = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is still running after the daemon shut down: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec.State != protocol.LandRunInterrupted || !strings.Contains(rec.Error, "the daemon shut down") || rec.Result == nil ||
		rec.Result.Jobs[0].Outcome != protocol.LandSkipped || !strings.Contains(rec.Result.Jobs[0].Reason, "the daemon shut down") {
		t.Errorf("the interrupted run: %+v (result %+v)", rec, rec.Result)
	}
	if hubtest.Git(t, repo, "rev-parse", "main") != from {
		t.Error("main moved though the landing's check was stopped")
	}
	time.Sleep(6 * time.Second)
	if _, err := os.Stat(filepath.Join(marks, "after")); err == nil {
		t.Error("the check ran on after its landing was interrupted")
	}
}

// commitHeld commits an empty held.txt on the checked-out main of repo.
func commitHeld(t *testing.T, repo string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, "held.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hubtest.Git(t, repo, "add", "held.txt")
	hubtest.Git(t, repo, "commit", "-q", "-m", "held")
}
