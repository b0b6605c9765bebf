//go:build linux

package faults

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// The shared-channel suite (docs/reliability.md, "What jobs share"): what
// jobs share to be fast — hub's environment cache, the copies hub makes of
// trees, the installs verify and landing run, the user's git config and
// hooks, the port pool, the machine — tried by a hostile or careless
// worker, at every level each channel applies to, under bubblewrap and
// under Landlock. Each channel says who can write it and when; each case
// names the defect it pins (each failed against the hub before the fences).

// channel is one thing jobs share, for the report.
type channel struct {
	name   string // cache, copies, installs, config, ports, limits, …
	writer string // who can write it, and when
	reader string // what reads it next
}

var channels = []channel{
	{"cache", "hub alone: an entry is filled from an install hub runs itself in a private checkout of the base (its tools' caches hub's, never a job's), " +
		"or from the user's own checkout; never from a job's checkout; read-only once made",
		"the next jobs of the same lockfile, at any level, in any repository: each gets a copy of its own"},
	{"copies", "hub, walking and opening relative to folder handles (O_NOFOLLOW at each step): a folder swapped for a symlink is never followed",
		"the job that gets the copy, and the cache"},
	{"installs", "the job's own setup, before its worker exists, with the network; verify's and landing's (the worker's manifests) " +
		"at the job's level: none at untrusted",
		"verify and landing's check"},
	{"config", "at worktree and sandbox, anything the job runs as the user in its linked worktree (setup, installs, the worker) can write the " +
		"repository's shared git config and hooks folder; hub watches them from before the job's first command and puts back what changed " +
		"once its commands ended, keeping what it replaced in the job's folder and saying so in its alerts. At isolated and untrusted the " +
		"checkout's git dir is the job's own",
		"every git command the user and every other job of the repository run"},
	{"ports", "each job holds ten ports of the pool 20000–29999, checked free when handed out; at isolated (the host's network) its sandbox may bind TCP " +
		"only on them (a Landlock rule on binds); at untrusted it has no network to bind in",
		"the next job that asks for a range"},
	{"limits", "every command of a job at isolated and untrusted joins the job's cgroup (processes, memory) and rlimits (no file past the disk cap) " +
		"before it runs; hub measures its folders' disk; at any level no file over max_file_mb is committed",
		"the machine, the daemon and every other job; the user's repository"},
	{"env files", "the user's gitignored env files .worktreeinclude lists (.env, .env.*, *.env, .envrc) are copied into each job's checkout; " +
		"hub reads each whole and every value in it becomes a secret its redactor removes from everything the job reports",
		"the job's summary, journal, evidence and logs, which a supervising model and the editor read"},
	{"http", "anyone on the machine can open connections to `hub mcp --http` on loopback: a header must arrive within 10 s, and an idle keep-alive " +
		"connection is closed after 60 s (nothing cuts a response, which an MCP stream keeps open while a tool runs)",
		"the server's connections and file descriptors, which every supervisor on HTTP shares"},
}

// fenceCase is one attack on a channel.
type fenceCase struct {
	channel, name, pins string
	// levels it runs at; nil: every column.
	levels []protocol.Isolation
	run    func(f *fenceWorld, t *testing.T, level protocol.Isolation) string
}

var fenceCases = []fenceCase{
	{channel: "cache", name: "cache-poisoned-same-size",
		pins: "1: the worker rewrote a file of its node_modules at the same size with its mtime put back while hub copied the tree into the cache; a worktree job of another repository ran it on the host",
		run:  (*fenceWorld).cachePoisoned},
	{channel: "copies", name: "folder-swapped-for-symlink",
		pins: "2: the worker swapped a folder of its node_modules for a symlink to a host folder while hub copied the tree (timed with inotify); the copy went on by path into the host's folder. End to end the old copy's own change check often refused the tree; hub/deps TestCopyTreeSwapRace pins the copier itself",
		run:  (*fenceWorld).folderSwapped},
	{channel: "config", name: "husky-project-install", levels: []protocol.Isolation{protocol.IsolationWorktree},
		pins: "4: a real husky project's npm ci (json-server 1.0.0-beta.3, prepare: husky) set core.hooksPath=.husky/_ in the user's shared config, silently, even for a job that failed",
		run: func(f *fenceWorld, t *testing.T, level protocol.Isolation) string {
			return f.realHooks(t, level, "json-server-husky", "core.hooksPath")
		}},
	{channel: "config", name: "lefthook-project-install", levels: []protocol.Isolation{protocol.IsolationWorktree},
		pins: "4: a real lefthook project's npm ci (runmd 2.1.1, prepare: lefthook install) wrote hook scripts into the user's .git/hooks",
		run: func(f *fenceWorld, t *testing.T, level protocol.Isolation) string {
			return f.realHooks(t, level, "runmd-lefthook", "hooks")
		}},
	{channel: "config", name: "config-and-hooks-written",
		pins: "4: a setup and a worker that run git config and write a hook (as an install's script would) changed the user's repository for good",
		run:  (*fenceWorld).configWritten},
	{channel: "limits", name: "fork-bomb", levels: sandboxed,
		pins: "5: 1,500 processes were allowed at untrusted; the machine's load reached 26",
		run: func(f *fenceWorld, t *testing.T, level protocol.Isolation) string {
			return f.hog(t, level, protocol.Limits{Processes: 64}, `bomb() { bomb | bomb; }; bomb`, "process limit")
		}},
	{channel: "limits", name: "memory-hog", levels: sandboxed,
		pins: "5: 3 GB of memory was allowed at untrusted",
		run: func(f *fenceWorld, t *testing.T, level protocol.Isolation) string {
			return f.hog(t, level, protocol.Limits{MemoryMB: 64}, `python3 -c "b = b'x' * (768 << 20); import time; time.sleep(60)"`, "memory limit")
		}},
	{channel: "limits", name: "disk-filler", levels: sandboxed,
		pins: "5: a 1.5 GB file was allowed at untrusted",
		run: func(f *fenceWorld, t *testing.T, level protocol.Isolation) string {
			return f.hog(t, level, protocol.Limits{DiskMB: 40},
				`i=0; while [ $i -lt 60 ]; do head -c 8388608 /dev/zero > fill$i.bin || break; i=$((i+1)); sleep 0.25; done; sleep 30`, "disk limit")
		}},
	{channel: "limits", name: "file-over-max-file-mb",
		pins: "5: the 1.5 GB file a worker wrote was committed into the user's repository",
		run:  (*fenceWorld).oversize},
	{channel: "ports", name: "port-pool-hog", levels: []protocol.Isolation{protocol.IsolationIsolated},
		pins: "6: a job at isolated that bound 20000–29999 left every later job without HUB_PORT",
		run:  (*fenceWorld).portHog},
	{channel: "env files", name: "env-values-echoed",
		pins: "7: a double-quoted value with \\\" inside, a value after the first MiB of the file, and .envrc reached the summary in clear",
		run:  (*fenceWorld).envEchoed},
	{channel: "http", name: "idle-connection-after-401", levels: []protocol.Isolation{protocol.IsolationWorktree},
		pins: "8: hub mcp --http kept idle keep-alive connections open for ever after a 401 (no IdleTimeout); TestHTTPIdle runs it",
		run:  nil},
	{channel: "installs", name: "verify-installs-worker-manifest", levels: []protocol.Isolation{protocol.IsolationIsolated, protocol.IsolationUntrusted},
		pins: "3: a preinstall the worker committed reached 127.0.0.1 in verify's install and in hub land's, at untrusted",
		run:  (*fenceWorld).verifyInstall},
}

// fenceWorld is one daemon's case folder (the sandbox mechanism in its
// environment), a listener on loopback, and the folder a program that
// crossed a fence writes into.
type fenceWorld struct {
	w    *world
	ctx  context.Context
	mech string
	mark string
	net  *hubtest.Listener
	n    int
	jobs []work
	// tgz is the dependency tarball the Node projects install (made once).
	tgz, lock string
}

// TestFences runs every case at every level it applies to, under
// bubblewrap and under Landlock (the worktree level once).
func TestFences(t *testing.T) {
	for _, mech := range []string{sandbox.MechBwrap, sandbox.MechLandlock} {
		t.Run(mech, func(t *testing.T) {
			w := newWorld(t)
			// The subjects' warm npm cache: real projects install from it.
			w.vars = append(w.vars, sandbox.EnvMechanism+"="+mech, "npm_config_cache="+filepath.Join(hubtest.Subjects(t), "npm-cache"),
				"npm_config_prefer_offline=true")
			f := &fenceWorld{w: w, mech: mech, mark: filepath.Join(w.dir, "mark")}
			f.ctx = hubtest.Deadline(t, 15*time.Minute)
			f.net = hubtest.Listen(t)
			w.startDaemon(f.ctx)
			for range repeat(t) {
				for _, tc := range fenceCases {
					for _, col := range gitColumns {
						if tc.run == nil || col.mech != mech || (tc.levels != nil && !slices.Contains(tc.levels, col.level)) {
							continue
						}
						t.Run(tc.name+"/"+string(col.level), func(t *testing.T) {
							began := time.Now()
							if err := os.RemoveAll(f.mark); err != nil {
								t.Fatal(err)
							}
							if err := os.MkdirAll(f.mark, 0o755); err != nil {
								t.Fatal(err)
							}
							f.net.Reset()
							failed := t.Failed()
							end := tc.run(f, t, col.level)
							crossed := 0
							if t.Failed() && !failed {
								crossed = 1
								end = "crossed: " + end
							}
							report(t, outcome{Test: "TestFences", Fault: tc.name, Step: col.name, Runs: 1,
								Ends: []string{end}, Figures: figures{Breached: crossed}, Took: time.Since(began)})
						})
					}
				}
			}
			f2 := w.checkAll(f.ctx, f.jobs...)
			report(t, outcome{Test: "TestFences", Fault: "all jobs", Step: mech, Runs: 1, Ends: []string{"checked"}, Figures: f2})
		})
	}
}

// newRepo makes a case's repository with files, committed.
func (f *fenceWorld) newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	f.n++
	dir := filepath.Join(f.w.dir, "repos", fmt.Sprint(f.n))
	hubtest.WriteFiles(t, dir, files)
	f.w.git(dir, "init", "-q", "-b", "main")
	f.w.git(dir, "add", "-A")
	f.w.git(dir, "commit", "-q", "-m", "initial")
	f.w.repo = dir
	return dir
}

// honest is what the tool of the Node projects' dependency holds, and
// poisoned what a hostile worker puts there instead: the same size.
func (f *fenceWorld) tool() (honest, poisoned string) {
	honest = "#!/bin/sh\necho honest\n"
	poisoned = "#!/bin/sh\ntouch '" + f.mark + "/poisoned-ran'\n"
	pad := func(s string, n int) string { return s + "#" + strings.Repeat("x", n-len(s)-2) + "\n" }
	n := max(len(honest), len(poisoned)) + 16
	return pad(honest, n), pad(poisoned, n)
}

// fillers is how many files the dependency holds besides its tool: enough
// that a copy of the tree takes a while, so a worker at work meanwhile
// gets its writes in first.
const fillers = 6000

// npmFiles are the files of a Node project whose one dependency, dep (a
// tarball committed beside it, installed with no registry), holds the tool
// node_modules/dep/zz/run.sh and many small files: the same bytes in
// every repository made with it, so every one has the same cache key.
func (f *fenceWorld) npmFiles(t *testing.T) map[string]string {
	t.Helper()
	if f.tgz == "" {
		src := filepath.Join(f.w.dir, "dep-src")
		honest, _ := f.tool()
		files := map[string]string{
			"package.json": `{"name":"dep","version":"1.0.0"}`,
			"zz/run.sh":    honest,
			"zy/index.js":  "module.exports = 'zy'\n",
		}
		for i := range fillers {
			files[fmt.Sprintf("a/%02d/%d.js", i%50, i)] = fmt.Sprintf("module.exports = %d\n", i)
		}
		for name, body := range files {
			p := filepath.Join(src, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		proj := filepath.Join(f.w.dir, "npm-proj")
		if err := os.MkdirAll(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		f.npm(t, src, "pack", "--pack-destination", proj)
		if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(npmManifest), 0o644); err != nil {
			t.Fatal(err)
		}
		f.npm(t, proj, "install", "--package-lock-only")
		tgz, err := os.ReadFile(filepath.Join(proj, "dep-1.0.0.tgz"))
		if err != nil {
			t.Fatal(err)
		}
		lock, err := os.ReadFile(filepath.Join(proj, "package-lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		f.tgz, f.lock = string(tgz), string(lock)
	}
	return map[string]string{"package.json": npmManifest, "package-lock.json": f.lock, "dep-1.0.0.tgz": f.tgz,
		".gitignore": "node_modules/\n", "README.md": "# sample\n"}
}

const npmManifest = `{"name":"p","version":"1.0.0","dependencies":{"dep":"file:dep-1.0.0.tgz"}}` + "\n"

func (f *fenceWorld) npm(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("npm", append(args, "--no-audit", "--no-fund", "--loglevel=error")...)
	cmd.Dir, cmd.Env = dir, f.w.vars
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %v: %v\n%s", args, err, out)
	}
}

// runJob starts an exec job on the current repository and waits for its end.
func (f *fenceWorld) runJob(t *testing.T, p protocol.StartParams, files map[string]string) (string, protocol.JobStatus) {
	t.Helper()
	id := f.w.start(f.ctx, p)
	st := f.w.waitEnd(f.ctx, id)[0]
	f.jobs = append(f.jobs, work{id: id, files: files, repo: f.w.repo})
	t.Logf("%s (%s) ended %s: %s", id, p.Isolation, st.State, st.Error)
	return id, st
}

// shimGone waits until job id's shim exited: its cache fills are done.
func (f *fenceWorld) shimGone(t *testing.T, id string) {
	t.Helper()
	l := flock.New(f.w.paths.ShimLock(id))
	for {
		if ok, err := l.TryLock(); err == nil && ok {
			_ = l.Unlock()
			return
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("job %s's shim did not exit", id)
		case <-time.After(50 * time.Millisecond): // another process's lock: nothing to wait on
		}
	}
}

// dropCache empties hub's environment cache, so a case's first job fills it.
func (f *fenceWorld) dropCache(t *testing.T) {
	t.Helper()
	for _, j := range f.jobs {
		f.shimGone(t, j.id) // no fill of an earlier case is still writing
	}
	if _, err := os.Stat(f.w.paths.EnvsDir()); err != nil {
		return
	}
	if out, err := exec.Command("chmod", "-R", "u+w", f.w.paths.EnvsDir()).CombinedOutput(); err != nil {
		t.Fatalf("chmod the cache: %v\n%s", err, out)
	}
	if err := os.RemoveAll(f.w.paths.EnvsDir()); err != nil {
		t.Fatal(err)
	}
}

// marks lists what crossed a fence wrote into the mark folder.
func (f *fenceWorld) marks() []string {
	ents, _ := os.ReadDir(f.mark)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// filesHolding lists the files under root (symlinks not followed) whose
// content holds s.
func filesHolding(root, s string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// nextJobRunsTool starts a job at worktree in another repository of the
// same lockfile, which runs the tool as the user on the host, and returns
// the tool's content it got.
func (f *fenceWorld) nextJobRunsTool(t *testing.T) string {
	t.Helper()
	repo := f.newRepo(t, f.npmFiles(t))
	id, st := f.runJob(t, protocol.StartParams{Task: "use the tool", Isolation: protocol.IsolationWorktree,
		Exec: `sh node_modules/dep/zz/run.sh > tool.out; echo w > work.txt`}, map[string]string{"work.txt": "w\n"})
	if st.State != protocol.StateSucceeded {
		t.Errorf("the next job ended %s: %s", st.State, st.Error)
	}
	_ = repo
	b, err := os.ReadFile(filepath.Join(f.w.paths.Worktree(id), "node_modules/dep/zz/run.sh"))
	if err != nil {
		t.Errorf("the next job's tool: %v", err)
	}
	return string(b)
}

// cachePoisoned: a worker rewrites the tool of its node_modules at the
// same size and puts its times back, over and over while it runs; hub's
// cache, and a job of another repository at worktree that gets the tree
// from it, must hold the honest tool.
func (f *fenceWorld) cachePoisoned(t *testing.T, level protocol.Isolation) string {
	f.dropCache(t)
	f.newRepo(t, f.npmFiles(t))
	_, poisoned := f.tool()
	// Busy loops beside it take the machine's cores, as a worker can:
	// whatever copies the tree meanwhile is slowed, and the rewrite lands
	// before a copy of the worktree reaches the file.
	script := `f=node_modules/dep/zz/run.sh; ref=$(mktemp); cp -p "$f" "$ref"
for n in 1 2 3 4 5 6; do (end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done) & done
i=0; while [ $i -lt 100 ]; do cat > "$f" <<'EOF'
` + poisoned + `EOF
touch -r "$ref" "$f"; i=$((i+1)); sleep 0.03; done
wait; echo w > work.txt`
	id, st := f.runJob(t, protocol.StartParams{Task: "poison the cache", Isolation: level, Exec: script}, map[string]string{"work.txt": "w\n"})
	if st.State != protocol.StateSucceeded {
		t.Fatalf("the poisoning job ended %s: %s", st.State, st.Error)
	}
	f.shimGone(t, id)
	got := f.nextJobRunsTool(t)
	honest, _ := f.tool()
	if got != honest {
		t.Errorf("the next job of the lockfile got the poisoned tool:\n%s", got)
	}
	if m := f.marks(); len(m) > 0 {
		t.Errorf("the poisoned tool ran on the host: %v", m)
	}
	if bad := filesHolding(f.w.paths.EnvsDir(), "poisoned-ran"); len(bad) > 0 {
		t.Errorf("hub's cache holds the poisoned tool: %v", bad)
	}
	return "held"
}

// folderSwapped: a worker swaps a folder of its node_modules with a
// symlink to a host folder holding a secret, over and over while it runs
// (renameat2 RENAME_EXCHANGE); no file of the host folder may reach hub's
// cache or another job.
func (f *fenceWorld) folderSwapped(t *testing.T, level protocol.Isolation) string {
	f.dropCache(t)
	host := filepath.Join(f.w.dir, "home", ".ssh-"+fmt.Sprint(f.n))
	secret := "host-secret-" + fmt.Sprint(time.Now().UnixNano())
	if err := os.MkdirAll(host, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "id_ed25519"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.newRepo(t, f.npmFiles(t))
	// Timed as an attacker would, with inotify: when something else opens
	// the last filler folder (a/49), it listed node_modules/dep already and
	// zy is next: zy is swapped for the symlink then, and put back once
	// what walks the tree moved past it — at the first file opened in zz
	// (a copy reads it), then at zz itself (a walk that only looks) — so
	// a walk that goes on by path finds the host's folder in zy both when
	// it copies and when it looks again whether the tree changed.
	script := `for n in 1 2 3 4 5 6; do (end=$(($(date +%s)+3)); while [ $(date +%s) -lt $end ]; do :; done) & done
python3 - <<'EOF'
import ctypes, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE, IN_OPEN = -100, 2, 0x20
d, link = b"node_modules/dep/zy", b".swap-link"
os.symlink("` + host + `", link)
fd = libc.inotify_init()
last = libc.inotify_add_watch(fd, b"node_modules/dep/a/49", IN_OPEN)
after = libc.inotify_add_watch(fd, b"node_modules/dep/zz", IN_OPEN)
swapped, rounds, end = False, 0, time.time() + 5
while time.time() < end and rounds < 2:
    if not select.select([fd], [], [], 0.2)[0]:
        continue
    buf = os.read(fd, 4096)
    i = 0
    while i < len(buf):
        wd, n = int.from_bytes(buf[i:i+4], "little", signed=True), int.from_bytes(buf[i+12:i+16], "little")
        if wd == last and n == 0 and not swapped:
            libc.renameat2(AT_FDCWD, d, AT_FDCWD, link, RENAME_EXCHANGE)
            swapped, end = True, time.time() + 60
        elif wd == after and swapped and (n > 0) == (rounds == 0):
            libc.renameat2(AT_FDCWD, d, AT_FDCWD, link, RENAME_EXCHANGE)
            swapped, rounds = False, rounds + 1
        i += 16 + n
if swapped:
    libc.renameat2(AT_FDCWD, d, AT_FDCWD, link, RENAME_EXCHANGE)
os.remove(link)
print(rounds, "rounds of swaps")
EOF
wait
echo w > work.txt`
	id, st := f.runJob(t, protocol.StartParams{Task: "swap a folder", Isolation: level, Exec: script}, map[string]string{"work.txt": "w\n"})
	if st.State != protocol.StateSucceeded {
		t.Fatalf("the swapping job ended %s: %s", st.State, st.Error)
	}
	f.shimGone(t, id)
	f.nextJobRunsTool(t)
	if bad := filesHolding(f.w.paths.EnvsDir(), secret); len(bad) > 0 {
		t.Errorf("a host file reached hub's cache: %v", bad)
	}
	if bad := filesHolding(f.w.paths.WorktreesDir(), secret); len(bad) > 0 {
		t.Errorf("a host file reached a job's worktree: %v", bad)
	}
	return "held"
}

// verifyInstall: the worker commits a package.json whose preinstall
// connects to a listener on the host's loopback; verify's install and
// landing's run it. At untrusted neither may reach it; at isolated they
// may, and the start notes say so.
func (f *fenceWorld) verifyInstall(t *testing.T, level protocol.Isolation) string {
	repo := f.newRepo(t, map[string]string{"package.json": `{"name":"p","version":"1.0.0"}` + "\n", "README.md": "# sample\n",
		".gitignore": "node_modules/\n"})
	f.npm(t, repo, "install", "--package-lock-only")
	f.w.git(repo, "add", "-A")
	f.w.git(repo, "commit", "-qm", "lockfile")
	connect := fmt.Sprintf(`node -e \"require('net').connect(%d,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(0))\"`, f.net.Port)
	script := `cat > package.json <<EOF
{"name":"p","version":"1.0.0","scripts":{"preinstall":"` + connect + `"}}
EOF
echo w > work.txt`
	started := hubtest.Daemon(t, f.w.c).JobStart(f.ctx, protocol.StartParams{Task: "a preinstall",
		Repo: repo, Engine: "exec", Isolation: level, Exec: script, Verify: "test -f work.txt"})
	notes := strings.Join(started.Notes, " ")
	st := f.w.waitEnd(f.ctx, started.ID)[0]
	f.jobs = append(f.jobs, work{id: started.ID, files: map[string]string{"work.txt": "w\n"}, repo: repo})
	if st.State != protocol.StateSucceeded {
		t.Fatalf("the job ended %s: %s", st.State, st.Error)
	}
	res := hubtest.Daemon(t, f.w.c).JobResult(f.ctx, protocol.ResultParams{ID: started.ID, Evidence: true})
	verified := f.net.Connections()
	land := hubtest.Daemon(t, f.w.c).JobLand(f.ctx, protocol.LandParams{IDs: []string{started.ID}})
	landed := f.net.Connections() - verified
	if len(land.Jobs) != 1 || land.Jobs[0].Outcome != protocol.LandLanded {
		t.Errorf("landing: %+v", land.Jobs)
	}
	switch level {
	case protocol.IsolationUntrusted:
		if verified > 0 || landed > 0 {
			t.Errorf("the worker's preinstall reached the host's loopback at untrusted: %d times in verify, %d in landing", verified, landed)
		}
		deps := ""
		if res.Evidence != nil && res.Evidence.Verify != nil {
			deps = strings.Join(res.Evidence.Verify.Deps, "; ")
		}
		if !strings.Contains(deps, "changed by the worker (package.json)") || !strings.Contains(deps, "without the network") {
			t.Errorf("verify does not say the worker changed the dependencies and how they were installed: %q", deps)
		}
		return fmt.Sprintf("held: verify %d, landing %d connections; verify says: %s", verified, landed, deps)
	default:
		if !strings.Contains(notes, "verify") || !strings.Contains(notes, "with the machine's network") {
			t.Errorf("the start notes do not say verify's install runs the worker's manifests with the network: %s", notes)
		}
		return fmt.Sprintf("said in the start notes: verify %d, landing %d connections", verified, landed)
	}
}

// repoState is what a job must leave of the user's repository byte for
// byte: its config and every entry of its hooks folder.
func repoState(t *testing.T, repo string) map[string]string {
	t.Helper()
	m := map[string]string{}
	b, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	m["config"] = string(b)
	root := filepath.Join(repo, ".git", "hooks")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := d.Info()
		v := fi.Mode().String()
		if d.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			v += " " + string(c)
		}
		m["hooks/"+rel] = v
		return nil
	})
	return m
}

func sameState(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("the user's repository: %s changed:\n%q\nnow\n%q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("the user's repository: %s appeared", k)
		}
	}
}

// alertsOf is job id's alerts.
func (f *fenceWorld) alertsOf(t *testing.T, id string) string {
	t.Helper()
	st := f.w.status(f.ctx, id)
	return strings.Join(st.Alerts, "\n")
}

// realHooks: a real project whose install sets up git hooks (husky: the
// shared config's core.hooksPath; lefthook: scripts in .git/hooks), set up
// by a job at worktree — installed by the job's own npm ci, in its linked
// worktree — once with a worker that succeeds and once with one that
// fails: the user's config and hooks stay byte for byte as they were, and
// the alerts say what hub put back.
func (f *fenceWorld) realHooks(t *testing.T, level protocol.Isolation, slug, want string) string {
	subject := hubtest.FetchedSubject(t, slug)
	dir := filepath.Join(f.w.dir, "repos", slug+fmt.Sprint(f.n))
	f.n++
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := subject.Checkout(t, dir, false, "node_modules/", ".husky/_/", "lefthook.yml")
	f.w.repo = repo
	before := repoState(t, repo)
	var ends []string
	for _, worker := range []string{"echo w > work.txt", "echo w > work.txt; exit 3"} {
		f.dropCache(t) // each job installs: its install is what runs the project's hooks setup
		id, st := f.runJob(t, protocol.StartParams{Task: "install and work", Isolation: level, Exec: worker}, map[string]string{"work.txt": "w\n"})
		f.shimGone(t, id)
		sameState(t, before, repoState(t, repo))
		alerts := f.alertsOf(t, id)
		if !strings.Contains(alerts, want) || !strings.Contains(alerts, "kept at") {
			b, _ := os.ReadFile(f.w.paths.SetupLog(id))
			t.Errorf("job %s's alerts do not say what hub put back (%s):\n%s\nits setup log:\n%s", id, want, alerts, b)
		}
		ends = append(ends, string(st.State)+": "+firstAlert(alerts))
	}
	return strings.Join(ends, "; ")
}

func firstAlert(alerts string) string {
	a, _, _ := strings.Cut(alerts, "\n")
	if len(a) > 160 {
		a = a[:160] + "…"
	}
	return a
}

// configWritten: the job's setup sets core.hooksPath and writes a hook as
// an install's script would; its worker sets a key too: whatever the
// level, the user's config and hooks end as they were.
func (f *fenceWorld) configWritten(t *testing.T, level protocol.Isolation) string {
	repo := f.newRepo(t, map[string]string{"README.md": "# sample\n"})
	before := repoState(t, repo)
	setup := `h="$(git rev-parse --git-path hooks)"; mkdir -p "$h"; printf '#!/bin/sh\ntouch ` + f.mark + `/hook-ran\n' > "$h/pre-commit"; chmod +x "$h/pre-commit"; git config core.hooksPath .husky/_`
	id, st := f.runJob(t, protocol.StartParams{Task: "hooks", Isolation: level, Setup: setup,
		Exec: `git config user.name "the worker"; echo w > work.txt`}, map[string]string{"work.txt": "w\n"})
	if st.State != protocol.StateSucceeded {
		t.Errorf("the job ended %s: %s", st.State, st.Error)
	}
	f.shimGone(t, id)
	sameState(t, before, repoState(t, repo))
	alerts := f.alertsOf(t, id)
	if level == protocol.IsolationWorktree && (!strings.Contains(alerts, "core.hooksPath") || !strings.Contains(alerts, "pre-commit")) {
		t.Errorf("the alerts do not say what hub put back:\n%s", alerts)
	}
	if level != protocol.IsolationWorktree && alerts != "" {
		t.Errorf("a private checkout's job has alerts about the user's repository:\n%s", alerts)
	}
	if level == protocol.IsolationWorktree {
		return "held: " + firstAlert(alerts)
	}
	return "held (a git dir of its own)"
}

// hog runs a job at level with limits l whose worker does what hog says
// (after writing work.txt), and beside it an ordinary job: the hog ends
// failed, category limit, naming want; the other succeeds; the daemon
// answers throughout.
func (f *fenceWorld) hog(t *testing.T, level protocol.Isolation, l protocol.Limits, hog, want string) string {
	f.newRepo(t, map[string]string{"README.md": "# sample\n"})
	began := time.Now()
	id := f.w.start(f.ctx, protocol.StartParams{Task: "hog", Isolation: level, Exec: "echo w > work.txt; " + hog, Limits: &l, TimeoutS: 300})
	other := f.w.start(f.ctx, protocol.StartParams{Task: "beside it", Isolation: level, Exec: "echo o > other.txt"})
	f.jobs = append(f.jobs, work{id: id, files: map[string]string{"work.txt": "w\n"}, repo: f.w.repo},
		work{id: other, files: map[string]string{"other.txt": "o\n"}, repo: f.w.repo})
	var slowest time.Duration
	for {
		t0 := time.Now()
		st := f.w.status(f.ctx, id)
		slowest = max(slowest, time.Since(t0))
		if st.State.Terminal() {
			break
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("the hog did not end: %+v", st)
		case <-time.After(100 * time.Millisecond):
		}
	}
	sts := f.w.waitEnd(f.ctx, id, other)
	st, ost := sts[0], sts[1]
	if sts[0].ID != id {
		st, ost = sts[1], sts[0]
	}
	took := time.Since(began)
	res := hubtest.Daemon(t, f.w.c).JobResult(f.ctx, protocol.ResultParams{ID: id, Evidence: true})
	if st.State != protocol.StateFailed || res.Evidence == nil || res.Evidence.Category != protocol.CategoryLimit || !strings.Contains(st.Error, want) {
		cat := ""
		if res.Evidence != nil {
			cat = res.Evidence.Category
		}
		t.Errorf("the hog ended %s (category %q): %s; want failed, category limit, naming the %s", st.State, cat, st.Error, want)
	}
	if ost.State != protocol.StateSucceeded {
		t.Errorf("the job beside the hog ended %s: %s", ost.State, ost.Error)
	}
	if slowest > 5*time.Second {
		t.Errorf("the daemon took %s to answer a status while the hog ran", slowest)
	}
	return fmt.Sprintf("failed in %s: %s", took.Round(100*time.Millisecond), firstAlert(st.Error))
}

// oversize: a worker writes a file over the job's max_file_mb: it is not
// committed, stays in the worktree, and the job fails naming it.
func (f *fenceWorld) oversize(t *testing.T, level protocol.Isolation) string {
	repo := f.newRepo(t, map[string]string{"README.md": "# sample\n"})
	id, st := f.runJob(t, protocol.StartParams{Task: "a big file", Isolation: level, Limits: &protocol.Limits{FileMB: 1},
		Exec: `echo w > work.txt; head -c 3145728 /dev/urandom > big.bin`}, map[string]string{"work.txt": "w\n"})
	if st.State != protocol.StateFailed || !strings.Contains(st.Error, "big.bin (3.0 MiB)") || !strings.Contains(st.Error, "max_file_mb") {
		t.Errorf("the job ended %s: %s; want failed naming big.bin and max_file_mb", st.State, st.Error)
	}
	if _, err := f.w.gitErr(repo, "cat-file", "-e", "hub/"+id+":big.bin"); err == nil {
		t.Errorf("big.bin is on hub/%s", id)
	}
	wt := f.w.paths.Worktree(id)
	if fi, err := os.Stat(filepath.Join(wt, "big.bin")); err != nil || fi.Size() != 3<<20 {
		t.Errorf("big.bin is not kept in the worktree: %v", err)
	}
	return string(st.State) + ": " + firstAlert(st.Error)
}

// portHog: a job at isolated tries to bind every port of the pool and
// holds what it got while the next job starts: it got its own ten at most,
// and the next job has a range of its own.
func (f *fenceWorld) portHog(t *testing.T, level protocol.Isolation) string {
	f.newRepo(t, map[string]string{"README.md": "# sample\n"})
	hog := `python3 - <<'EOF'
import os, socket, time
held = []
for p in range(20000, 30000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); s.listen(1); held.append(s)
    except OSError:
        s.close()
open("bound.txt", "w").write("%d %s\n" % (len(held), os.environ.get("HUB_PORTS", "")))
open("ready", "w").close()
end = time.time() + 60
while not os.path.exists("release") and time.time() < end:
    time.sleep(0.05)
EOF
echo w > work.txt`
	id := f.w.start(f.ctx, protocol.StartParams{Task: "take the ports", Isolation: level, Exec: hog})
	f.jobs = append(f.jobs, work{id: id, files: map[string]string{"work.txt": "w\n"}, repo: f.w.repo})
	wt := f.w.paths.Worktree(id)
	for {
		if _, err := os.Stat(filepath.Join(wt, "ready")); err == nil {
			break
		}
		if st := f.w.status(f.ctx, id); st.State.Terminal() {
			t.Fatalf("the port hog ended before it held its ports: %s %s", st.State, st.Error)
		}
		select {
		case <-f.ctx.Done():
			t.Fatal("the port hog never got ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
	b, _ := os.ReadFile(filepath.Join(wt, "bound.txt"))
	var bound int
	var own string
	fmt.Sscanf(string(b), "%d %s", &bound, &own)
	next, st := f.runJob(t, protocol.StartParams{Task: "next", Isolation: level, Exec: `echo "$HUB_PORT" > port.txt; echo w > work.txt`},
		map[string]string{"work.txt": "w\n"})
	if err := os.WriteFile(filepath.Join(wt, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.w.waitEnd(f.ctx, id)
	port := strings.TrimSpace(f.w.git(f.w.repo, "show", "hub/"+next+":port.txt"))
	if st.State != protocol.StateSucceeded || port == "" {
		t.Errorf("the next job ended %s with HUB_PORT %q: %s", st.State, port, st.Error)
	}
	if bound > 10 {
		t.Errorf("the hog bound %d ports of the pool (its own: %s)", bound, own)
	}
	return fmt.Sprintf("held: the hog bound %d (its range %s), the next job got HUB_PORT %s", bound, own, port)
}

// envEchoed: a worker prints every value of the env files .worktreeinclude
// copied in — a double-quoted value with an escaped quote, one after the
// first MiB of a big file, one in .envrc — into its output, its progress
// and its claim; none may be in what hub stores or returns.
func (f *fenceWorld) envEchoed(t *testing.T, level protocol.Isolation) string {
	stamp := fmt.Sprint(time.Now().UnixNano())
	quoted := `q1-` + stamp + `-left\"right-side`
	far := "far-" + stamp + "-after-the-first-mebibyte"
	rc := "envrc-" + stamp + "-direnv-secret"
	pad := strings.Repeat("# padding line of a big env file\n", 40<<10) // over 1 MiB
	repo := f.newRepo(t, map[string]string{".gitignore": ".env\n.env.big\n.envrc\n", ".worktreeinclude": ".env\n.env.big\n.envrc\n", "README.md": "# sample\n"})
	for name, body := range map[string]string{".env": `API_KEY="` + quoted + `"` + "\n", ".env.big": pad + "FAR_TOKEN=" + far + "\n",
		".envrc": "export AWS_SECRET_ACCESS_KEY=" + rc + "\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := `cat .env .envrc; tail -1 .env.big; hub progress "$(cat .env .envrc; tail -1 .env.big)"; echo w > work.txt; exit 1`
	id, st := f.runJob(t, protocol.StartParams{Task: "print the env", Isolation: level, Exec: script}, map[string]string{"work.txt": "w\n"})
	res := hubtest.Daemon(t, f.w.c).JobResult(f.ctx, protocol.ResultParams{ID: id, Full: true, Evidence: true})
	events := hubtest.Daemon(t, f.w.c).JobEvents(f.ctx, protocol.EventsParams{ID: id})
	values := map[string]string{"the quoted value (as the program reads it)": strings.ReplaceAll(quoted, `\"`, `"`),
		"its tail after the escaped quote": "right-side", "the value after the first MiB": far, "the .envrc value": rc}
	var seen []string
	for what, v := range values {
		for where, text := range map[string]string{"result": fmt.Sprint(res.Summary, res.Full, res.Evidence), "events": fmt.Sprint(events),
			"status": st.Error} {
			if strings.Contains(text, v) {
				t.Errorf("%s is in the job's %s", what, where)
			}
		}
		if bad := filesHolding(f.w.paths.JobDir(id), v); len(bad) > 0 {
			t.Errorf("%s is in %v", what, bad)
		}
		seen = append(seen, what)
	}
	worker, _ := os.ReadFile(f.w.paths.WorkerLog(id))
	if !strings.Contains(string(worker), "API_KEY=") {
		t.Errorf("the worker's log does not show it printed the env file (the case would prove nothing):\n%s", worker)
	}
	return fmt.Sprintf("held: none of %d values in the result, journal, status or the job's logs", len(seen))
}
