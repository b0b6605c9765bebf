package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

const (
	fleetJobs   = 64   // jobs in one batch, all running at once
	storedJobs  = 1000 // jobs stored before the idle footprint is read
	statusCalls = 10000
	idleWindows = 5
	idleWindow  = 6 * time.Second
)

// usage is one reading of a process: resident memory and CPU time so far.
type usage struct {
	rssKB int64
	cpu   time.Duration // on-CPU time of all its threads
}

// readUsage reads /proc: VmRSS, and the first field of every thread's
// schedstat (nanoseconds on a CPU), which unlike the clock ticks of
// /proc/<pid>/stat resolves a mostly idle process.
func readUsage(pid int) (usage, error) {
	var u usage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			u.rssKB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return u, fmt.Errorf("no schedstat for %d (needs a kernel with schedstats)", pid)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			u.cpu += time.Duration(n)
		}
	}
	return u, nil
}

// window reads each group of processes before and after d and returns,
// per group, its threads' CPU over d as a share of one core (percent) and
// its resident memory at the end (MB), summed over the group.
func window(d time.Duration, groups ...[]int) (cpuPct, rssMB []float64, err error) {
	read := func() ([]usage, error) {
		us := make([]usage, len(groups))
		for i, g := range groups {
			for _, pid := range g {
				u, err := readUsage(pid)
				if err != nil {
					return nil, err
				}
				us[i].cpu += u.cpu
				us[i].rssKB += u.rssKB
			}
		}
		return us, nil
	}
	before, err := read()
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	time.Sleep(d)
	after, err := read()
	if err != nil {
		return nil, nil, err
	}
	wall := float64(time.Since(t0))
	for i := range groups {
		cpuPct = append(cpuPct, 100*float64(after[i].cpu-before[i].cpu)/wall)
		rssMB = append(rssMB, float64(after[i].rssKB)/1024)
	}
	return cpuPct, rssMB, nil
}

// shims lists the pids of the job processes (`hub shim`) of this bench's binary.
func (e *env) shims() []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		args := bytes.Split(b, []byte{0})
		if len(args) >= 2 && string(args[0]) == e.bin && string(args[1]) == "shim" {
			pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
			pids = append(pids, pid)
		}
	}
	return pids
}

// idle reads the daemon's memory and CPU over idle windows, with nothing
// running and no client calling.
func (e *env) idle(label string) (rss, cpu *figure, err error) {
	pid := e.c.Info.PID
	rss = &figure{name: "daemon RSS, idle, " + label, unit: "MB"}
	cpu = &figure{name: "daemon CPU while idle, " + label, unit: "%"}
	time.Sleep(time.Second) // let the last call's work settle
	for i := 0; i < idleWindows; i++ {
		c, r, err := window(idleWindow, []int{pid})
		if err != nil {
			return nil, nil, err
		}
		rss.samples = append(rss.samples, r[0])
		cpu.samples = append(cpu.samples, c[0])
	}
	return rss, cpu, nil
}

// fleetSection: the daemon's footprint, idle and under 64 running jobs,
// and its behaviour at scale: batches of 64 exec jobs, 10,000 status
// calls, wait on 64 ids, and every event heard exactly once.
func fleetSection(ctx context.Context, e *env) (*section, error) {
	sec := &section{title: "5. Footprint and 6. Scale"}
	stored, err := e.stored(ctx)
	if err != nil {
		return nil, err
	}
	rss0, cpu0, err := e.idle(jobsStored(stored))
	if err != nil {
		return nil, err
	}

	ed, err := e.newEditor(ctx)
	if err != nil {
		return nil, err
	}
	defer ed.c.Close()
	repo := e.repos[100]
	many := &figure{name: fmt.Sprintf("`job/startMany` of %d jobs", fleetJobs), unit: "ms"}
	ready := &figure{name: fmt.Sprintf("start → worker running, %d at once", fleetJobs), unit: "ms"}
	batch := &figure{name: fmt.Sprintf("first start → all %d running, per batch", fleetJobs), unit: "ms"}
	waitAll := &figure{name: fmt.Sprintf("last of %d ends → `wait` on all returns", fleetJobs), unit: "ms"}
	batches := (storedJobs - stored + fleetJobs - 1) / fleetJobs
	if e.quick {
		batches = 2
	}
	batches = max(batches, 2)
	var all []string
	var runRSS, shimRSS, runCPU, shimCPU *figure
	for b := 0; b < batches; b++ {
		// The first batch's workers wait for a gate file, so all 64 are
		// running at once for the footprint under load; the others end
		// at once.
		cmd := "true"
		gate := filepath.Join(e.work, "fleet-gate")
		if b == 0 {
			cmd = fmt.Sprintf("while [ ! -e %s ]; do sleep 0.2; done", gate)
		}
		p := protocol.StartManyParams{}
		for i := 0; i < fleetJobs; i++ {
			p.Jobs = append(p.Jobs, protocol.StartParams{Task: fmt.Sprintf("fleet %d/%d", b, i), Repo: repo, Engine: "exec", Exec: cmd})
		}
		t0 := time.Now()
		r, err := e.c.Daemon().StartMany(ctx, p)
		if err != nil {
			return nil, err
		}
		many.samples = append(many.samples, ms(time.Since(t0)))
		var ids []string
		for i, it := range r.Results {
			if it.Error != nil || it.StartResult == nil {
				return nil, fmt.Errorf("batch %d job %d refused: %+v", b, i, it.Error)
			}
			ids = append(ids, it.ID)
		}
		if b == 0 {
			if runRSS, shimRSS, runCPU, shimCPU, err = e.underLoad(ctx, ids); err != nil {
				return nil, err
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				return nil, err
			}
		}
		wr, err := e.c.Daemon().JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 600})
		if err != nil {
			return nil, err
		}
		got := time.Now()
		if !wr.Done {
			return nil, fmt.Errorf("batch %d: not done after 600 s", b)
		}
		var last, firstCreated, lastRunning time.Time
		for _, id := range ids {
			j, err := e.st.Job(ctx, id)
			if err != nil {
				return nil, err
			}
			if j.State != protocol.StateSucceeded {
				return nil, fmt.Errorf("fleet job %s ended %s: %s", id, j.State, j.Error)
			}
			if j.EndedAt.After(last) {
				last = j.EndedAt
			}
			ready.samples = append(ready.samples, ms(j.RunningAt.Sub(j.CreatedAt)))
			if firstCreated.IsZero() || j.CreatedAt.Before(firstCreated) {
				firstCreated = j.CreatedAt
			}
			if j.RunningAt.After(lastRunning) {
				lastRunning = j.RunningAt
			}
		}
		batch.samples = append(batch.samples, ms(lastRunning.Sub(firstCreated)))
		waitAll.samples = append(waitAll.samples, ms(got.Sub(last)))
		if err := e.cleanup(ctx, ids...); err != nil {
			return nil, err
		}
		all = append(all, ids...)
		step("fleet: batch %d of %d done", b+1, batches)
	}

	// No lost events: for every job, the editor heard exactly the events
	// the store holds, in order, and its terminal job/changed.
	time.Sleep(500 * time.Millisecond)
	checked, evs := 0, 0
	ed.mu.Lock()
	for _, id := range all {
		stored, err := e.st.Events(ctx, []string{id}, 0, 0)
		if err != nil {
			ed.mu.Unlock()
			return nil, err
		}
		heard := ed.events[id]
		if len(heard) != len(stored) {
			ed.mu.Unlock()
			return nil, fmt.Errorf("lost events: job %s has %d events stored, the editor heard %d", id, len(stored), len(heard))
		}
		for i := range stored {
			if heard[i] != stored[i].Cursor {
				ed.mu.Unlock()
				return nil, fmt.Errorf("job %s: event %d heard as cursor %d, stored as %d", id, i, heard[i], stored[i].Cursor)
			}
		}
		if _, ok := ed.ended[id]; !ok {
			ed.mu.Unlock()
			return nil, fmt.Errorf("the editor never heard that %s ended", id)
		}
		checked++
		evs += len(stored)
	}
	ed.mu.Unlock()
	sec.notes = append(sec.notes, fmt.Sprintf("no lost events: for each of the %d fleet jobs, the subscribed editor heard every one of its %d events in all exactly once, in cursor order, and its end", checked, evs))

	// 10,000 job/status calls on stored jobs, one after another.
	status := &figure{name: fmt.Sprintf("`job/status`, %s calls", thousands(statusCalls)), unit: "ms"}
	calls := statusCalls
	if e.quick {
		calls = 1000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		id := all[rng.IntN(len(all))]
		t1 := time.Now()
		st, err := e.c.Daemon().JobStatus(ctx, protocol.IDParams{ID: id})
		if err != nil {
			return nil, err
		}
		status.samples = append(status.samples, ms(time.Since(t1)))
		if st.ID != id {
			return nil, fmt.Errorf("status of %s answered %s", id, st.ID)
		}
	}
	status.note = fmt.Sprintf("%.0f calls/s from one connection", float64(calls)/time.Since(t0).Seconds())

	if stored, err = e.stored(ctx); err != nil {
		return nil, err
	}
	rss1, cpu1, err := e.idle(jobsStored(stored))
	if err != nil {
		return nil, err
	}
	rss1.target, rss1.pass = "< 40 MB", boolp(rss1.p50() < 40)
	for _, f := range []*figure{cpu0, cpu1} {
		f.target, f.pass = "< 0.1%", boolp(f.p50() < 0.1)
	}
	batch.note = fmt.Sprintf("%s ms a job. Jobs of one repository get their worktrees one at a time (a per-repository lock: "+
		"`git worktree add`s racing in one repository trip over its config and worktree list), while %d shims start on %d cores; "+
		"so a job's start → running is mostly its place in the batch",
		num(batch.p50()/fleetJobs), fleetJobs, runtime.NumCPU())
	sec.figs = []*figure{rss0, cpu0, runRSS, shimRSS, runCPU, shimCPU, rss1, cpu1, many, ready, batch, waitAll, status}
	sec.how = fmt.Sprintf(`**RSS** is the daemon's VmRSS from /proc; **CPU** is the sum of its threads' on-CPU nanoseconds
(/proc/<pid>/task/*/schedstat) over a %s window, as a share of one core; %d windows, with no job running and
no client calling. The first reading is taken before the fleet runs, the last after it, with the jobs of every section
stored. **Under load**: a batch of %d exec jobs that wait for a gate file started with one `+"`job/startMany`"+`, read once all %d are
running (three 2 s windows); each job is also a `+"`hub shim`"+` process, whose RSS is given per process and whose CPU is summed. **Scale**: batches of %d exec jobs on the
100-file repo until over %s jobs are stored; per batch the `+"`job/startMany`"+` round trip, each job's start → running,
and from the last job's `+"`ended_at`"+` to the answer of one `+"`wait`"+` on all %d ids. Each batch is cleaned up (worktree and
branch) after it ends. A subscribed editor connection runs throughout, and at the end its notifications are compared,
job by job, with the store's journal. **status**: %s `+"`job/status`"+` calls on random stored jobs, one after another on
one connection.`, idleWindow, idleWindows, fleetJobs, fleetJobs, fleetJobs, thousands(storedJobs), fleetJobs, thousands(statusCalls))
	return sec, nil
}

func jobsStored(n int) string {
	if n == 1 {
		return "1 job stored"
	}
	return thousands(n) + " jobs stored"
}

// stored counts the jobs in the store.
func (e *env) stored(ctx context.Context) (int, error) {
	js, err := e.st.ListJobs(ctx, nil, "", 0)
	return len(js), err
}

// underLoad waits until every fleet job runs, then reads the daemon and
// the shims.
func (e *env) underLoad(ctx context.Context, ids []string) (rss, shim, cpu, shimCPU *figure, err error) {
	deadline := time.Now().Add(120 * time.Second)
	for {
		n := map[protocol.State]int{}
		for _, id := range ids {
			j, err := e.st.Job(ctx, id)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			if j.State.Terminal() {
				return nil, nil, nil, nil, fmt.Errorf("fleet job %s ended %s before the gate opened: %s", id, j.State, j.Error)
			}
			n[j.State]++
		}
		if n[protocol.StateRunning] == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, nil, nil, fmt.Errorf("%d of %d jobs running after 120 s: %v", n[protocol.StateRunning], len(ids), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := e.c.Info.PID
	rss = &figure{name: fmt.Sprintf("daemon RSS, %d jobs running", fleetJobs), unit: "MB"}
	shim = &figure{name: fmt.Sprintf("one `hub shim` RSS, %d running (per job)", fleetJobs), unit: "MB"}
	cpu = &figure{name: fmt.Sprintf("daemon CPU, %d jobs running (workers waiting)", fleetJobs), unit: "%"}
	shimCPU = &figure{name: fmt.Sprintf("the %d `hub shim` processes' CPU together, same windows", fleetJobs), unit: "%"}
	pids := e.shims()
	if len(pids) < fleetJobs {
		return nil, nil, nil, nil, fmt.Errorf("found %d hub shim processes, want %d", len(pids), fleetJobs)
	}
	time.Sleep(time.Second) // past the last shim's start-up
	for i := 0; i < 3; i++ {
		c, r, err := window(2*time.Second, []int{pid}, pids)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rss.samples = append(rss.samples, r[0])
		cpu.samples = append(cpu.samples, c[0])
		shimCPU.samples = append(shimCPU.samples, c[1])
	}
	for _, p := range pids {
		if u, err := readUsage(p); err == nil {
			shim.samples = append(shim.samples, float64(u.rssKB)/1024)
		}
	}
	return rss, shim, cpu, shimCPU, nil
}
