//go:build linux

package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// The hostile-git suite (the git boundary's matrix in docs/reliability.md):
// a worker that attacks hub through git itself —
// the worktree's .git file, its git dir (HEAD, commondir, config, hooks),
// the shared object store, the refs — and, after each case, what must hold
// at the levels that promise it:
//   - hub ran none of the worker's programs on the host: nothing under
//     MARK, a folder outside every worktree, which each planted program
//     writes into;
//   - the user's repository passes `git fsck --full`, with main, the index
//     and every ref but the job's branch as they were (bar refs the worker
//     itself moved at isolation worktree, where it runs as the user: those
//     must be in the evidence's ref_changes);
//   - every file the worker wrote is on hub/<id>, or the job failed with
//     the reason and the files are still in its worktree;
//   - no process of the job is left.
//
// Each case names the defect of the hub before the git boundary it pins
// (each failed there; "guard" marks the few that held already and are kept
// so they keep holding).

// gitCase is one attack.
type gitCase struct {
	name string
	pins string
	// levels it runs at; nil: worktree, isolated and untrusted.
	levels []protocol.Isolation
	// setup prepares the target repository (after the common files).
	setup func(t *testing.T, g *gitWorld, repo string)
	// script is the worker. It always writes work.txt, which must end on
	// the job's branch (or the job fails and keeps it).
	script string
	verify string
	// verifyFor is verify's timeout in seconds (0: the default).
	verifyFor int
	// files the worker wrote besides work.txt, that must be on the branch.
	files []string
	// failWith, when set: the job must fail with this in its error, the
	// files still in the worktree.
	failWith string
	// workerRefs are refs the worker itself moves at isolation worktree
	// (it runs as the user there): allowed, and reported.
	workerRefs []string
	// check is anything else to look at.
	check func(t *testing.T, g *gitWorld, r gitRun)
	// other: the case needs another job of the same repository, ended
	// with its worktree kept ($OTHER).
	other bool
}

// gitRun is one case's job and what it left.
type gitRun struct {
	level        protocol.Isolation
	repo, common string
	id           string
	st           protocol.JobStatus
	ev           *protocol.Evidence
}

// plant is shell that makes a git dir at $1 whose config, hooks and
// attributes run a program writing into $MARK: a filter on every file,
// hooks for everything a commit runs, core.hooksPath and fsmonitor.
const plant = `plant() { git init -q --bare "$1"
git -C "$1" config filter.x.clean "sh -c 'touch $MARK/filter-ran; cat'"
git -C "$1" config filter.x.smudge "sh -c 'touch $MARK/smudge-ran; cat'"
git -C "$1" config core.hooksPath "$1/hooks"
git -C "$1" config core.fsmonitor "touch $MARK/fsmonitor-ran"
for h in pre-commit post-commit post-checkout reference-transaction post-index-change; do
  printf '#!/bin/sh\ntouch %s/hook-ran\n' "$MARK" > "$1/hooks/$h"; chmod +x "$1/hooks/$h"
done
mkdir -p "$1/info"; echo '* filter=x' > "$1/info/attributes"; }
`

var gitCases = []gitCase{
	{name: "gitfile-to-planted-repo", pins: "1: hub's git add followed the .git file to the worker's git dir and ran its clean filter on the host",
		script: plant + `plant "$PWD/.evil.git"; echo '* filter=x' > .gitattributes; echo w > work.txt; printf 'gitdir: %s\n' "$PWD/.evil.git" > .git`,
		files:  []string{".gitattributes"}},
	{name: "commondir-to-planted-repo", pins: "1: hub's git read the git dir's commondir, a planted repository with a filter",
		script: plant + `plant "$PWD/.evil.git"; echo '* filter=x' > .gitattributes; echo w > work.txt; echo "$PWD/.evil.git" > "$(git rev-parse --absolute-git-dir)/commondir"`,
		files:  []string{".gitattributes"}},
	{name: "planted-hooks-and-hookspath", pins: "1/3: hub committed into the planted repository (its hooks and core.hooksPath there), not on hub/<id>",
		script: plant + `plant "$PWD/.evil.git"; git -C .evil.git symbolic-ref HEAD refs/heads/hub/x; echo w > work.txt; printf 'gitdir: %s\n' "$PWD/.evil.git" > .git`},
	{name: "planted-info-attributes", pins: "1: a planted git dir's info/attributes named the filter hub's git add ran",
		script: plant + `plant "$PWD/.evil.git"; echo w > work.txt; printf 'gitdir: %s\n' "$PWD/.evil.git" > .git`},
	{name: "objects-deleted", pins: "2: at untrusted the worker could delete the user's packs and loose objects", levels: sandboxed,
		script: `echo w > work.txt; rm -rf "$COMMON"/objects/pack/* "$COMMON"/objects/?? 2>/dev/null; true`},
	{name: "object-overwritten", pins: "2: the worker overwrote a loose object of the user's under its own id (git show main:bug.txt printed its content)", levels: sandboxed,
		script: `echo w > work.txt; id=$(git rev-parse HEAD:bug.txt); f="$COMMON/objects/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-)"
fake=$(echo pwned | git hash-object -w --stdin); chmod u+w "$f" 2>/dev/null; cp "$(git rev-parse --git-path objects)/$(echo $fake | cut -c1-2)/$(echo $fake | cut -c3-)" "$f" 2>/dev/null; true`},
	{name: "alternates-planted", pins: "2: the worker added an alternate of its own to the user's object store", levels: sandboxed,
		script: `echo w > work.txt; mkdir -p .objs; echo "$PWD/.objs" >> "$COMMON/objects/info/alternates" 2>/dev/null; true`,
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			if b, err := os.ReadFile(filepath.Join(r.common, "objects", "info", "alternates")); err == nil && len(b) > 0 {
				t.Errorf("the user's objects/info/alternates holds %q", b)
			}
		}},
	{name: "head-on-main", pins: "3: git symbolic-ref HEAD refs/heads/main made hub's commit move main",
		script: `git symbolic-ref HEAD refs/heads/main; echo w > work.txt`},
	{name: "gitfile-to-users-repo", pins: "3: gitdir: the user's .git made hub commit onto main and rewrite the user's index",
		script: `echo w > work.txt; printf 'gitdir: %s\n' "$COMMON" > .git`},
	{name: "gitfile-to-other-job", pins: "3: gitdir: another job's git dir made hub commit onto that job's branch",
		script: `echo w > work.txt; printf 'gitdir: %s/worktrees/%s\n' "$COMMON" "$OTHER" > .git`, other: true},
	{name: "verify-planted", pins: "4: at untrusted the test.sh the worker wrote ran in verify as the user, with the network", levels: sandboxed,
		setup: func(t *testing.T, g *gitWorld, repo string) {
			g.writeRepoFile(t, repo, "test.sh", "test -f work.txt\n")
		},
		script: `echo w > work.txt; printf 'echo pwned > %s/verify-ran\ngit ls-remote http://127.0.0.1:%s/x\nexit 0\n' "$MARK" "$PORT" > test.sh`,
		verify: "sh test.sh", files: []string{"test.sh"},
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			if r.level == protocol.IsolationUntrusted && g.connections() > 0 {
				t.Errorf("verify reached a listener on 127.0.0.1 at untrusted")
			}
		}},
	{name: "dotgit-removed", pins: "5: a worker that removed .git got hub to commit in the repository above its worktree",
		script: `rm -f .git; echo w > work.txt; git init -q "$(dirname "$PWD")" 2>/dev/null; true`,
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			above := filepath.Dir(g.w.paths.Worktree(r.id))
			if _, err := os.Stat(filepath.Join(above, ".git")); err == nil {
				if out, err := g.w.gitErr(above, "rev-list", "--all"); err == nil && out != "" {
					t.Errorf("hub committed in the repository the worker made above its worktree")
				}
				os.RemoveAll(filepath.Join(above, ".git"))
			}
		}},
	{name: "detached-head-commit", pins: "6: after git checkout --detach hub committed on the detached HEAD; hub/<id> stayed at the base and cleanup lost the work",
		script: `git checkout -q --detach; echo d > detached.txt; git add detached.txt; git commit -qm 'on a detached HEAD'; echo w > work.txt`,
		files:  []string{"detached.txt"}},
	{name: "side-branch-commit", pins: "6 (at worktree): after git checkout -b side hub committed on side",
		script: `git checkout -q -b side; echo s > side.txt; git add side.txt; git commit -qm 'on side'; echo w > work.txt`,
		files:  []string{"side.txt"}, workerRefs: []string{"refs/heads/side"}},
	{name: "submodule-folder", pins: "8: files written inside a submodule folder that is not checked out vanished without a word",
		setup: func(t *testing.T, g *gitWorld, repo string) {
			g.writeRepoFile(t, repo, ".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./nowhere\n")
			head := g.w.git(repo, "rev-parse", "HEAD")
			g.w.git(repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
			g.w.git(repo, "commit", "-qm", "a submodule")
		},
		script:   `mkdir -p sub; echo lost > sub/inside.txt; echo w > work.txt`,
		failWith: "sub/inside.txt"},
	{name: "submodule-config", pins: "submodule: hub's git status inside a submodule the worker checked out ran that submodule's filter and fsmonitor, the worker's to set, on the host (the commit, the live diff, cleanup's dirty check)",
		setup: func(t *testing.T, g *gitWorld, repo string) {
			g.writeRepoFile(t, repo, ".gitmodules", "[submodule \"mod\"]\n\tpath = mod\n\turl = ./nowhere\n")
			head := g.w.git(repo, "rev-parse", "HEAD")
			g.w.git(repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",mod")
			g.w.git(repo, "commit", "-qm", "a submodule")
		},
		script: `rm -rf mod; git init -q mod; echo x > mod/x.txt; echo '* filter=x' > mod/.gitattributes; git -C mod add -A; git -C mod commit -qm x
git -C mod config filter.x.clean "sh -c 'touch $MARK/filter-ran; cat'"; git -C mod config core.fsmonitor "touch $MARK/fsmonitor-ran"
touch -d 2000-01-01 mod/x.txt; echo w > work.txt`},
	{name: "replace-refs", pins: "git replace (at worktree): the worker replaced the base with a commit holding its files; hub's evidence followed it and listed none",
		script:     `echo w > work.txt; git add work.txt; fake=$(git commit-tree -m fake "$(git write-tree)"); git replace "$(git rev-parse HEAD)" "$fake"; true`,
		workerRefs: []string{"refs/replace/"},
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			if r.ev == nil || !slices.ContainsFunc(r.ev.Files, func(f protocol.FileChange) bool { return f.Path == "work.txt" }) {
				t.Errorf("the evidence's files lack work.txt: %+v", r.ev)
			}
		}},
	{name: "packed-refs-edited", pins: "guard: packed-refs edits reach no ref of the user's at the sandboxed levels, and are reported at worktree",
		script:     `echo w > work.txt; git add work.txt; git commit -qm work; printf '%s refs/heads/main\n' "$(git rev-parse HEAD)" >> "$(git rev-parse --git-common-dir)/packed-refs"; rm -f "$(git rev-parse --git-common-dir)/refs/heads/main"; true`,
		workerRefs: []string{"refs/heads/main"}},
	{name: "leftover-processes", pins: "8: a worker or verify that exited 0 leaving a background child was a failure (WaitDelay expired) or a timeout after the full verify timeout; a setsid child outlived the job",
		script:    `echo w > work.txt; setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 300 & exit 0`,
		verify:    `setsid sleep 301 </dev/null >/dev/null 2>&1 & sleep 301 & true`,
		verifyFor: 120,
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			if r.ev == nil || r.ev.Verify == nil || r.ev.Verify.TimedOut || r.ev.Verify.ExitCode != 0 {
				t.Errorf("verify should have ended with its leader's exit 0: %+v", r.ev)
				return
			}
			for _, l := range r.ev.Observed.Leftovers {
				if !l.Ended {
					t.Errorf("a leftover process survived: %+v", l)
				}
			}
			if r.level == protocol.IsolationWorktree && len(r.ev.Observed.Leftovers) == 0 {
				t.Errorf("the evidence names no leftover process; the worker and verify each left a setsid sleep")
			}
		}},
	{name: "other-jobs-git-dirs", pins: "7: other jobs' worktree git dirs (logs/HEAD) and refs were readable from isolated", levels: sandboxed,
		script: `echo w > work.txt; { cat "$COMMON"/worktrees/*/logs/HEAD; cat "$COMMON"/worktrees/*/HEAD; ls "$COMMON"/refs/heads/hub; cat "$COMMON/packed-refs"; git log --all --format=%H; git for-each-ref; } > report.txt 2>&1; true`,
		files:  []string{"report.txt"}, other: true,
		check: func(t *testing.T, g *gitWorld, r gitRun) {
			report := g.w.git(r.repo, "show", "hub/"+r.id+":report.txt")
			if strings.Contains(report, g.otherTip) || strings.Contains(report, "hub/"+g.other) {
				t.Errorf("the worker read the other job's branch or git dir:\n%s", report)
			}
		}},
}

var sandboxed = []protocol.Isolation{protocol.IsolationIsolated, protocol.IsolationUntrusted}

// gitWorld is one daemon's case folder (the sandbox mechanism in its
// environment), a listener on loopback, and the folder planted programs
// write into.
type gitWorld struct {
	w     *world
	ctx   context.Context
	mark  string
	net   *hubtest.Listener
	n     int
	other string // a job of the same repository, ended, worktree kept
	// otherTip is the other job's commit
	otherTip string
	jobs     []work
}

func (g *gitWorld) connections() int32 { return g.net.Connections() }

// gitColumns are the matrix's columns: a level and the sandbox under it.
var gitColumns = []struct {
	level      protocol.Isolation
	mech, name string
}{
	{protocol.IsolationWorktree, sandbox.MechBwrap, "worktree"},
	{protocol.IsolationIsolated, sandbox.MechBwrap, "isolated · bwrap"},
	{protocol.IsolationUntrusted, sandbox.MechBwrap, "untrusted · bwrap"},
	{protocol.IsolationIsolated, sandbox.MechLandlock, "isolated · landlock"},
	{protocol.IsolationUntrusted, sandbox.MechLandlock, "untrusted · landlock"},
}

// TestHostileGit runs every case at every level it applies to, under
// bubblewrap and under Landlock (the worktree level once: it has no
// sandbox), HUB_FAULTS_REPEAT times.
func TestHostileGit(t *testing.T) {
	for _, mech := range []string{sandbox.MechBwrap, sandbox.MechLandlock} {
		t.Run(mech, func(t *testing.T) {
			w := newWorld(t)
			w.vars = append(w.vars, sandbox.EnvMechanism+"="+mech) // for the daemon and its shims
			g := &gitWorld{w: w, mark: filepath.Join(w.dir, "mark")}
			g.ctx = hubtest.Deadline(t, 10*time.Minute)
			g.net = hubtest.Listen(t)
			w.startDaemon(g.ctx)
			for range repeat(t) {
				for _, tc := range gitCases {
					for _, col := range gitColumns {
						if col.mech != mech || (tc.levels != nil && !slices.Contains(tc.levels, col.level)) {
							continue
						}
						t.Run(tc.name+"/"+string(col.level), func(t *testing.T) {
							began := time.Now()
							crossed, st := g.run(t, tc, col.level)
							f := figures{Crossed: crossed}
							report(t, outcome{Test: "TestHostileGit", Fault: tc.name, Step: col.name, Runs: 1,
								Ends: []string{gitEnding(tc, st, crossed)}, Figures: f, Took: time.Since(began)})
						})
					}
				}
			}
			// Then the suite's own checks over every job: work, records,
			// reservations, and no process of the case left.
			f := w.checkAll(g.ctx, g.jobs...)
			f.Crossed = 0
			report(t, outcome{Test: "TestHostileGit", Fault: "all jobs", Step: mech, Runs: 1, Ends: []string{"checked"}, Figures: f})
		})
	}
}

// gitEnding is a matrix cell's word: held, or what crossed.
func gitEnding(tc gitCase, st protocol.JobStatus, crossed int) string {
	if crossed > 0 {
		return fmt.Sprintf("crossed (%d checks failed; job %s)", crossed, st.State)
	}
	if tc.failWith != "" {
		return "held (the job failed, naming the files it could not commit)"
	}
	return "held"
}

// snapshot is what hub must leave as it was in the user's repository.
type repoSnapshot struct {
	refs  map[string]string
	index string
}

func (g *gitWorld) snapshotRepo(t *testing.T, repo string) repoSnapshot {
	t.Helper()
	s := repoSnapshot{refs: map[string]string{}}
	for _, l := range strings.Split(g.w.git(repo, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if name, sha, ok := strings.Cut(l, " "); ok {
			s.refs[name] = sha
		}
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
	sum := sha256.Sum256(b)
	s.index = hex.EncodeToString(sum[:])
	return s
}

// newRepo makes a case's repository: bug.txt and README.md, committed.
func (g *gitWorld) newRepo(t *testing.T) string {
	t.Helper()
	g.n++
	dir := filepath.Join(g.w.dir, "repos", strconv.Itoa(g.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"bug.txt": "broken\n", "README.md": "# sample\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g.w.git(dir, "init", "-q", "-b", "main")
	g.w.git(dir, "add", "-A")
	g.w.git(dir, "commit", "-q", "-m", "initial")
	g.w.repo = dir
	return dir
}

func (g *gitWorld) writeRepoFile(t *testing.T, repo, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	g.w.git(repo, "add", "-A")
	g.w.git(repo, "commit", "-qm", "add "+name)
}

// run runs one case at one level and says how many of its checks failed
// (each is also a test error).
func (g *gitWorld) run(t *testing.T, tc gitCase, level protocol.Isolation) (crossed int, st protocol.JobStatus) {
	ctx, w := g.ctx, g.w
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		crossed++
	}
	repo := g.newRepo(t)
	if tc.setup != nil {
		tc.setup(t, g, repo)
	}
	g.other, g.otherTip = "none", "none"
	if tc.other {
		// Another job of the same repository, ended, its worktree kept.
		g.other = w.start(ctx, protocol.StartParams{Task: "other", Exec: "echo other-secret > other.txt"})
		w.waitEnd(ctx, g.other)
		g.otherTip = w.git(repo, "rev-parse", "hub/"+g.other)
		g.jobs = append(g.jobs, work{id: g.other, files: map[string]string{"other.txt": "other-secret\n"}, repo: repo})
	}
	if err := os.RemoveAll(g.mark); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(g.mark, 0o755); err != nil {
		t.Fatal(err)
	}
	g.net.Reset()
	common := filepath.Join(repo, ".git")
	before := g.snapshotRepo(t, repo)
	mainBefore := w.git(repo, "show", "main:bug.txt")
	prefix := fmt.Sprintf("MARK=%s COMMON=%s OTHER=%s PORT=%d; export MARK COMMON OTHER PORT\n", g.mark, common, g.other, g.net.Port)
	id := w.start(ctx, protocol.StartParams{Task: tc.name, Isolation: level, Exec: prefix + tc.script, Verify: tc.verify, VerifyTimeoutS: tc.verifyFor})
	st = w.waitEnd(ctx, id)[0]
	res := hubtest.Daemon(t, w.c).JobResult(ctx, protocol.ResultParams{ID: id, Evidence: true})
	r := gitRun{level: level, repo: repo, common: common, id: id, st: st, ev: res.Evidence}
	t.Logf("pins %s\n%s ended %s (%s)", tc.pins, id, st.State, st.Error)
	wrote := map[string]string{"work.txt": "w\n"}
	for _, f := range tc.files {
		wrote[f] = "" // content not known here: checked by presence below
	}
	j := work{id: id, files: map[string]string{"work.txt": "w\n"}, repo: repo}
	if tc.failWith != "" {
		j.kept = w.paths.Worktree(id)
	}
	g.jobs = append(g.jobs, j)

	// Nothing of the worker's ran on the host.
	if ents, _ := os.ReadDir(g.mark); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		fail("a program the worker planted ran on the host: %v", names)
	}
	// The user's repository: whole, main and its index unchanged, no ref
	// but the job's branch moved (by hub: the worker's own at worktree are
	// reported).
	if out, err := w.gitErr(repo, "fsck", "--full", "--no-dangling"); err != nil {
		fail("git fsck --full in the user's repository: %v\n%s", err, out)
	}
	after := g.snapshotRepo(t, repo)
	if after.index != before.index {
		fail("the user's index changed")
	}
	if got := w.git(repo, "show", "main:bug.txt"); got != mainBefore {
		fail("main:bug.txt reads %q, was %q", got, mainBefore)
	}
	reported := map[string]bool{}
	if r.ev != nil {
		for _, c := range r.ev.Observed.RefChanges {
			reported[c.Ref] = true
		}
	}
	own := "refs/heads/hub/" + id
	names := map[string]bool{}
	for k := range before.refs {
		names[k] = true
	}
	for k := range after.refs {
		names[k] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name == own || before.refs[name] == after.refs[name] {
			continue
		}
		byWorker := level == protocol.IsolationWorktree && slices.ContainsFunc(tc.workerRefs, func(p string) bool { return strings.HasPrefix(name, p) })
		switch {
		case !byWorker:
			fail("%s moved (%s → %s): a commit outside hub/%s", name, before.refs[name], after.refs[name], id)
		case !reported[name]:
			fail("the worker moved %s, and the evidence does not say so", name)
		}
	}
	// Every file the worker wrote is on its branch, or the job failed
	// saying why and kept them.
	if tc.failWith != "" {
		if st.State != protocol.StateFailed || !strings.Contains(st.Error, tc.failWith) {
			fail("the job ended %s (%q); want it failed, naming %s", st.State, st.Error, tc.failWith)
		}
		if _, err := os.Stat(filepath.Join(w.paths.Worktree(id), filepath.FromSlash(tc.failWith))); err != nil {
			fail("%s is not kept in the worktree: %v", tc.failWith, err)
		}
	}
	for f := range wrote {
		if !g.onBranch(repo, id, f) {
			log, _ := w.gitErr(repo, "log", "--stat", "--format=%h %s", "main..hub/"+id)
			fail("%s is not on hub/%s:\n%s", f, id, log)
		}
	}
	if tip := w.git(repo, "rev-parse", "hub/"+id); r.ev != nil && r.ev.Head != tip {
		fail("the evidence says head %s; hub/%s is at %s", r.ev.Head, id, tip)
	}
	if tc.failWith == "" && st.State != protocol.StateSucceeded {
		fail("the job ended %s: %s", st.State, st.Error)
	}
	if tc.other {
		if got := w.git(repo, "rev-parse", "hub/"+g.other); got != g.otherTip {
			fail("the other job's branch moved to %s", got)
		}
	}
	// No process of the job is left.
	if pids := jobProcesses(id); len(pids) > 0 {
		fail("processes of the job are left: %v", pids)
	}
	if tc.check != nil {
		before := t.Failed()
		tc.check(t, g, r)
		if t.Failed() && !before {
			crossed++
		}
	}
	// Cleanup takes the worktree once the work is on the branch.
	if tc.failWith == "" {
		if _, err := w.c.Daemon().JobCleanup(ctx, protocol.CleanupParams{ID: id}); err != nil {
			fail("cleanup: %v", err)
		}
		for f := range wrote {
			if !g.onBranch(repo, id, f) {
				fail("after cleanup %s is not on hub/%s", f, id)
			}
		}
	}
	return crossed, st
}

// onBranch reports whether file is on job id's branch, as the objects say
// (not a replacement a worker planted at isolation worktree, which the
// evidence reports).
func (g *gitWorld) onBranch(repo, id, file string) bool {
	cmd := exec.Command("git", "-C", repo, "cat-file", "-e", "hub/"+id+":"+file)
	cmd.Env = append(slices.Clone(g.w.vars), "GIT_NO_REPLACE_OBJECTS=1")
	return cmd.Run() == nil
}

// jobProcesses lists live processes carrying job id's HUB_JOB.
func jobProcesses(id string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(b), "\x00"), "HUB_JOB="+id) {
			pids = append(pids, pid)
		}
	}
	return pids
}
