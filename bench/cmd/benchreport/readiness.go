package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// readinessSection times `job/start` and start → worker running on each
// sample repository, beside a bare `git worktree add` of the same
// repository: the floor no delegation can go under.
func readinessSection(ctx context.Context, e *env) (*section, error) {
	sec := &section{title: "2. Start and readiness"}
	var sizes []int
	for n := range e.repos {
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	var groups []group
	var misses []string
	for _, n := range sizes {
		repo := e.repos[n]
		runs := e.runs
		if n >= 50000 {
			runs = max(3, e.runs/3) // seconds a run: fewer, and said so in the table's n
		}
		label := fmt.Sprintf("%s files", thousands(n))
		start := &figure{name: fmt.Sprintf("`start` latency, %s", label), unit: "ms", target: "p50 < 20 ms"}
		ready := &figure{name: fmt.Sprintf("start → worker running, %s", label), unit: "ms", target: "≤ 1.2× floor"}
		floor := &figure{name: fmt.Sprintf("floor: bare `git worktree add`, %s", label), unit: "ms"}
		// The same at isolated: a private checkout (the git boundary's layout).
		iso := &figure{name: fmt.Sprintf("start → worker running at isolated, %s", label), unit: "ms", target: "≤ 1.2× floor"}
		isoOK := sandbox.Probe().OK
		var ratios []float64
		// One warm-up of each, discarded; then hub and the floor in turn.
		for i := -1; i < runs; i++ {
			var startMS, readyMS, floorMS, isoMS float64
			runJob := func(isolation protocol.Isolation) (startMS, readyMS float64, err error) {
				t0 := time.Now()
				id, err := e.startJob(ctx, protocol.StartParams{Task: "bench", Repo: repo, Engine: "exec", Exec: "echo ready > bench.txt", Isolation: isolation})
				if err != nil {
					return 0, 0, err
				}
				startMS = ms(time.Since(t0))
				if err := e.waitAll(ctx, []string{id}); err != nil { // one at a time: readiness is per job
					return 0, 0, err
				}
				j, err := e.st.Job(ctx, id)
				if err != nil {
					return 0, 0, err
				}
				if j.RunningAt.IsZero() {
					return 0, 0, fmt.Errorf("job %s has no running time", id)
				}
				return startMS, ms(j.RunningAt.Sub(j.CreatedAt)), e.cleanup(ctx, id)
			}
			hubRun := func() error {
				var err error
				if startMS, readyMS, err = runJob(""); err != nil || !isoOK {
					return err
				}
				_, isoMS, err = runJob(protocol.IsolationIsolated)
				return err
			}
			floorRun := func() error {
				name := fmt.Sprintf("floor-%d-%d", n, i+1)
				dir := filepath.Join(e.work, name)
				t0 := time.Now()
				if b, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", name, dir, "HEAD").CombinedOutput(); err != nil {
					return fmt.Errorf("worktree add: %v %s", err, b)
				}
				floorMS = ms(time.Since(t0))
				if b, err := exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).CombinedOutput(); err != nil {
					return fmt.Errorf("worktree remove: %v %s", err, b)
				}
				if b, err := exec.Command("git", "-C", repo, "branch", "-q", "-D", name).CombinedOutput(); err != nil {
					return fmt.Errorf("branch -D: %v %s", err, b)
				}
				return nil
			}
			if err := pair(i, hubRun, floorRun); err != nil {
				return nil, err
			}
			if i < 0 {
				continue
			}
			start.samples = append(start.samples, startMS)
			ready.samples = append(ready.samples, readyMS)
			floor.samples = append(floor.samples, floorMS)
			ratios = append(ratios, readyMS/floorMS)
			if isoOK {
				iso.samples = append(iso.samples, isoMS)
			}
		}
		start.pass = boolp(start.p50() < 20)
		r := ready.p50() / floor.p50()
		ready.pass = boolp(r <= 1.2)
		rs := &figure{samples: ratios}
		_, _, _, rmin, rmax := rs.stats()
		ready.note = fmt.Sprintf("%.2f× the floor's median (run by run: median %.2f×, %.2f–%.2f×); the medians differ by %s ms",
			r, rs.p50(), rmin, rmax, num(ready.p50()-floor.p50()))
		if !*start.pass {
			misses = append(misses, start.name)
		}
		if !*ready.pass {
			misses = append(misses, ready.name)
			ready.why = fmt.Sprintf("hub's part (%s ms in this run) does not grow with the repository. Timestamping the shim's steps "+
				"once (not in this run) put it at about 20 ms: admitting the job (about 2 ms), starting the job's own `hub shim` "+
				"process (about 9 ms: exec and the Go runtime), opening the store and recording the shim (about 5 ms), and a "+
				"`git worktree add` a few ms slower than the bare one. Against a %s ms floor that is more than 1.2× allows; at "+
				"5,000 files and more the same cost is lost in the floor's spread. The shim is a process of its own by design: the "+
				"job keeps running, and its record keeps being written, when the daemon dies", num(ready.p50()-floor.p50()), num(floor.p50()))
		}
		sec.figs = append(sec.figs, start, ready, floor)
		if isoOK {
			ri := iso.p50() / floor.p50()
			iso.pass = boolp(ri <= 1.2)
			iso.note = fmt.Sprintf("%.2f× the floor's median; %.2f× the worktree level's", ri, iso.p50()/ready.p50())
			if !*iso.pass {
				misses = append(misses, iso.name)
				iso.why = fmt.Sprintf("the same fixed part as at worktree (%s ms over the floor in this run): the job's own shim process "+
					"and its store, not the checkout. The private checkout itself takes no lock on the repository and is made as "+
					"fast as a bare `git worktree add` (the Go benchmarks below put it at 1.0× one)", num(iso.p50()-floor.p50()))
			}
			sec.figs = append(sec.figs, iso)
		}
		g := group{Label: label}
		for _, f := range []*figure{ready, floor} {
			_, _, _, lo, hi := f.stats()
			series := "hub: start → worker running"
			if f == floor {
				series = "floor: git worktree add"
			}
			g.Bars = append(g.Bars, bar{Series: series, P50: f.p50(), Lo: lo, Hi: hi})
		}
		groups = append(groups, g)
	}
	if len(misses) > 0 {
		sec.notes = append(sec.notes, "missed: "+strings.Join(misses, "; ")+" (see below)")
	}
	sec.plots = []plot{{file: "readiness.svg", alt: "start → worker running against a bare git worktree add, by repository size",
		c: chart{Title: "Start → worker running, against the floor (median, whiskers min–max)", Unit: "ms", Log: true, Groups: groups}}}
	sec.how = `**start latency** is the client's round trip for ` + "`job/start`" + ` through the daemon's unix socket. Validation
opens the repository and resolves the base in-process with go-git; no git process runs before the answer.
**start → worker running** is the job's ` + "`created_at`" + ` to ` + "`running_at`" + ` in the store (millisecond stamps): admission,
spawning the shim, ` + "`git worktree add`" + ` and a copy of its index for hub, the dirty check of the user's checkout (in
parallel), the state change. At **isolated** the checkout is private instead (a git dir of the job's own borrowing the
user's objects, checked out with hub's index, no lock on the repository); the worker's sandbox is not counted. The
**floor** is a bare ` + "`git worktree add -b`" + ` of the same repository at the same commit, timed in the same loop, hub's
run and the floor's alternating which goes first. The repositories have 50 Go files a directory, about 400 bytes
each, in one commit; each run's worktree and branch are removed before the next.`
	return sec, nil
}

// thousands is n with thousands separators: 50000 → "50,000".
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
