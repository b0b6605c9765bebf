package gitx

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sharedFixture is a user's repository with a job's linked worktree, and
// hub's folders for the watch.
type sharedFixture struct {
	repo   string // the user's checkout
	common string // its .git
	wt     string // the job's linked worktree
	state  string // HUB_HOME/repos
	keep   string // the job's folder
	r      *Repo
}

// sampleHooks are the fixture's hooks folder (git's own templates may be
// missing on the machine): two samples, one of them in a folder.
var sampleHooks = map[string]string{
	"pre-push.sample":   "#!/bin/sh\n# a sample pre-push hook\nexit 0\n",
	"commit-msg.sample": "#!/bin/sh\n# a sample commit-msg hook\nexit 0\n",
	"lib/common.sh":     "# shared by the user's hooks\n",
}

func newSharedFixture(t *testing.T) *sharedFixture {
	t.Helper()
	hubHome := t.TempDir()
	t.Setenv("HUB_HOME", hubHome)
	repo := newRepo(t, filepath.Join(t.TempDir(), "repo"), nil)
	common := filepath.Join(repo, ".git")
	if err := os.RemoveAll(filepath.Join(common, "hooks")); err != nil {
		t.Fatal(err)
	}
	for name, body := range sampleHooks {
		writeFile(t, filepath.Join(common, "hooks", filepath.FromSlash(name)), body, 0o755)
	}
	wt := filepath.Join(t.TempDir(), "job")
	gitT(t, repo, "worktree", "add", "-q", "-b", "hub/job", wt)
	return &sharedFixture{
		repo: repo, common: common, wt: realDir(t, wt),
		state: filepath.Join(hubHome, "repos"), keep: filepath.Join(hubHome, "jobs", "job"),
		r: mustOpen(t, repo),
	}
}

// addWorktree makes another job's linked worktree.
func (f *sharedFixture) addWorktree(t *testing.T, name string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), name)
	gitT(t, f.repo, "worktree", "add", "-q", "-b", "hub/"+name, wt)
	return realDir(t, wt)
}

// stateDir is the fixture repository's folder under f.state.
func (f *sharedFixture) stateDir(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir(f.state)
	if err != nil || len(ents) != 1 {
		t.Fatalf("state folder %s holds %v (%v); want one folder", f.state, ents, err)
	}
	return filepath.Join(f.state, ents[0].Name())
}

func mustWatch(t *testing.T, stateDir string, r *Repo, job string) *SharedWatch {
	t.Helper()
	w, err := WatchShared(stateDir, r, job)
	if err != nil {
		t.Fatalf("WatchShared(%s): %v", job, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// runScript runs a shell script in dir, as an install in a job's
// worktree would.
func runScript(t *testing.T, dir, script string, env ...string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), fixtureIdentity...), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// snapshotShared is the shared state of the repository at common, byte
// for byte: the config and every entry of the hooks folder, with modes
// and symlink targets.
func snapshotShared(t *testing.T, common string) map[string]string {
	t.Helper()
	m := map[string]string{"config": snapshotPath(t, filepath.Join(common, "config"))}
	hooks := filepath.Join(common, "hooks")
	m["hooks"] = snapshotPath(t, hooks)
	if fi, err := os.Lstat(hooks); err != nil || !fi.IsDir() {
		return m
	}
	for k, v := range snapshotTree(t, hooks) {
		m["hooks/"+k] = v
	}
	return m
}

func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		m[filepath.ToSlash(rel)] = snapshotPath(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func snapshotPath(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "missing"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		return "symlink to " + target
	case fi.IsDir():
		return fmt.Sprintf("dir %v", fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("file %v %q", fi.Mode().Perm(), b)
}

func readT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSharedHusky: husky's install (`git config core.hooksPath .husky/_`,
// run by `npm ci` in the job's linked worktree) writes the repository's
// shared config; Restore puts it back byte for byte, says so, and keeps
// the changed file, a second time under a name of its own.
func TestSharedHusky(t *testing.T) {
	f := newSharedFixture(t)
	before := snapshotShared(t, f.common)
	w := mustWatch(t, f.state, f.r, "job1")
	if w.HooksPath() != "" || w.HooksUnguarded() != "" {
		t.Errorf("HooksPath %q, HooksUnguarded %q; want both empty", w.HooksPath(), w.HooksUnguarded())
	}
	husky := `git config core.hooksPath .husky/_ && mkdir -p .husky/_ && printf '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n' > .husky/_/pre-commit`
	runScript(t, f.wt, husky)
	cfg := filepath.Join(f.common, "config")
	changed := readT(t, cfg)
	if !strings.Contains(changed, "hooksPath = .husky/_") {
		t.Fatalf("the script did not change the shared config:\n%s", changed)
	}

	changes, err := w.Restore(f.keep)
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(f.keep, "config")
	want := []SharedChange{{
		What: "config", Path: cfg,
		Found: "core.hooksPath = .husky/_ (was unset)",
		Done:  "put back; the changed file is kept at " + kept, Kept: kept,
	}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("Restore changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after Restore (-before +after):\n%s", diff)
	}
	if got := readT(t, kept); got != changed {
		t.Errorf("kept config %q, want the changed one %q", got, changed)
	}
	get := exec.Command("git", "config", "--get", "core.hooksPath")
	get.Dir = f.repo
	if out, err := get.Output(); err == nil {
		t.Errorf("git still reads core.hooksPath %q in the user's checkout", out)
	}

	// Nothing changed since: nothing to do.
	if changes, err := w.Restore(f.keep); err != nil || changes != nil {
		t.Errorf("second Restore = %v, %v; want nothing", changes, err)
	}
	// The install again (after the worker, say): the first copy stays.
	runScript(t, f.wt, husky)
	changes, err = w.Restore(f.keep)
	if err != nil || len(changes) != 1 || changes[0].Kept != kept+".2" {
		t.Errorf("third Restore = %+v, %v; want the config kept at %s", changes, err, kept+".2")
	}
	if got := readT(t, kept); got != changed {
		t.Errorf("the first kept config was overwritten: %q", got)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after the third Restore (-before +after):\n%s", diff)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(f.stateDir(t), "baseline")) {
		t.Error("the baseline is still there after the last holder closed")
	}
	if _, err := w.Restore(f.keep); err == nil {
		t.Error("Restore after Close succeeded")
	}
}

// TestSharedLefthook: lefthook's install writes hook scripts into
// `git rev-parse --git-path hooks`, which from a linked worktree is the
// repository's shared hooks folder; Restore removes what was added and
// puts back what was changed, bytes and modes, keeping both.
func TestSharedLefthook(t *testing.T) {
	f := newSharedFixture(t)
	before := snapshotShared(t, f.common)
	w := mustWatch(t, f.state, f.r, "job1")
	runScript(t, f.wt, `h=$(git rev-parse --git-path hooks) &&
printf '#!/bin/sh\nlefthook run pre-commit "$@"\n' > "$h/pre-commit" && chmod 755 "$h/pre-commit" &&
printf 'lefthook was here\n' >> "$h/pre-push.sample" && chmod 644 "$h/pre-push.sample"`)
	hooks := filepath.Join(f.common, "hooks")
	written := readT(t, filepath.Join(hooks, "pre-commit")) // the script wrote the shared folder
	changedSample := readT(t, filepath.Join(hooks, "pre-push.sample"))

	changes, err := w.Restore(f.keep)
	if err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(f.keep, "hooks")
	want := []SharedChange{{
		What: "hooks", Path: filepath.Join(hooks, "pre-commit"),
		Found: fmt.Sprintf("pre-commit written (%d bytes)", len(written)),
		Done:  "removed; it is kept at " + filepath.Join(keep, "pre-commit"), Kept: filepath.Join(keep, "pre-commit"),
	}, {
		What: "hooks", Path: filepath.Join(hooks, "pre-push.sample"),
		Found: fmt.Sprintf("pre-push.sample changed (%d bytes, was %d) and mode 0644 (was 0755)", len(changedSample), len(sampleHooks["pre-push.sample"])),
		Done:  "put back; the changed file is kept at " + filepath.Join(keep, "pre-push.sample"), Kept: filepath.Join(keep, "pre-push.sample"),
	}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("Restore changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after Restore (-before +after):\n%s", diff)
	}
	wantKept := map[string]string{
		"pre-commit":      fmt.Sprintf("file -rwxr-xr-x %q", written),
		"pre-push.sample": fmt.Sprintf("file -rw-r--r-- %q", changedSample),
	}
	if diff := cmp.Diff(wantKept, snapshotTree(t, keep)); diff != "" {
		t.Errorf("kept hooks (-want +got):\n%s", diff)
	}
}

// TestSharedTwoJobs: a second job joins the first one's baseline; a
// change either makes is put back by whichever restores first, which names
// the other; the last to close removes the baseline.
func TestSharedTwoJobs(t *testing.T) {
	f := newSharedFixture(t)
	wtB := f.addWorktree(t, "job-b")
	before := snapshotShared(t, f.common)
	a := mustWatch(t, f.state, f.r, "job-a")
	b := mustWatch(t, f.state, mustOpen(t, wtB), "job-b") // opened through its worktree: the same repository
	if b.base.TakenBy != "job-a" {
		t.Errorf("job-b's baseline was taken by %q; want job-a's, which is live", b.base.TakenBy)
	}
	runScript(t, wtB, `git config core.hooksPath .husky/_`)

	changes, err := a.Restore(filepath.Join(f.keep, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].What != "config" || !cmp.Equal(changes[0].Others, []string{"job-b"}) {
		t.Errorf("job-a's Restore = %+v; want the config change, with Others [job-b]", changes)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after job-a's Restore (-before +after):\n%s", diff)
	}
	if changes, err := b.Restore(filepath.Join(f.keep, "b")); err != nil || changes != nil {
		t.Errorf("job-b's Restore = %+v, %v; want nothing to do", changes, err)
	}

	dir := f.stateDir(t)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "baseline")) {
		t.Fatal("job-a's Close removed the baseline job-b still holds")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(dir, "baseline")) {
		t.Error("the baseline is still there after both jobs closed")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "holders")); len(ents) != 0 {
		t.Errorf("holders left: %v", ents)
	}
}

// TestSharedHelperProcess is job A's shim in TestSharedCrashedHolder: it
// watches, says so, and waits to be killed.
func TestSharedHelperProcess(t *testing.T) {
	if os.Getenv("GITX_SHARED_HELPER") != "1" {
		t.Skip("run by TestSharedCrashedHolder")
	}
	r, err := Open(os.Getenv("GITX_SHARED_REPO"))
	if err == nil {
		_, err = WatchShared(os.Getenv("GITX_SHARED_STATE"), r, os.Getenv("GITX_SHARED_JOB"))
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("watching")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	os.Exit(0)                           // without Close, like a shim that died
}

// TestSharedCrashedHolder: job A's shim dies (killed) after its job
// changed the config; job B, watching later, does not use A's stale
// baseline: its baseline is the repository as B found it.
func TestSharedCrashedHolder(t *testing.T) {
	f := newSharedFixture(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GITX_SHARED_HELPER=1", "GITX_SHARED_REPO="+f.repo, "GITX_SHARED_STATE="+f.state, "GITX_SHARED_JOB=job-a")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); l == "watching" || strings.HasPrefix(l, "error:") {
				ready <- l
				break
			}
		}
		close(ready)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-ready:
		if l != "watching" {
			t.Fatalf("job A's shim: %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("job A's shim did not start watching")
	}
	runScript(t, f.wt, `git config core.hooksPath .husky/_`)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	found := snapshotShared(t, f.common)

	wtB := f.addWorktree(t, "job-b")
	b := mustWatch(t, f.state, mustOpen(t, wtB), "job-b")
	if b.base.TakenBy != "job-b" {
		t.Errorf("job-b joined the baseline of %q, whose shim is dead", b.base.TakenBy)
	}
	if ents, _ := os.ReadDir(filepath.Join(f.stateDir(t), "holders")); len(ents) != 1 || ents[0].Name() != "job-b" {
		t.Errorf("holders %v; want only job-b (job-a's removed as dead)", ents)
	}
	runScript(t, wtB, `git config user.name job-b`)
	changes, err := b.Restore(f.keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Found != "user.name = job-b (was unset)" || len(changes[0].Others) != 0 {
		t.Errorf("job-b's Restore = %+v; want only its own user.name, no others", changes)
	}
	if diff := cmp.Diff(found, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("job-b's Restore did not put back the state job-b found (-found +after):\n%s", diff)
	}
}

// TestSharedUserChange: the user changes their own config while a job
// runs; Restore puts back the baseline and keeps the user's version, and
// its report names the user's key next to the job's.
func TestSharedUserChange(t *testing.T) {
	f := newSharedFixture(t)
	before := snapshotShared(t, f.common)
	w := mustWatch(t, f.state, f.r, "job1")
	runScript(t, f.wt, `git config core.hooksPath .husky/_`)
	gitT(t, f.repo, "config", "user.email", "me@example.com")
	users := readT(t, filepath.Join(f.common, "config"))

	changes, err := w.Restore(f.keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Found != "core.hooksPath = .husky/_ (was unset); user.email = me@example.com (was unset)" {
		t.Errorf("Restore = %+v; want one config change naming both keys", changes)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after Restore (-before +after):\n%s", diff)
	}
	if got := readT(t, filepath.Join(f.keep, "config")); got != users {
		t.Errorf("kept config %q; want the user's %q", got, users)
	}
}

// TestSharedHooksSymlink: symlinks a job plants are never followed: a
// hooks folder swapped for a symlink to a folder outside is made a real
// folder again, and symlinks planted in it are removed, their targets
// untouched.
func TestSharedHooksSymlink(t *testing.T) {
	for name, script := range map[string]string{
		"folder": `h=$(git rev-parse --git-path hooks) && rm -rf "$h" && ln -s "$OUTSIDE" "$h"`,
		"entries": `h=$(git rev-parse --git-path hooks) && ln -s "$OUTSIDE/pre-commit" "$h/pre-commit" &&
rm "$h/pre-push.sample" && ln -s "$OUTSIDE/notes" "$h/pre-push.sample" && rm -r "$h/lib" && ln -s "$OUTSIDE" "$h/lib"`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newSharedFixture(t)
			outside := t.TempDir()
			writeFile(t, filepath.Join(outside, "pre-commit"), "#!/bin/sh\necho outside\n", 0o755)
			writeFile(t, filepath.Join(outside, "notes"), "not a hook\n", 0o600)
			outsideBefore := snapshotTree(t, outside)
			before := snapshotShared(t, f.common)
			w := mustWatch(t, f.state, f.r, "job1")
			runScript(t, f.wt, script, "OUTSIDE="+outside)

			changes, err := w.Restore(f.keep)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
				t.Errorf("shared state after Restore (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(outsideBefore, snapshotTree(t, outside)); diff != "" {
				t.Errorf("the folder outside changed (-before +after):\n%s", diff)
			}
			var found []string
			for _, c := range changes {
				found = append(found, c.Found)
			}
			want := map[string][]string{
				"folder": {"hooks folder replaced by a symlink to " + outside},
				"entries": {
					"lib replaced by a symlink to " + outside + " (was a folder)",
					"pre-commit added (a symlink to " + outside + "/pre-commit)",
					fmt.Sprintf("pre-push.sample replaced by a symlink to %s/notes (was a file of %d bytes)", outside, len(sampleHooks["pre-push.sample"])),
				},
			}[name]
			if diff := cmp.Diff(want, found); diff != "" {
				t.Errorf("Restore found (-want +got):\n%s", diff)
			}
			if name == "folder" {
				if target, err := os.Readlink(filepath.Join(f.keep, "hooks")); err != nil || target != outside {
					t.Errorf("kept hooks folder: a symlink to %q (%v); want one to %s", target, err, outside)
				}
			}
		})
	}
}

// TestSharedConfigLockHeld: while a git holds config.lock, Restore waits
// for it, then gives up on the config, says why, and tears nothing: the
// config and the other git's lock are as they were. Once the lock is
// gone, Restore puts the config back.
func TestSharedConfigLockHeld(t *testing.T) {
	f := newSharedFixture(t)
	before := snapshotShared(t, f.common)
	w := mustWatch(t, f.state, f.r, "job1")
	w.lockWait = 200 * time.Millisecond
	runScript(t, f.wt, `git config core.hooksPath .husky/_`)
	cfg := filepath.Join(f.common, "config")
	changed := readT(t, cfg)
	lock := cfg + ".lock"
	writeFile(t, lock, "another git's new config\n", 0o644)

	start := time.Now()
	changes, err := w.Restore(f.keep)
	if err == nil || !strings.Contains(err.Error(), lock) {
		t.Fatalf("Restore with config.lock held: error %v; want one naming %s", err, lock)
	}
	if waited := time.Since(start); waited < w.lockWait {
		t.Errorf("Restore gave up after %v; want it to wait %v", waited, w.lockWait)
	}
	if len(changes) != 1 || !strings.HasPrefix(changes[0].Done, "not put back: ") || changes[0].Found != "core.hooksPath = .husky/_ (was unset)" {
		t.Errorf("Restore = %+v; want the config change, not put back", changes)
	}
	if got := readT(t, cfg); got != changed {
		t.Errorf("config %q; want it untouched %q", got, changed)
	}
	if got := readT(t, lock); got != "another git's new config\n" {
		t.Errorf("the other git's config.lock was touched: %q", got)
	}

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if changes, err := w.Restore(f.keep); err != nil || len(changes) != 1 {
		t.Errorf("Restore after the lock went: %+v, %v; want the config put back", changes, err)
	}
	if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
		t.Errorf("shared state after Restore (-before +after):\n%s", diff)
	}
}

// TestSharedHooksFolder: a hooks folder missing in the baseline and made
// by a job is removed; one too big to guard leaves only the config
// guarded; a core.hooksPath in the baseline is noted on hooks changes.
func TestSharedHooksFolder(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		f := newSharedFixture(t)
		if err := os.RemoveAll(filepath.Join(f.common, "hooks")); err != nil {
			t.Fatal(err)
		}
		before := snapshotShared(t, f.common)
		w := mustWatch(t, f.state, f.r, "job1")
		runScript(t, f.wt, `h=$(git rev-parse --git-path hooks) && mkdir -p "$h" && echo '#!/bin/sh' > "$h/pre-commit"`)
		changes, err := w.Restore(f.keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].Found != "hooks folder made (a folder)" || changes[0].Kept != filepath.Join(f.keep, "hooks") {
			t.Errorf("Restore = %+v", changes)
		}
		if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
			t.Errorf("shared state after Restore (-before +after):\n%s", diff)
		}
		if got := readT(t, filepath.Join(f.keep, "hooks", "pre-commit")); got != "#!/bin/sh\n" {
			t.Errorf("kept pre-commit %q", got)
		}
	})
	t.Run("too big", func(t *testing.T) {
		f := newSharedFixture(t)
		for i := range maxHooksEntries {
			writeFile(t, filepath.Join(f.common, "hooks", fmt.Sprintf("h%03d", i)), "x\n", 0o644)
		}
		w := mustWatch(t, f.state, f.r, "job1")
		if w.HooksUnguarded() == "" {
			t.Fatal("a hooks folder of more than 512 entries is guarded")
		}
		runScript(t, f.wt, `echo '#!/bin/sh' > "$(git rev-parse --git-path hooks)/pre-commit" && git config core.hooksPath .husky/_`)
		changes, err := w.Restore(f.keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].What != "config" {
			t.Errorf("Restore = %+v; want the config change only", changes)
		}
		if !exists(filepath.Join(f.common, "hooks", "pre-commit")) {
			t.Error("Restore touched a hooks folder it does not guard")
		}
	})
	t.Run("hooksPath", func(t *testing.T) {
		f := newSharedFixture(t)
		gitT(t, f.repo, "config", "core.hooksPath", ".githooks")
		before := snapshotShared(t, f.common)
		w := mustWatch(t, f.state, f.r, "job1")
		if w.HooksPath() != ".githooks" {
			t.Errorf("HooksPath %q, want .githooks", w.HooksPath())
		}
		// Not --git-path hooks: that follows core.hooksPath.
		runScript(t, f.wt, `echo '#!/bin/sh' > "$(git rev-parse --git-common-dir)/hooks/pre-commit"`)
		changes, err := w.Restore(f.keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || !strings.Contains(changes[0].Note, `core.hooksPath is ".githooks"`) {
			t.Errorf("Restore = %+v; want the hooks change noting core.hooksPath", changes)
		}
		if diff := cmp.Diff(before, snapshotShared(t, f.common)); diff != "" {
			t.Errorf("shared state after Restore (-before +after):\n%s", diff)
		}
	})
}

// TestSharedJobIDs: a job id must be a plain name, and a job is watched by
// one live process at a time.
func TestSharedJobIDs(t *testing.T) {
	f := newSharedFixture(t)
	for _, id := range []string{"", "../x", "a/b", ".hidden", "-x"} {
		if w, err := WatchShared(f.state, f.r, id); err == nil {
			w.Close()
			t.Errorf("WatchShared(%q) succeeded", id)
		}
	}
	mustWatch(t, f.state, f.r, "job1")
	if w, err := WatchShared(f.state, f.r, "job1"); err == nil {
		w.Close()
		t.Error("a second live watch of job1 succeeded")
	}
}

// TestSharedNoGitWhenUnchanged: watching and restoring an unchanged
// repository starts no git (a git on PATH that records its calls sees
// none).
func TestSharedNoGitWhenUnchanged(t *testing.T) {
	f := newSharedFixture(t)
	bin, mark := t.TempDir(), filepath.Join(t.TempDir(), "git-ran")
	writeFile(t, filepath.Join(bin, "git"), "#!/bin/sh\necho \"$@\" >> \"$GIT_MARK\"\nexit 1\n", 0o755)
	t.Setenv("PATH", bin)
	t.Setenv("GIT_MARK", mark)
	w, err := WatchShared(f.state, f.r, "job1")
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := w.Restore(f.keep); err != nil || changes != nil {
		t.Errorf("Restore = %+v, %v; want nothing", changes, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(mark) {
		t.Errorf("git ran: %s", readT(t, mark))
	}
}

// BenchmarkSharedUnchanged: what a job pays for the watch on an unchanged
// repository: WatchShared (taking the baseline), Restore, Close.
func BenchmarkSharedUnchanged(b *testing.B) {
	repo := newRepo(b, filepath.Join(b.TempDir(), "repo"), nil)
	r := mustOpen(b, repo)
	benchWatch(b, r, filepath.Join(b.TempDir(), "repos"))
}

// BenchmarkSharedJoin: the same for a job that joins the baseline of
// another live job.
func BenchmarkSharedJoin(b *testing.B) {
	repo := newRepo(b, filepath.Join(b.TempDir(), "repo"), nil)
	r := mustOpen(b, repo)
	state := filepath.Join(b.TempDir(), "repos")
	first, err := WatchShared(state, r, "first")
	if err != nil {
		b.Fatal(err)
	}
	defer first.Close()
	benchWatch(b, r, state)
}

// benchWatch times a job's watch of r's shared state (kept under state):
// WatchShared, Restore of an unchanged repository, Close.
func benchWatch(b *testing.B, r *Repo, state string) {
	keep := b.TempDir()
	for b.Loop() {
		w, err := WatchShared(state, r, "job1")
		if err != nil {
			b.Fatal(err)
		}
		if changes, err := w.Restore(keep); err != nil || changes != nil {
			b.Fatal(changes, err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
