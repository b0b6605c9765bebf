package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
	hub := &figure{name: "start → worker running, dependencies copied from your checkout, " + label, unit: "ms", target: "≤ 0.15× floor"}
	floor := &figure{name: "floor: `git worktree add` + `npm ci --prefer-offline` (warm npm cache), " + label, unit: "ms"}
	first := &figure{name: "first job of a lockfile (hub installs: `npm ci`, then keeps the tree), " + label, unit: "ms"}
	second := &figure{name: "second job of the same lockfile (from hub's cache), " + label, unit: "ms", target: "≤ 0.15× the first"}
	var ratios, ratios2 []float64
	readyOf := func(repo string) (float64, string, error) {
		id, err := e.startJob(ctx, protocol.StartParams{Task: "bench", Repo: repo, Engine: "exec", Exec: "test -d node_modules/tape"})
		if err != nil {
			return 0, "", err
		}
		if err := e.waitAll(ctx, []string{id}); err != nil {
			return 0, "", err
		}
		j, err := e.st.Job(ctx, id)
		if err != nil {
			return 0, "", err
		}
		if j.RunningAt.IsZero() {
			return 0, "", fmt.Errorf("job %s has no running time", id)
		}
		return ms(j.RunningAt.Sub(j.CreatedAt)), id, e.cleanup(ctx, id)
	}
	for i := -1; i < runs; i++ {
		var h, f float64
		hubRun := func() (err error) { h, _, err = readyOf(installed); return err }
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
			if b, err := exec.Command("git", "-C", installed, "worktree", "remove", "--force", dir).CombinedOutput(); err != nil {
				return fmt.Errorf("worktree remove: %v %s", err, b)
			}
			_, _ = exec.Command("git", "-C", installed, "branch", "-q", "-D", name).CombinedOutput()
			return nil
		}
		if err := pair(i, hubRun, floorRun); err != nil {
			return nil, err
		}
		// The first job of the lockfile from a checkout with nothing
		// installed (the cache emptied before it), then the second.
		if err := os.RemoveAll(e.paths.EnvsDir()); err != nil {
			return nil, err
		}
		a, _, err := readyOf(bare)
		if err != nil {
			return nil, err
		}
		b, _, err := readyOf(bare)
		if err != nil {
			return nil, err
		}
		if i < 0 {
			continue
		}
		hub.samples = append(hub.samples, h)
		floor.samples = append(floor.samples, f)
		first.samples = append(first.samples, a)
		second.samples = append(second.samples, b)
		ratios = append(ratios, h/f)
		ratios2 = append(ratios2, b/a)
	}
	r := hub.p50() / floor.p50()
	hub.pass = boolp(r <= 0.15)
	rs := &figure{samples: ratios}
	_, _, _, lo, hi := rs.stats()
	hub.note = fmt.Sprintf("%.3f× the floor's median (run by run: median %.3f×, %.3f–%.3f×)", r, rs.p50(), lo, hi)
	r2 := second.p50() / first.p50()
	second.pass = boolp(r2 <= 0.15)
	rs2 := &figure{samples: ratios2}
	_, _, _, lo2, hi2 := rs2.stats()
	second.note = fmt.Sprintf("%.3f× the first job's median (run by run: median %.3f×, %.3f–%.3f×)", r2, rs2.p50(), lo2, hi2)
	var notes []string
	if !*hub.pass {
		notes = append(notes, "missed: "+hub.name)
	}
	if !*second.pass {
		notes = append(notes, "missed: "+second.name)
	}
	groupOf := func(label string, figs ...*figure) group {
		g := group{Label: label}
		for _, f := range figs {
			_, _, _, lo, hi := f.stats()
			series := "hub"
			if f == floor {
				series = "floor: worktree add + npm ci"
			} else if f == first {
				series = "first job (installs)"
			}
			g.Bars = append(g.Bars, bar{Series: series, P50: f.p50(), Lo: lo, Hi: hi})
		}
		return g
	}
	return &section{title: "10. Readiness on real projects", figs: []*figure{hub, floor, first, second}, notes: notes,
		plots: []plot{{file: "readiness-real.svg", alt: "start → worker running with dependencies on a real npm project, against worktree add + npm ci",
			c: chart{Title: "Start → worker running with dependencies, " + realSubject + " (median, whiskers min–max)", Unit: "ms", Log: true,
				Groups: []group{groupOf("from your checkout", hub, floor), groupOf("from hub's cache", second, first)}}}},
		how: fmt.Sprintf(`The project is %s@1.13.4 as npm publishes it (its tests included), fetched by scripts/subjects.sh with its
lockfile; its tests need 535 packages (146 MB of node_modules). **From your checkout**: a user's checkout with those
installed; hub's figure is a job's `+"`created_at`"+` to `+"`running_at`"+` (a worktree, then node_modules copied from the
checkout, whose package.json and lockfile are the base's: about 24,000 files, copied by several workers at once, no
links). The floor is what a user without hub does for a new worktree: `+"`git worktree add`"+` and `+"`npm ci --prefer-offline`"+`
with the npm cache warm (the same cache hub's installs use), timed in the same loop, the two alternating which goes
first. **From hub's cache**: a checkout with nothing installed; before each pair hub's cache is emptied, the first job
installs (`+"`npm ci`"+` in its worktree, then the tree is copied into HUB_HOME/envs), and the second job of the same
lockfile gets a copy from the cache. %d runs each after one warm-up; ext4 here, so copies are copies (on btrfs or XFS
copy_file_range shares the blocks).`, realSubject, runs)}, nil
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
