package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// remoteSection measures jobs on a remote queue (hub-temporal, with its
// dev server in memory and worker processes on this machine) beside the
// same jobs run here.
func remoteSection(ctx context.Context, e *env) (*section, error) {
	runner := filepath.Join(filepath.Dir(e.bin), "hub-temporal")
	build := exec.Command("go", "build", "-o", runner, "./cmd/hub-temporal")
	build.Dir = filepath.Join(e.root, "hub", "temporal")
	if b, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build hub-temporal: %v\n%s", err, b)
	}
	r := &remoteBench{e: e, runner: runner}
	defer r.stop()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	figs, err := r.latency(ctx)
	if err != nil {
		return nil, err
	}
	tput, err := r.throughput(ctx)
	if err != nil {
		return nil, err
	}
	return &section{title: "12. Remote queues", figs: append(figs, tput...),
		how: `A remote queue here is hub-temporal: its dev server (Temporal in one process, in memory) on loopback, and
worker processes (` + "`hub-temporal worker`" + `) on this machine, each with a HUB_HOME and a clone of its own; the git remote
is a bare repository on disk. The local figures are the same jobs run by this hub itself, in the same run, alternating
with the remote ones. **start → running** is from the ` + "`job/start`" + ` call to the job's ` + "`running_at`" + ` (for a remote job: the
base pushed to the remote, the workflow started, a worker takes it, fetches the base, prepares its worktree and
starts the engine, and the hub hears of it). **worker done → wait returns** is from the moment the job's command
(` + "`sleep 0.3; date +%s%N > mark`" + `) wrote its mark to the moment the supervisor's ` + "`wait`" + ` returns: for a remote job that is
the worker's commit, verify, push of ` + "`hub/<id>`" + `, the activity's completion, the workflow's close, the relay's fetch and
the job's close here. Throughput: 40 jobs of ` + "`sleep 1`" + ` started at once on a queue of 64 slots served by 1, 2 and 4
workers of 4 slots each, from the first start to the last job's end; the reference is the same 40 jobs run by this
hub, four in flight at a time (one worker's worth of slots). Every worker here shares this machine's cores with the
hub, the dev server and the other workers, so the figures for 2 and 4 workers say how the queue spreads jobs over
workers, not what more machines would add.`}, nil
}

type remoteBench struct {
	e       *env
	runner  string
	server  *exec.Cmd
	addr    string
	bare    string
	workers []*exec.Cmd
	cfg     string
	n       int // workers started so far, for their names
}

func (r *remoteBench) setup(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r.addr = fmt.Sprintf("127.0.0.1:%d", port)
	r.server = exec.Command(r.runner, "dev-server", "--port", strconv.Itoa(port))
	out, err := r.server.StderrPipe()
	if err != nil {
		return err
	}
	if err := r.server.Start(); err != nil {
		return err
	}
	ready := make(chan bool, 1)
	var said []string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			said = append(said, sc.Text())
			if strings.Contains(sc.Text(), "dev server ready") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			return fmt.Errorf("the dev server stopped before it was ready:\n%s", strings.Join(said, "\n"))
		}
	case <-time.After(time.Minute):
		return fmt.Errorf("the dev server was not ready in a minute")
	}
	r.bare = filepath.Join(r.e.work, "remote.git")
	if b, err := exec.Command("git", "init", "-q", "--bare", r.bare).CombinedOutput(); err != nil {
		return fmt.Errorf("git init --bare: %v\n%s", err, b)
	}
	// config.json is read per request: the queue is there from now on.
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "hub")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	r.cfg = filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"queues": map[string]any{"far": map[string]any{
		"runner": "temporal", "address": r.addr, "remote": r.bare, "slots": 64}}})
	return os.WriteFile(r.cfg, b, 0o600)
}

// workersTo runs n workers (starting or stopping some).
func (r *remoteBench) workersTo(n int) error {
	for len(r.workers) > n {
		w := r.workers[len(r.workers)-1]
		r.workers = r.workers[:len(r.workers)-1]
		_ = w.Process.Signal(syscall.SIGTERM)
		_, _ = w.Process.Wait()
	}
	for len(r.workers) < n {
		r.n++
		home := filepath.Join(r.e.work, fmt.Sprintf("worker-%d", r.n))
		if err := os.MkdirAll(filepath.Join(home, "home"), 0o700); err != nil {
			return err
		}
		cmd := exec.Command(r.runner, "worker", "--temporal", r.addr, "--queue", "far", "--slots", "4",
			"--identity", fmt.Sprintf("bench-%d", r.n))
		cmd.Env = append(os.Environ(), "HUB_HOME="+filepath.Join(home, "hub"), "HOME="+filepath.Join(home, "home"),
			"XDG_CONFIG_HOME="+filepath.Join(home, "home", ".config"), "HUB_LOG_LEVEL=warn")
		logf, err := os.Create(filepath.Join(home, "worker.log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return err
		}
		r.workers = append(r.workers, cmd)
	}
	time.Sleep(time.Second) // their pollers up
	return nil
}

func (r *remoteBench) stop() {
	_ = r.workersTo(0)
	if r.server != nil && r.server.Process != nil {
		_ = r.server.Process.Signal(syscall.SIGTERM)
		_, _ = r.server.Process.Wait()
	}
	if r.cfg != "" {
		_ = os.Remove(r.cfg)
	}
}

// one runs a job of `sleep 0.3` here or on the queue and returns its
// start → running and worker done → wait returns.
func (r *remoteBench) one(ctx context.Context, queue string, i int) (running, done time.Duration, err error) {
	mark := filepath.Join(r.e.work, fmt.Sprintf("mark-%s-%d", queue, i))
	p := protocol.StartParams{Task: "bench", Repo: r.e.repos[100], Engine: "exec", Exec: "sleep 0.3; date +%s%N > " + mark, Queue: queue}
	t0 := time.Now()
	id, err := r.e.startJob(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	wr, err := r.e.c.Daemon().JobWait(ctx, protocol.WaitParams{IDs: []string{id}, TimeoutS: 120})
	if err != nil {
		return 0, 0, err
	}
	got := time.Now()
	if !wr.Done || wr.Jobs[0].State != protocol.StateSucceeded {
		return 0, 0, fmt.Errorf("job %s on %q: %+v", id, queue, wr.Jobs)
	}
	j, err := r.e.st.Job(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	b, err := os.ReadFile(mark)
	if err != nil {
		return 0, 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	_ = os.Remove(mark)
	if err := r.e.cleanup(ctx, id); err != nil {
		return 0, 0, err
	}
	return j.RunningAt.Sub(t0), got.Sub(time.Unix(0, ns)), nil
}

func (r *remoteBench) latency(ctx context.Context) ([]*figure, error) {
	if err := r.workersTo(1); err != nil {
		return nil, err
	}
	lr := &figure{name: "local job: start → running", unit: "ms"}
	rr := &figure{name: "remote job: start → running", unit: "ms"}
	ld := &figure{name: "local job: worker done → `wait` returns", unit: "ms"}
	rd := &figure{name: "remote job: worker done → `wait` returns", unit: "ms"}
	for i := -1; i < r.e.runs; i++ {
		var a, b, c, d time.Duration
		if err := pair(i,
			func() (err error) { a, c, err = r.one(ctx, "", i+1); return err },
			func() (err error) { b, d, err = r.one(ctx, "far", i+1); return err }); err != nil {
			return nil, err
		}
		if i < 0 {
			continue // the first pair warms the worker's clone and caches
		}
		lr.samples, rr.samples = append(lr.samples, ms(a)), append(rr.samples, ms(b))
		ld.samples, rd.samples = append(ld.samples, ms(c)), append(rd.samples, ms(d))
	}
	rr.note = fmt.Sprintf("%+.0f ms over local (medians)", rr.p50()-lr.p50())
	rd.note = fmt.Sprintf("%+.0f ms over local (medians)", rd.p50()-ld.p50())
	return []*figure{lr, rr, ld, rd}, nil
}

// batch runs 40 jobs of `sleep 1` at once and returns jobs per minute.
func (r *remoteBench) batch(ctx context.Context, queue string) (float64, error) {
	t0 := time.Now()
	var ids []string
	for i := 0; i < 40; i++ {
		id, err := r.e.startJob(ctx, protocol.StartParams{Task: "bench", Repo: r.e.repos[100], Engine: "exec", Exec: "sleep 1; echo done > bench.txt", Queue: queue})
		if err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := r.e.waitAll(ctx, ids); err != nil {
		return 0, err
	}
	took := time.Since(t0)
	if err := r.e.cleanup(ctx, ids...); err != nil {
		return 0, err
	}
	return 40 / took.Minutes(), nil
}

func (r *remoteBench) throughput(ctx context.Context) ([]*figure, error) {
	runs := 3
	if r.e.quick {
		runs = 1
	}
	local := &figure{name: "reference: the 40 jobs here, 4 at a time", unit: "jobs/min"}
	for i := 0; i < runs; i++ {
		v, err := r.fourAtATime(ctx)
		if err != nil {
			return nil, err
		}
		local.samples = append(local.samples, v)
	}
	figs := []*figure{local}
	for _, n := range []int{1, 2, 4} {
		if err := r.workersTo(n); err != nil {
			return nil, err
		}
		f := &figure{name: fmt.Sprintf("40 jobs on the queue, %d worker(s) of 4 slots", n), unit: "jobs/min"}
		for i := 0; i < runs; i++ {
			v, err := r.batch(ctx, "far")
			if err != nil {
				return nil, err
			}
			f.samples = append(f.samples, v)
		}
		f.note = fmt.Sprintf("%.2f× the reference (medians)", f.p50()/local.p50())
		figs = append(figs, f)
	}
	return figs, nil
}

// fourAtATime runs the 40 jobs here, keeping four in flight (as a
// worker's four slots would), and returns jobs per minute.
func (r *remoteBench) fourAtATime(ctx context.Context) (float64, error) {
	t0 := time.Now()
	next := make(chan int, 40)
	for i := 0; i < 40; i++ {
		next <- i
	}
	close(next)
	errs := make(chan error, 4)
	for k := 0; k < 4; k++ {
		go func() {
			for range next {
				id, err := r.e.startJob(ctx, protocol.StartParams{Task: "bench", Repo: r.e.repos[100], Engine: "exec", Exec: "sleep 1; echo done > bench.txt"})
				if err == nil {
					err = r.e.waitAll(ctx, []string{id})
				}
				if err == nil {
					err = r.e.cleanup(ctx, id)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for k := 0; k < 4; k++ {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return 40 / time.Since(t0).Minutes(), nil
}
