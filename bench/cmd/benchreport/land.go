package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
)

// landJobs is how many jobs one measured landing takes.
const landJobs = 10

// landSection: what a conflict forecast costs per pair of branches against
// a bare git merge-tree, what a snapshot of a running job's work tree costs
// against a bare git status, and landing ten jobs (each checked on its
// integrated commit) against ten sequential git merge + verify.
func landSection(ctx context.Context, e *env) (*section, error) {
	repo := e.repos[5000]
	figs, err := forecastFigures(ctx, e, repo)
	if err != nil {
		return nil, err
	}
	lf, err := landFigures(ctx, e, repo)
	if err != nil {
		return nil, err
	}
	return &section{title: "11. Forecast and landing", figs: append(figs, lf...),
		how: `On the 5,000-file repository. **Forecast per pair**: two branches off main, ten files changed each, one file
changed on the same line by both (a conflict); hub's forecast of the pair is what the daemon does for two ended jobs
(package gitx, the same calls): the files each touched since the base (git diff-tree), the overlap check, and git
merge-tree only when they overlap, reading and writing through a scratch object store so nothing lands in the
repository. Its floor is a bare ` + "`git merge-tree --write-tree`" + ` of the same pair. A pair that touches different files skips
the merge altogether. **Snapshot**: a running job's work tree, ten files changed and nothing committed, one more
changed before each run (the worker at work), recorded as a commit in the scratch store as the daemon does each
round (the store and the job's scratch index kept from the round before, ` + "`git add -A`" + `, write-tree, commit-tree), against a bare
` + "`git status --porcelain`" + ` of the same work tree, the least anyone must run to see what a work tree changed. The pair forecasts use a
fresh scratch store each run, so nothing is cached. **Landing**: ten exec jobs, each adding a file, with a verify that checks it,
are started and waited for; then ` + "`job/land`" + ` lands them on main in one call: each merged onto main's tip without a
checkout, its verify run on that commit in a clean checkout of it, and only then main moved. The floor is the
same ten branches merged one by one with ` + "`git merge --no-ff`" + ` into a worktree at the same base, each verify run in
place after its merge: what a careful person does by hand, minus the clean checkout that keeps each check honest.
The two alternate which goes first.`}, nil
}

func forecastFigures(ctx context.Context, e *env, repo string) ([]*figure, error) {
	r, err := gitx.Open(repo)
	if err != nil {
		return nil, err
	}
	base, err := gitOut(repo, "rev-parse", "main")
	if err != nil {
		return nil, err
	}
	edit := func(branch, word string, files []int) (string, error) {
		if _, err := gitOut(repo, "switch", "-q", "-c", branch, base); err != nil {
			return "", err
		}
		for _, i := range files {
			p := filepath.Join(repo, fmt.Sprintf("d%04d", i/50), fmt.Sprintf("f%05d.go", i))
			b, err := os.ReadFile(p)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), "// F", "// "+word+" F", 1)), 0o644); err != nil {
				return "", err
			}
		}
		if _, err := gitOut(repo, "commit", "-qam", branch); err != nil {
			return "", err
		}
		return gitOut(repo, "rev-parse", "HEAD")
	}
	a, err := edit("bench-fa", "alpha", []int{0, 100, 200, 300, 400, 500, 600, 700, 800, 900})
	if err != nil {
		return nil, err
	}
	b, err := edit("bench-fb", "beta", []int{900, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900})
	if err != nil {
		return nil, err
	}
	c, err := edit("bench-fc", "gamma", []int{2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900})
	if err != nil {
		return nil, err
	}
	if _, err := gitOut(repo, "switch", "-q", "main"); err != nil {
		return nil, err
	}
	pairFig := &figure{name: "forecast of a pair of branches that conflict (5,000 files)", unit: "ms", target: "≤ 2× a bare git merge-tree"}
	apartFig := &figure{name: "forecast of a pair of branches that touch different files", unit: "ms"}
	bareFig := &figure{name: "floor: bare `git merge-tree --write-tree` of the pair", unit: "ms"}
	snapFig := &figure{name: "snapshot of a running job's work tree (5,000 files, 10 changed)", unit: "ms", target: "≤ 3× a bare git status"}
	statusFig := &figure{name: "floor: bare `git status --porcelain` of that work tree", unit: "ms"}
	scratch := func(i int) *gitx.Scratch {
		return &gitx.Scratch{Repo: r, Dir: filepath.Join(e.work, fmt.Sprintf("scratch-%d", i))}
	}
	forecast := func(sc *gitx.Scratch, x, y string) ([]string, error) {
		tx, err := sc.Touched(ctx, base, x)
		if err != nil {
			return nil, err
		}
		ty, err := sc.Touched(ctx, base, y)
		if err != nil || !gitx.Overlap(tx, ty) {
			return nil, err
		}
		return sc.Conflicts(ctx, x, y)
	}
	// A checkout as hub makes one for a running job, ten files changed.
	wt := filepath.Join(e.work, "forecast-wt")
	co, err := gitx.MakeCheckout(ctx, r, gitx.CheckoutOptions{Dir: wt, Index: filepath.Join(e.work, "forecast-wt.index"), Branch: "bench-running", Base: base})
	if err != nil {
		return nil, err
	}
	for i := 3000; i < 3010; i++ {
		p := filepath.Join(wt, fmt.Sprintf("d%04d", i/50), fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(p, []byte("package x\n// changed by a running job\n"), 0o644); err != nil {
			return nil, err
		}
	}
	// The daemon keeps a repository's store and each running job's index
	// from round to round: one warm-up snapshot, then each run changes a
	// file (the worker at work) and snapshots again.
	snapSc := scratch(-1)
	snapIdx := filepath.Join(snapSc.Dir, "index")
	if _, err := snapSc.Snapshot(ctx, co, base, snapIdx); err != nil {
		return nil, err
	}
	for i := -1; i < e.runs; i++ {
		var pf, bf, af, sf, gf float64
		sc := scratch(i + 1)
		if err := os.WriteFile(filepath.Join(wt, "d0060", "f03000.go"), []byte(fmt.Sprintf("package x\n// run %d\n", i)), 0o644); err != nil {
			return nil, err
		}
		if err := pair(i, func() error {
			t0 := time.Now()
			files, err := forecast(sc, a, b)
			pf = ms(time.Since(t0))
			if err == nil && len(files) != 1 {
				err = fmt.Errorf("the forecast saw conflicts in %v; the pair conflicts in one file", files)
			}
			return err
		}, func() error {
			t0 := time.Now()
			_, err := gitOut(repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", a, b)
			bf = ms(time.Since(t0))
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
				err = nil // the conflict, as expected
			}
			return err
		}); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if files, err := forecast(sc, a, c); err != nil || len(files) != 0 {
			return nil, fmt.Errorf("apart pair: %v %v", files, err)
		}
		af = ms(time.Since(t0))
		if err := pair(i, func() error {
			t0 := time.Now()
			_, err := snapSc.Snapshot(ctx, co, base, snapIdx)
			sf = ms(time.Since(t0))
			return err
		}, func() error {
			t0 := time.Now()
			_, err := gitOut(wt, "status", "--porcelain")
			gf = ms(time.Since(t0))
			return err
		}); err != nil {
			return nil, err
		}
		_ = sc.Remove()
		if i < 0 {
			continue
		}
		pairFig.samples = append(pairFig.samples, pf)
		bareFig.samples = append(bareFig.samples, bf)
		apartFig.samples = append(apartFig.samples, af)
		snapFig.samples = append(snapFig.samples, sf)
		statusFig.samples = append(statusFig.samples, gf)
	}
	_ = co.Remove(ctx)
	_ = snapSc.Remove()
	pr := pairFig.p50() / bareFig.p50()
	pairFig.pass = boolp(pr <= 2)
	pairFig.note = fmt.Sprintf("%.2f× the bare merge-tree", pr)
	apartFig.note = fmt.Sprintf("%.2f× the bare merge-tree: no merge is needed", apartFig.p50()/bareFig.p50())
	sr := snapFig.p50() / statusFig.p50()
	snapFig.pass = boolp(sr <= 3)
	snapFig.note = fmt.Sprintf("%.2f× the bare git status", sr)
	return []*figure{pairFig, bareFig, apartFig, snapFig, statusFig}, nil
}

func landFigures(ctx context.Context, e *env, repo string) ([]*figure, error) {
	runs := min(e.runs, 5)
	hubFig := &figure{name: fmt.Sprintf("`job/land` of %d jobs, each verified on its integrated commit", landJobs), unit: "ms", target: "≤ 4× sequential merge + verify"}
	floorFig := &figure{name: fmt.Sprintf("floor: %d sequential `git merge --no-ff` + verify in one worktree", landJobs), unit: "ms"}
	floor := filepath.Join(e.work, "land-floor")
	if _, err := gitOut(repo, "worktree", "add", "-q", "--detach", floor, "main"); err != nil {
		return nil, err
	}
	for i := 0; i < runs; i++ {
		base, err := gitOut(repo, "rev-parse", "main")
		if err != nil {
			return nil, err
		}
		var ids, branches, verifies []string
		for k := 0; k < landJobs; k++ {
			name := fmt.Sprintf("land-%d-%d.txt", i, k)
			v := "test -f " + name
			id, err := e.startJob(ctx, protocol.StartParams{Task: "bench: add " + name, Repo: repo, Engine: "exec", Exec: "echo x > " + name, Verify: v})
			if err != nil {
				return nil, err
			}
			ids, branches, verifies = append(ids, id), append(branches, "hub/"+id), append(verifies, v)
		}
		if err := e.waitAll(ctx, ids); err != nil {
			return nil, err
		}
		var hf, ff float64
		if err := pair(i, func() error {
			t0 := time.Now()
			var res protocol.LandResult
			if err := e.c.Call(ctx, protocol.MethodJobLand, protocol.LandParams{IDs: ids, Into: "main"}, &res); err != nil {
				return err
			}
			hf = ms(time.Since(t0))
			for _, it := range res.Jobs {
				if it.Outcome != protocol.LandLanded {
					return fmt.Errorf("job %s did not land: %s %s", it.ID, it.Outcome, it.Reason)
				}
			}
			return nil
		}, func() error {
			if _, err := gitOut(floor, "checkout", "-q", "--detach", base); err != nil {
				return err
			}
			t0 := time.Now()
			for k, br := range branches {
				if _, err := gitOut(floor, "merge", "--no-ff", "--no-edit", "-q", br); err != nil {
					return err
				}
				cmd := exec.Command("sh", "-c", verifies[k])
				cmd.Dir = floor
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("floor verify: %v %s", err, out)
				}
			}
			ff = ms(time.Since(t0))
			return nil
		}); err != nil {
			return nil, err
		}
		hubFig.samples = append(hubFig.samples, hf)
		floorFig.samples = append(floorFig.samples, ff)
		if err := e.cleanup(ctx, ids...); err != nil {
			return nil, err
		}
	}
	_, _ = gitOut(repo, "worktree", "remove", "--force", floor)
	r := hubFig.p50() / floorFig.p50()
	hubFig.pass = boolp(r <= 4)
	hubFig.note = fmt.Sprintf("%.1f× the floor, %.0f ms a job; the floor checks in place, hub in a clean checkout of each integrated commit", r, hubFig.p50()/landJobs)
	return []*figure{hubFig, floorFig}, nil
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
