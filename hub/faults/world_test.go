//go:build linux

package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// world is one case: a folder of its own holding HUB_HOME, HOME, the repo
// and the control folder the parked processes read, and the environment
// every process of the case runs with. Nothing is set in the test
// process's own environment, so cases may run side by side. Every process
// of the case carries the folder's path (in its environment, its command
// line or its working directory): that is how leftovers are found.
type world struct {
	t     *testing.T
	dir   string
	paths config.Paths
	bin   string
	vars  []string
	ctl   string // the control folder: park-*, at-*, open
	repo  string

	c *client.Client // the current daemon's connection
}

func newWorld(t *testing.T) *world {
	t.Helper()
	bin := hubtest.MustBinary(t)
	dir, err := os.MkdirTemp("", "hub-faults-")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, dir: dir, paths: config.Paths{Home: filepath.Join(dir, "hub")}, bin: bin,
		ctl: filepath.Join(dir, "ctl")}
	home := filepath.Join(dir, "home")
	for _, d := range []string{home, w.ctl} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	set := map[string]string{
		"HUB_HOME": w.paths.Home, "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME": filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"XDG_STATE_HOME": filepath.Join(home, ".local", "state"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@localhost",
		"GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@localhost",
		"HUB_CONFIG_DIR": "", "HUB_FAULTS_CASE": dir,
		"PATH": filepath.Dir(w.bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && !strings.HasPrefix(k, "HUB_") && !strings.HasPrefix(k, "GIT_") {
			w.vars = append(w.vars, kv)
		}
	}
	for k, v := range set {
		w.vars = append(w.vars, k+"="+v)
	}
	if err := os.WriteFile(filepath.Join(w.ctl, "park.sh"), []byte(strings.ReplaceAll(parkScript, "@CTL@", w.ctl)), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.c != nil {
			w.c.Close()
		}
		// Whatever is still parked may go; then nothing of the case may be left.
		w.open()
		for _, p := range leftovers(dir, 5*time.Second) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if t.Failed() {
			w.dumpLogs()
		}
		os.RemoveAll(dir)
	})
	return w
}

// parkScript parks a step of a run. `park.sh STEP [FILE]`: when the control
// folder holds park-STEP (and, for a git filter, it names FILE), the first
// caller takes it, writes its pid to at-STEP and waits for the file open;
// then it goes on. As a git filter (FILE given) it passes its input through.
const parkScript = `#!/bin/sh
ctl='@CTL@'
if [ -f "$ctl/park-$1" ] && { [ -z "$2" ] || [ "$2" = "$(cat "$ctl/park-$1")" ]; } &&
	mv "$ctl/park-$1" "$ctl/parked-$1" 2>/dev/null; then
	echo $$ > "$ctl/at-$1.tmp" && mv "$ctl/at-$1.tmp" "$ctl/at-$1"
	while [ ! -f "$ctl/open" ]; do sleep 0.02; done
fi
if [ -n "$2" ]; then exec cat; fi
`

// park arms step: the next process reaching it waits there. file limits a
// git filter's park to that path.
func (w *world) park(step, file string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.ctl, "park-"+step), []byte(file), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// parkCmd is the shell command that parks at step.
func (w *world) parkCmd(step string) string {
	return "sh '" + filepath.Join(w.ctl, "park.sh") + "' " + step
}

// open lets every parked process go on.
func (w *world) open() { _ = os.WriteFile(filepath.Join(w.ctl, "open"), nil, 0o644) }

// gateCmd is a shell step that waits for the gate name to open (any number
// of processes may wait at one gate); the case's open opens every gate.
func (w *world) gateCmd(name string) string {
	return fmt.Sprintf(`while [ ! -f '%s' ] && [ ! -f '%s' ]; do sleep 0.02; done`,
		filepath.Join(w.ctl, "gate-"+name), filepath.Join(w.ctl, "open"))
}

// openGate opens the gate name.
func (w *world) openGate(name string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.ctl, "gate-"+name), nil, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// parked waits until a process parked at step and returns its pid.
func (w *world) parked(ctx context.Context, step string) int {
	w.t.Helper()
	p := filepath.Join(w.ctl, "at-"+step)
	for {
		if b, err := os.ReadFile(p); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("nothing parked at %s before the deadline", step)
		case <-time.After(20 * time.Millisecond): // a file to appear: nothing to wait on but the folder
		}
	}
}

// makeRepo makes the case's repo at dir with a committed seed.park, whose
// checkout (smudge) and staging (clean) run park.sh, as git-lfs would run
// its filter: that is how preparing (git worktree add) and committing
// (git add) are parked.
func (w *world) makeRepo(dir string) string {
	w.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	files := map[string]string{"README.md": "# sample\n", "seed.park": "seed\n", ".gitattributes": "*.park filter=park\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	w.git(dir, "init", "-q", "-b", "main")
	w.git(dir, "add", "-A")
	w.git(dir, "commit", "-q", "-m", "initial")
	park := filepath.Join(w.ctl, "park.sh")
	w.git(dir, "config", "filter.park.smudge", "sh '"+park+"' preparing %f")
	w.git(dir, "config", "filter.park.clean", "sh '"+park+"' committing %f")
	w.repo = dir
	return dir
}

// git runs git in dir with the case's environment.
func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	out, err := w.gitErr(dir, args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (w *world) gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, w.vars
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// startDaemon starts `hub serve` for the case, as a client would (a session
// of its own), and connects to it.
func (w *world) startDaemon(ctx context.Context) *client.Client {
	w.t.Helper()
	if err := w.paths.Ensure(); err != nil {
		w.t.Fatal(err)
	}
	logf, err := os.OpenFile(w.paths.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(w.bin, "serve")
	cmd.Env = w.vars
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go cmd.Wait()
	for {
		c, err := client.Connect(ctx, w.paths, client.Options{ClientName: "faults"})
		if err == nil {
			if w.c != nil {
				w.c.Close()
			}
			w.c = c
			return c
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("the daemon did not answer: %v", err)
		case <-time.After(20 * time.Millisecond): // the socket to appear
		}
	}
}

// killDaemon kills the daemon with sig and waits until it is gone.
func (w *world) killDaemon(ctx context.Context, sig syscall.Signal) {
	w.t.Helper()
	pid := w.c.Info.PID
	if err := syscall.Kill(pid, sig); err != nil {
		w.t.Fatal(err)
	}
	<-w.c.DisconnectNotify()
	w.c.Close()
	w.c = nil
	waitGone(ctx, w.t, pid)
}

// waitGone waits until pid is no longer a live process.
func waitGone(ctx context.Context, t *testing.T, pid int) {
	t.Helper()
	for alive(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d is still alive", pid)
		case <-time.After(10 * time.Millisecond): // not our child: nothing to wait on
		}
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// pgidOf returns the process group of pid.
func pgidOf(t *testing.T, pid int) int {
	t.Helper()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatalf("process group of %d: %v", pid, err)
	}
	return pgid
}

// start starts an exec job on the case's repo.
func (w *world) start(ctx context.Context, p protocol.StartParams) string {
	w.t.Helper()
	p.Repo, p.Engine = w.repo, "exec"
	if p.Task == "" {
		p.Task = "fault case"
	}
	return hubtest.Daemon(w.t, w.c).JobStart(ctx, p).ID
}

// status is job/status.
func (w *world) status(ctx context.Context, id string) protocol.JobStatus {
	w.t.Helper()
	return hubtest.Daemon(w.t, w.c).JobStatus(ctx, protocol.IDParams{ID: id})
}

// until polls job/status until ok holds.
func (w *world) until(ctx context.Context, id string, ok func(protocol.JobStatus) bool) protocol.JobStatus {
	w.t.Helper()
	for {
		st := w.status(ctx, id)
		if ok(st) {
			return st
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("job %s: condition not met before the deadline; last status %+v", id, st)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitEnd waits, through job/wait, until every job ended.
func (w *world) waitEnd(ctx context.Context, ids ...string) []protocol.JobStatus {
	w.t.Helper()
	for {
		wr := hubtest.Daemon(w.t, w.c).JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 30})
		ended := 0
		for _, st := range wr.Jobs {
			if st.State.Terminal() {
				ended++
			}
		}
		if ended == len(ids) {
			return wr.Jobs
		}
		if ctx.Err() != nil {
			w.t.Fatalf("jobs did not end: %+v", wr.Jobs)
		}
		// wait counts a job that asks as ready: look again a moment later.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// storeJob reads a job's record straight from the store.
func (w *world) storeJob(ctx context.Context, id string) *store.Job {
	w.t.Helper()
	st, err := store.Open(w.paths.DB())
	if err != nil {
		w.t.Fatal(err)
	}
	defer st.Close()
	j, err := st.Job(ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return j
}

// dumpLogs writes the daemon's log and each job's logs to the test log.
func (w *world) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(w.paths.Home, "logs", "*.log"))
	for _, pat := range []string{"shim.log", "worker.log"} {
		m, _ := filepath.Glob(filepath.Join(w.paths.Home, "jobs", "*", pat))
		logs = append(logs, m...)
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		if len(b) > 6<<10 {
			b = append([]byte("…"), b[len(b)-6<<10:]...)
		}
		rel, _ := filepath.Rel(w.paths.Home, p)
		w.t.Logf("--- HUB_HOME/%s ---\n%s", rel, b)
	}
}

// errText is err with its hint, for the matrix.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var je interface{ Error() string }
	if errors.As(err, &je) {
		if h := rpc.HintOf(err); h != "" {
			return fmt.Sprintf("%v (%s)", err, h)
		}
	}
	return err.Error()
}
