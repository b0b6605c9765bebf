//go:build unix

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// waitEnded waits until every job in ids has ended and returns their statuses.
func waitEnded(t *testing.T, ctx context.Context, c *client.Client, ids ...string) []protocol.JobStatus {
	t.Helper()
	var wr protocol.WaitResult
	for {
		wr = hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 300, Since: wr.Cursor})
		all := true
		for _, st := range wr.Jobs {
			all = all && st.State.Terminal()
		}
		if all {
			return wr.Jobs
		}
		if !wr.Done {
			t.Fatalf("jobs did not end: %+v", wr.Jobs)
		}
	}
}

// evidenceOf is job id's result with its evidence.
func evidenceOf(t *testing.T, ctx context.Context, c *client.Client, id string) protocol.ResultResult {
	t.Helper()
	r := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: id, Full: true, Evidence: true})
	if r.Evidence == nil {
		t.Fatalf("job %s has no evidence", id)
	}
	return r
}

// fingerprint is every file of a checkout's work tree (not .git) with its
// size, mode and modification time: what "untouched" is checked against.
func fingerprint(t *testing.T, top string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		m[rel] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameFingerprint(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	n := 0
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			if n++; n <= 5 {
				t.Errorf("%s: %s changed (%q → %q)", what, p, b, a)
			}
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			if n++; n <= 5 {
				t.Errorf("%s: %s appeared", what, p)
			}
		}
	}
	if n > 5 {
		t.Errorf("%s: %d changes in all", what, n)
	}
}

// branchFiles lists the files on a branch.
func branchFiles(t *testing.T, repo, branch string) []string {
	t.Helper()
	return strings.Split(hubtest.Git(t, repo, "ls-tree", "-r", "--name-only", branch), "\n")
}

// noneUnder fails for each file on the branch under one of the prefixes.
func noneUnder(t *testing.T, files []string, prefixes ...string) {
	t.Helper()
	for _, f := range files {
		for _, p := range prefixes {
			if f == p || strings.HasPrefix(f, p+"/") {
				t.Errorf("%s is on the branch", f)
			}
		}
	}
}

// TestRealProjects runs hub on real open-source projects fetched from the
// registries, as a user would point it at their own: each user's checkout
// has what its project needs installed (or not: then hub installs it), and
// an exec job whose worker runs the project's own tests, verified by the
// same command, succeeds — with nothing gitignored committed and the
// user's checkout untouched. hash.js, with nothing installed in the
// checkout, is installed by hub for the first job and copied from hub's
// cache for the second.
func TestRealProjects(t *testing.T) {
	hubtest.UseSubjectCaches(t)
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 8*time.Minute)
	c := w.connect(ctx)
	base := t.TempDir()

	type job struct {
		name, repo, source string
		id                 string
		before             map[string]string
	}
	oi := hubtest.FetchedSubject(t, "object-inspect")
	hj := hubtest.FetchedSubject(t, "hash.js")
	gc := hubtest.FetchedSubject(t, "urfave-cli")
	jobs := []*job{
		{name: "object-inspect (npm, 500+ packages, installed in the checkout)", source: "your checkout",
			repo: oi.Checkout(t, filepath.Join(base, "object-inspect"), true, "node_modules/", "coverage/", ".nyc_output/")},
		{name: "hash.js (npm, installed in the checkout)", source: "your checkout",
			repo: hj.Checkout(t, filepath.Join(base, "hash.js"), true, "node_modules/")},
		{name: "urfave/cli (Go module, its modules in the module cache)", source: "a fresh install",
			repo: gc.Checkout(t, filepath.Join(base, "urfave-cli"), false)},
		{name: "hash.js (npm, nothing installed: hub installs)", source: "a fresh install",
			repo: hj.Checkout(t, filepath.Join(base, "hash.js-bare"), false, "node_modules/")},
	}
	tests := map[string]string{jobs[0].repo: oi.Test, jobs[1].repo: hj.Test, jobs[2].repo: gc.Test, jobs[3].repo: hj.Test}
	// The bare hash.js first: its install takes seconds, so the hash.js
	// installed in its checkout, started next, copies from that checkout
	// long before the install could fill hub's cache for the same
	// lockfile (started the other way round, a slow admission of the bare
	// one let the copy fill the cache first, and it came from there).
	for _, j := range []*job{jobs[3], jobs[0], jobs[1], jobs[2]} {
		j.before = fingerprint(t, j.repo)
		j.id = hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
			Task: "run the project's tests", Repo: j.repo, Engine: "exec", Exec: tests[j.repo], Verify: tests[j.repo],
			DefinitionOfDone: "No changes are expected."}).ID
	}
	ids := []string{jobs[0].id, jobs[1].id, jobs[2].id, jobs[3].id}
	waitEnded(t, ctx, c, ids...)
	// The next job of hash.js's lockfile, once the others filled the cache
	// (in the background: their shims exit when that is done).
	for _, id := range ids {
		waitUnlocked(t, ctx, w.paths.ShimLock(id))
	}
	second := &job{name: "hash.js again, nothing installed (from hub's cache)", repo: jobs[3].repo, source: "hub's cache", before: jobs[3].before}
	second.id = hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
		Task: "run the project's tests", Repo: second.repo, Engine: "exec", Exec: hj.Test, Verify: hj.Test,
		DefinitionOfDone: "No changes are expected."}).ID
	waitEnded(t, ctx, c, second.id)
	jobs = append(jobs, second)

	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			r := evidenceOf(t, ctx, c, j.id)
			ev := r.Evidence
			if r.State != protocol.StateSucceeded || ev.Verify == nil || ev.Verify.ExitCode != 0 {
				t.Fatalf("state %s, category %q: %s\n%s", r.State, ev.Category, ev.Error, r.Full)
			}
			if len(ev.Env) == 0 || ev.Env[0].Source != j.source {
				t.Errorf("env %+v, want the dependencies from %s", ev.Env, j.source)
			}
			t.Logf("%s: %s; setup %d ms, verify %d ms", j.id, r.Summary, ev.Timings.SetupMS, ev.Verify.DurationMS)
			if !strings.Contains(r.Summary, "env: ") {
				t.Errorf("the summary does not say how the checkout was made ready:\n%s", r.Summary)
			}
			noneUnder(t, branchFiles(t, j.repo, "hub/"+j.id), "node_modules", "coverage", ".nyc_output")
			sameFingerprint(t, "the user's checkout", j.before, fingerprint(t, j.repo))
		})
	}
	// The cache holds both npm trees (object-inspect's copied from the
	// checkout, hash.js's installed), each with its ready copies.
	du, err := c.Daemon().DU(ctx, protocol.DUParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(du.Envs) != 2 || du.EnvsBytes == 0 {
		t.Errorf("hub du: %d cache entries, %d bytes; want 2", len(du.Envs), du.EnvsBytes)
	}
}

// TestWorktreeIncludeCanary: a .env listed in .worktreeinclude reaches the
// job (its test reads the canary in it), is never on the branch, and its
// value appears nowhere hub stores or returns — not even where the worker
// printed it.
func TestWorktreeIncludeCanary(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	c := w.connect(ctx)
	canary := "cnry-env-" + rand.Text()
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{
		".gitignore": ".env\n", ".worktreeinclude": ".env\n",
		"test.sh": "grep -q '^API_TOKEN=cnry-env-' .env && echo \"token is $(sed -n 's/^API_TOKEN=//p' .env)\"\n",
	})
	writeFile(t, filepath.Join(repo, ".env"), "API_TOKEN="+canary+"\nDEBUG=1\n")
	id := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "use the token", Repo: repo, Engine: "exec",
		Exec: `sh test.sh && cat .env && hub progress "read $(cat .env)" && echo "$(cat .env)" > out.txt && echo "x" >> .env`, Verify: "sh test.sh"}).ID
	waitEnded(t, ctx, c, id)
	r := evidenceOf(t, ctx, c, id)
	if r.State != protocol.StateSucceeded || r.Evidence.Verify == nil || !strings.Contains(r.Evidence.Verify.OutputTail, "token is") {
		t.Fatalf("state %s: %s\n%s", r.State, r.Evidence.Error, r.Full)
	}
	files := branchFiles(t, repo, "hub/"+id)
	noneUnder(t, files, ".env")
	cs := canaries{".env value": canary}
	cs.check(t, "result", r)
	events := hubtest.Daemon(t, c).JobEvents(ctx, protocol.EventsParams{ID: id})
	cs.check(t, "events", events)
	st := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: id})
	cs.check(t, "status", st)
	// out.txt is the worker's own file on its branch: the repository's
	// content, shown redacted by job/file like any other.
	if !strings.Contains(hubtest.Git(t, repo, "show", "hub/"+id+":out.txt"), canary) {
		t.Errorf("out.txt lost what the worker wrote")
	}
	hubtest.Daemon(t, c).JobCleanup(ctx, protocol.CleanupParams{ID: id, DeleteBranch: true, Force: true})
	shutdownAndExit(t, ctx, c)
	dumpStore(t, cs, w.paths.DB())
	scanTree(t, cs, w.paths.Home, "")
}

// TestSetup: a repository's setup command (.hub.json) runs in the job's
// checkout and in verify's before they run, with its own step in the
// evidence and its progress seen live; the job's own setup replaces it.
func TestSetup(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	c := w.connect(ctx)
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{
		".gitignore": "gen/\n",
		".hub.json":  `{"setup": "mkdir -p gen && echo \"generated for $HUB_JOB\" > gen/config && sleep 1"}`,
		"check.sh":   "grep -q generated gen/config\n",
	})
	id := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "use the generated config", Repo: repo,
		Engine: "exec", Exec: "sh check.sh && echo ok > ok.txt", Verify: "sh check.sh"}).ID
	st := w.until(ctx, id, func(st protocol.JobStatus) bool {
		return strings.HasPrefix(st.Progress, "setting up: mkdir -p gen") || st.State.Terminal()
	})
	if st.State != protocol.StatePreparing {
		t.Errorf("while setting up: state %s, progress %q", st.State, st.Progress)
	}
	waitEnded(t, ctx, c, id)
	r := evidenceOf(t, ctx, c, id)
	ev := r.Evidence
	if r.State != protocol.StateSucceeded || len(ev.Env) != 1 || ev.Env[0].What != "setup" || ev.Env[0].Failed || ev.Timings.SetupMS < 1000 {
		t.Fatalf("state %s, env %+v, setup %d ms: %s\n%s", r.State, ev.Env, ev.Timings.SetupMS, ev.Error, r.Full)
	}
	noneUnder(t, branchFiles(t, repo, "hub/"+id), "gen")
	var setups int
	for _, oc := range ev.Observed.Commands {
		if oc.Role == "setup" {
			setups++
		}
	}
	if setups != 1 { // verify's setup is not the worker's environment: only the job's is observed
		t.Logf("observed setup commands: %d", setups)
	}
	log := readFile(t, w.paths.SetupLog(id))
	if !strings.Contains(log, "$ mkdir -p gen") || !strings.Contains(log, "# verify's checkout") {
		t.Errorf("setup log:\n%s", log)
	}
}

// TestSetupBadInput: an unknown setup command, a failing one, and a
// lockfile that does not install each end the job failed with category
// setup, the failing command's telling line and the fix; nothing is left
// made: no worktree, no branch, no cache entry. A .hub.json, or a
// .worktreeinclude, hub cannot use is refused at start, naming the fix.
func TestSetupBadInput(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 3*time.Minute)
	c := w.connect(ctx)

	// A Node project whose lockfile a bad merge cut off: `npm ci` refuses
	// it before it asks any registry.
	node := hubtest.Repo(t, filepath.Join(t.TempDir(), "node"), map[string]string{
		".gitignore":        "node_modules/\n",
		"package.json":      `{"name":"p","version":"1.0.0","dependencies":{"nope-not-here":"^2.0.0"}}`,
		"package-lock.json": `{"name":"p","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"p",`, // cut off by a bad merge
	})
	plain := sampleRepo(t, "plain")
	cases := []struct {
		name string
		p    protocol.StartParams
		has  []string
	}{
		{"unknown command", protocol.StartParams{Repo: plain, Setup: "no-such-setup-tool --init"},
			[]string{"the setup command failed: `no-such-setup-tool --init` exited 127", "not found", "fix the setup command"}},
		{"failing command", protocol.StartParams{Repo: plain, Setup: "echo 'Error: the schema is missing' >&2; exit 3"},
			[]string{"exited 3", "Error: the schema is missing"}},
		{"lockfile that does not install", protocol.StartParams{Repo: node},
			[]string{"installing the dependencies (npm, package-lock.json) failed: `npm ci --prefer-offline --no-audit --no-fund` exited 1", "npm error", "lockfile out of step"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Task, tc.p.Engine, tc.p.Exec = tc.name, "exec", "echo should-not-run > ran.txt"
			id := hubtest.Daemon(t, c).JobStart(ctx, tc.p).ID
			st := waitEnded(t, ctx, c, id)[0]
			if st.State != protocol.StateFailed || st.Category != protocol.CategorySetup {
				t.Fatalf("state %s category %q: %s", st.State, st.Category, st.Error)
			}
			for _, h := range tc.has {
				if !strings.Contains(st.Error, h) {
					t.Errorf("error lacks %q:\n%s", h, st.Error)
				}
			}
			r := evidenceOf(t, ctx, c, id)
			t.Logf("summary:\n%s", r.Summary)
			if r.Evidence.Category != protocol.CategorySetup || !strings.Contains(r.Summary, "output: ") {
				t.Errorf("evidence category %q; summary:\n%s", r.Evidence.Category, r.Summary)
			}
			if _, err := os.Stat(w.paths.Worktree(id)); err == nil {
				t.Error("the worktree is still there")
			}
			if out, _ := exec.Command("git", "-C", tc.p.Repo, "branch", "--list", "hub/"+id).Output(); len(out) > 0 {
				t.Errorf("the branch is still there: %s", out)
			}
		})
	}
	if ents, scratch, err := (deps.Cache{Dir: w.paths.EnvsDir()}).List(); err != nil || len(ents)+len(scratch) > 0 {
		t.Errorf("failed installs left in hub's cache: %+v %+v %v", ents, scratch, err)
	}

	// Refused at start: nothing is made at all.
	refused := []struct {
		name, file, body, has string
	}{
		{".hub.json with an unknown key", ".hub.json", `{"setpu": "make"}`, `"setpu"`},
		{".worktreeinclude outside the repository", ".worktreeinclude", "../secrets.env\n", "outside"},
		{".worktreeinclude naming a tracked file", ".worktreeinclude", "README.md\n", "tracked"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			repo := sampleRepo(t, "refused")
			writeFile(t, filepath.Join(repo, tc.file), tc.body)
			hubtest.Git(t, repo, "add", "-A")
			hubtest.Git(t, repo, "commit", "-qm", tc.file)
			res, err := c.Daemon().JobStart(ctx, protocol.StartParams{Task: tc.name, Repo: repo, Engine: "exec", Exec: "true"})
			if err == nil || !strings.Contains(err.Error(), tc.has) {
				t.Fatalf("start = %+v, %v; want a refusal naming %s", res, err, tc.has)
			}
			if out := hubtest.Git(t, repo, "branch", "--list", "hub/*"); out != "" {
				t.Errorf("a branch was made: %s", out)
			}
		})
	}
}

// TestSetupSandboxed: at untrusted, the setup runs inside the job's
// sandbox — it cannot read the user's files outside the checkout — with
// the network an install needs (it reaches a listener on the host's
// loopback), while the worker that follows has none. Verify's checkout is
// set up in the same sandbox but, since it holds what the worker wrote,
// without the network.
func TestSetupSandboxed(t *testing.T) {
	if a := sandbox.Probe(); !a.OK || !a.Network {
		t.Fatalf("the sandbox is needed here (make test installs bubblewrap): %s %s", a.Reason, a.NoNetworkReason)
	}
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	c := w.connect(ctx)
	ln := hubtest.Listen(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "user's own\n")
	connect := fmt.Sprintf(`node -e "require('net').connect(%d,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"`, ln.Port)
	// What setup downloads into the tools' caches (here, by hand, into Go's
	// module cache) is there for the worker: the job's own cache folder.
	setup := fmt.Sprintf(`if cat %s 2>/dev/null; then echo "setup read the user's file" >&2; exit 9; fi; if %s; then echo reached > net.txt; else echo offline > net.txt; fi; mkdir -p "$GOMODCACHE/cache" && echo fetched > "$GOMODCACHE/cache/mark"`, secret, connect)
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{".gitignore": "net.txt\n"})
	started := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "offline work", Repo: repo, Engine: "exec",
		Isolation: protocol.IsolationUntrusted, Setup: setup,
		Exec:   `grep -q reached net.txt && grep -q fetched "$GOMODCACHE/cache/mark" && if ` + connect + "; then echo online > worker.txt; else echo offline > worker.txt; fi",
		Verify: `grep -q offline net.txt && grep -q fetched "$GOMODCACHE/cache/mark"`})
	id := started.ID
	if notes := strings.Join(started.Notes, " "); !strings.Contains(notes, "setup") || !strings.Contains(notes, "machine's network") ||
		!strings.Contains(notes, "verify") {
		t.Errorf("the start notes do not say what network setup gets at untrusted: %s", notes)
	}
	waitEnded(t, ctx, c, id)
	r := evidenceOf(t, ctx, c, id)
	if r.State != protocol.StateSucceeded {
		t.Fatalf("state %s category %q: %s\n%s", r.State, r.Evidence.Category, r.Evidence.Error, r.Full)
	}
	if got := hubtest.Git(t, repo, "show", "hub/"+id+":worker.txt"); got != "offline" {
		t.Errorf("the worker at untrusted was %s", got)
	}
	// The job's setup connected; verify's and the worker did not.
	if n := ln.Connections(); n != 1 {
		t.Errorf("the listener got %d connections, want 1 (the job's setup)", n)
	}
}
