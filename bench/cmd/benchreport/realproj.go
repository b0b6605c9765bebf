package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/protocol"
)

// realSubject is the project the section measures: the biggest of the
// subjects scripts/subjects.sh fetches (object-inspect, whose tests pull in
// 500+ packages).
const realSubject = "object-inspect"

// subjectsDir fetches the real projects (once; later runs reuse them) and
// returns their folder.
func subjectsDir(root string) (string, error) {
	cmd := exec.Command(filepath.Join(root, "scripts", "subjects.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/subjects.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// realProjectSection times start → worker running with the dependencies in
// place on a real npm project, against the floor a user without hub pays
// for the same: `git worktree add` and the project's install from the
// lockfile with a warm npm cache. Then the second job of the same lockfile
// against the first, from a checkout with nothing installed: the first
// installs, the second copies from hub's cache.
func realProjectSection(ctx context.Context, e *env) (*section, error) {
	if e.subjects == "" {
		return nil, fmt.Errorf("no subjects folder")
	}
	src := filepath.Join(e.subjects, realSubject)
	installed, err := userCheckout(src, filepath.Join(e.work, "real-installed"), true)
	if err != nil {
		return nil, err
	}
	bare, err := userCheckout(src, filepath.Join(e.work, "real-bare"), false)
	if err != nil {
		return nil, err
	}
	runs := max(3, e.runs/5) // a floor run is an install: tens of seconds
	label := realSubject + " (npm, 535 packages)"
	first := &figure{name: "first job, node_modules copied from your checkout, " + label, unit: "ms"}
	next := &figure{name: "next job, a ready copy from hub's cache, " + label, unit: "ms", target: "≤ 0.15× floor"}
	floor := &figure{name: "floor: `git worktree add` + `npm ci --prefer-offline` (warm npm cache), " + label, unit: "ms"}
	cp := &figure{name: "reference: `cp -a` of the checkout's node_modules", unit: "ms"}
	installs := &figure{name: "first job from a checkout with nothing installed (hub runs `npm ci`), " + label, unit: "ms"}
	second := &figure{name: "second job of the same lockfile (a ready copy from hub's cache), " + label, unit: "ms", target: "≤ 0.15× the first"}
	verifyFirst := &figure{name: "verify's overhead, first job of the lockfile (waits for hub's own install of the base for its cache), " + label, unit: "ms"}
	verifyNext := &figure{name: "verify's overhead, second job (the base's tree, a ready copy from hub's cache), " + label, unit: "ms"}
	var ratios, ratios2, ratiosFirst []float64
	// readyOf runs one job and returns start → running; it waits for the
	// job's shim to exit, so the cache fill it does in the background is
	// done before anything else is timed.
	// With a verify command, it also returns verify's overhead: from
	// verifying to the job's end, less the command's own run (verify's
	// clean checkout of the head and its dependencies).
	readyOf := func(repo, verify string) (ready, overhead float64, err error) {
		id, err := e.startJob(ctx, protocol.StartParams{Task: "bench", Repo: repo, Engine: "exec", Exec: "test -d node_modules/tape && echo ready > bench.txt", Verify: verify})
		if err != nil {
			return 0, 0, err
		}
		if err := e.waitAll(ctx, []string{id}); err != nil {
			return 0, 0, err
		}
		j, err := e.st.Job(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		if j.RunningAt.IsZero() {
			return 0, 0, fmt.Errorf("job %s has no running time", id)
		}
		if verify != "" {
			var v protocol.Verify
			if err := json.Unmarshal(j.Verify, &v); err != nil || v.ExitCode != 0 || j.VerifyingAt.IsZero() {
				return 0, 0, fmt.Errorf("job %s: verify did not pass: %s %v", id, j.Verify, err)
			}
			overhead = ms(j.EndedAt.Sub(j.VerifyingAt)) - float64(v.DurationMS)
		}
		if err := waitFree(ctx, e.paths.ShimLock(id)); err != nil {
			return 0, 0, err
		}
		return ms(j.RunningAt.Sub(j.CreatedAt)), overhead, e.cleanup(ctx, id)
	}
	for i := -1; i < runs; i++ {
		var a, b, f, c, x, y, vx, vy float64
		hubRun := func() (err error) {
			if err := os.RemoveAll(e.paths.EnvsDir()); err != nil {
				return err
			}
			if a, _, err = readyOf(installed, ""); err != nil {
				return err
			}
			b, _, err = readyOf(installed, "")
			return err
		}
		floorRun := func() error {
			name := fmt.Sprintf("floor-real-%d", i+1)
			dir := filepath.Join(e.work, name)
			t0 := time.Now()
			if b, err := exec.Command("git", "-C", installed, "worktree", "add", "-q", "-b", name, dir, "HEAD").CombinedOutput(); err != nil {
				return fmt.Errorf("worktree add: %v %s", err, b)
			}
			cmd := exec.Command("npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error")
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("npm ci: %v %s", err, b)
			}
			f = ms(time.Since(t0))
			_ = os.RemoveAll(filepath.Join(dir, "node_modules"))
			t0 = time.Now()
			if b, err := exec.Command("cp", "-a", filepath.Join(installed, "node_modules"), dir).CombinedOutput(); err != nil {
				return fmt.Errorf("cp -a: %v %s", err, b)
			}
			c = ms(time.Since(t0))
			if b, err := exec.Command("git", "-C", installed, "worktree", "remove", "--force", dir).CombinedOutput(); err != nil {
				return fmt.Errorf("worktree remove: %v %s", err, b)
			}
			_, _ = exec.Command("git", "-C", installed, "branch", "-q", "-D", name).CombinedOutput()
			return nil
		}
		if err := pair(i, hubRun, floorRun); err != nil {
			return nil, err
		}
		// From a checkout with nothing installed: the first job installs,
		// the second takes a ready copy.
		if err := os.RemoveAll(e.paths.EnvsDir()); err != nil {
			return nil, err
		}
		var err error
		const check = "test -d node_modules/tape"
		if x, vx, err = readyOf(bare, check); err != nil {
			return nil, err
		}
		if y, vy, err = readyOf(bare, check); err != nil {
			return nil, err
		}
		if i < 0 {
			continue
		}
		first.samples = append(first.samples, a)
		next.samples = append(next.samples, b)
		floor.samples = append(floor.samples, f)
		cp.samples = append(cp.samples, c)
		installs.samples = append(installs.samples, x)
		second.samples = append(second.samples, y)
		verifyFirst.samples = append(verifyFirst.samples, vx)
		verifyNext.samples = append(verifyNext.samples, vy)
		ratios = append(ratios, b/f)
		ratiosFirst = append(ratiosFirst, a/f)
		ratios2 = append(ratios2, y/x)
	}
	var notes []string
	judge := func(f *figure, against *figure, rs []float64, goal float64, of string) {
		r := f.p50() / against.p50()
		rf := &figure{samples: rs}
		_, _, _, lo, hi := rf.stats()
		f.note = fmt.Sprintf("%.3f× %s median (run by run: median %.3f×, %.3f–%.3f×)", r, of, rf.p50(), lo, hi)
		if goal > 0 {
			f.pass = boolp(r <= goal)
			if !*f.pass {
				notes = append(notes, "missed: "+f.name)
			}
		}
	}
	judge(next, floor, ratios, 0.15, "the floor's")
	judge(first, floor, ratiosFirst, 0, "the floor's")
	judge(second, installs, ratios2, 0.15, "the first job's")
	first.note += fmt.Sprintf("; `cp -a` of the same tree takes %s ms here (%.2f× the floor): creating 24,000 files is what costs, on this disk",
		num(cp.p50()), cp.p50()/floor.p50())
	groupOf := func(label string, figs ...*figure) group {
		g := group{Label: label}
		for _, f := range figs {
			_, _, _, lo, hi := f.stats()
			series := map[*figure]string{first: "first job", next: "next job (ready copy)", floor: "floor: worktree add + npm ci",
				installs: "first job (installs)", second: "second job (ready copy)"}[f]
			g.Bars = append(g.Bars, bar{Series: series, P50: f.p50(), Lo: lo, Hi: hi})
		}
		return g
	}
	return &section{title: "10. Readiness on real projects", figs: []*figure{next, first, floor, cp, installs, second, verifyFirst, verifyNext}, notes: notes,
		plots: []plot{{file: "readiness-real.svg", alt: "start → worker running with dependencies on a real npm project, against worktree add + npm ci",
			c: chart{Title: "Start → worker running with dependencies, " + realSubject + " (median, whiskers min–max)", Unit: "ms", Log: true,
				Groups: []group{groupOf("checkout installed", first, next, floor), groupOf("nothing installed", installs, second)}}}},
		how: fmt.Sprintf(`The project is %s@1.13.4 as npm publishes it (its tests included), fetched by scripts/subjects.sh with its
lockfile; its tests need 535 packages (146 MB of node_modules, about 24,000 files). Each figure is a job's `+"`created_at`"+`
to `+"`running_at`"+` in the store, its worker a one-line check that `+"`node_modules/tape`"+` is there. **Checkout installed**: a
user's checkout with its node_modules installed; hub's cache is emptied, then the first job copies node_modules from the
checkout (its package.json and lockfile are the base's; files copied by several workers at once, never linked) and, in
the background once its worker runs, keeps a copy of the checkout's tree (never of the job's) in HUB_HOME/envs,
read-only, with two ready copies; the next job takes a ready copy whole by a rename. Each job's shim is let finish its background copies before the next figure is timed. The
floor is what a user without hub does for a new worktree: `+"`git worktree add`"+` and `+"`npm ci --prefer-offline`"+` with
the npm cache warm (the same cache hub's installs use), timed in the same loop, the two alternating which goes first;
`+"`cp -a`"+` of the checkout's tree is timed beside it. **Nothing installed**: a checkout with no node_modules; the first job
installs (`+"`npm ci`"+` in its worktree; hub installs the base again in a private checkout of its own, in the background,
for its cache), the second of the same lockfile takes a ready copy. Both run verify (`+"`"+`test -d node_modules/tape`+"`"+`):
its overhead is the time from verifying to the job's end less the command's own run — a clean checkout of the head and
its dependencies, the base's, from hub's cache (the first job's verify waits for hub's own install to fill it). %d runs each after one
warm-up; ext4 here, so copies are copies (on btrfs or XFS copy_file_range shares the blocks).`, realSubject, runs)}, nil
}

// waitFree returns once nobody holds the lock file at p (the process that
// did has exited).
func waitFree(ctx context.Context, p string) error {
	l := flock.New(p)
	ok, err := l.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("%s is still held: %v", p, err)
	}
	return l.Unlock()
}

// userCheckout makes a user's checkout of subject src at dir: its source
// committed, node_modules/ ignored, and, when installed, its dependencies
// installed as the subject's install left them.
func userCheckout(src, dir string, installed bool) (string, error) {
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "src"), dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy %s: %v %s", src, err, b)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\ncoverage/\n.nyc_output/\n"), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "published"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v %s", args, err, b)
		}
	}
	if installed {
		if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
			return "", fmt.Errorf("copy node_modules: %v %s", err, b)
		}
	}
	return dir, nil
}
