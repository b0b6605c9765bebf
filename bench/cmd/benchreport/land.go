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

// forecastBranches is how many branches one measured forecast round holds.
const forecastBranches = 10

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
	lf, err := landFigures(ctx, e, e.repos[100])
	if err != nil {
		return nil, err
	}
	return &section{title: "11. Forecast and landing", figs: append(figs, lf...),
		how: `**Forecast**, on the 5,000-file repository: ten branches off main, ten files changed on each, the first two
sharing one file changed on the same line (one conflicting pair among 45). hub's forecast of them is what a
daemon round does for ended jobs, with the same calls (package gitx): the files each branch touched since the
base (` + "`git diff-tree`" + `, once per branch), the overlap check for every pair, and ` + "`git merge-tree`" + ` only for the pairs
that overlap, reading and writing through a scratch object store so nothing lands in the repository; the
figure is the round's time divided by the pairs. Its floor is a bare ` + "`git merge-tree --write-tree`" + ` of every pair,
divided the same way. One conflicting pair alone, nothing cached, is shown too. **Snapshot**: a running job's
work tree, ten files changed and nothing committed, one more changed before each run (the worker at work),
recorded as a commit in the scratch store as a round does (the store and the job's scratch index kept from
the round before, ` + "`git add -A`" + `, write-tree, commit-tree), against a bare ` + "`git status --porcelain`" + ` of the same work
tree, the least anyone runs to see what a work tree changed. **Landing**, on the 100-file repository: ten exec
jobs, each adding a file, with a verify that checks it, are started and waited for; then ` + "`job/land`" + ` lands
them on main in one call: each merged onto main's tip without a checkout, its verify run on that commit in a
clean checkout of it set up as the job's verify was, and only then main moved. The floors are the same ten
branches merged one by one with ` + "`git merge --no-ff`" + ` into a worktree at the same base: each verify run in a clean
` + "`git worktree add`" + ` of the merge (the same guarantee as hub's), or in place after its merge (what a hurried
person does: cheaper, but a check can pass on what an earlier one left behind). A clean checkout is most of
a check's cost on a big repository: here ` + "`git worktree add`" + ` of the 5,000-file repository takes seconds (section 2),
as each job's own verify does. hub and the floors alternate which goes first.`}, nil
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
	// Ten branches of ten files each; the first two share one file, on the same line.
	var tips []string
	for k := 0; k < forecastBranches; k++ {
		files := make([]int, 10)
		for f := range files {
			files[f] = 500*k + 50*f
		}
		if k == 1 {
			files[0] = 450 // the first branch's last file
		}
		tip, err := edit(fmt.Sprintf("bench-f%d", k), fmt.Sprintf("w%d", k), files)
		if err != nil {
			return nil, err
		}
		tips = append(tips, tip)
	}
	if _, err := gitOut(repo, "switch", "-q", "main"); err != nil {
		return nil, err
	}
	pairs := forecastBranches * (forecastBranches - 1) / 2
	pairFig := &figure{name: fmt.Sprintf("forecast of %d branches, per pair (%d pairs, one conflicting; 5,000 files)", forecastBranches, pairs), unit: "ms", target: "≤ 1× a bare git merge-tree per pair"}
	bareFig := &figure{name: "floor: bare `git merge-tree --write-tree`, per pair", unit: "ms"}
	conflictFig := &figure{name: "forecast of one pair that conflicts, from nothing cached", unit: "ms"}
	snapFig := &figure{name: "snapshot of a running job's work tree (5,000 files, 10 changed)", unit: "ms", target: "≤ 3× a bare git status"}
	statusFig := &figure{name: "floor: bare `git status --porcelain` of that work tree", unit: "ms"}
	scratch := func(i int) *gitx.Scratch {
		return &gitx.Scratch{Repo: r, Dir: filepath.Join(e.work, fmt.Sprintf("scratch-%d", i))}
	}
	// What a round does for ended jobs: each one's touched files once,
	// then a merge only for the pairs whose files overlap.
	forecast := func(sc *gitx.Scratch, tips []string) (int, error) {
		touched := make([][]string, len(tips))
		for k, tip := range tips {
			t, err := sc.Touched(ctx, base, tip)
			if err != nil {
				return 0, err
			}
			touched[k] = t
		}
		conflicting := 0
		for x := range tips {
			for y := x + 1; y < len(tips); y++ {
				if !gitx.Overlap(touched[x], touched[y]) {
					continue
				}
				files, err := sc.Conflicts(ctx, tips[x], tips[y])
				if err != nil {
					return 0, err
				}
				if len(files) > 0 {
					conflicting++
				}
			}
		}
		return conflicting, nil
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
		var pf, bf, cf, sf, gf float64
		sc := scratch(i + 1)
		if err := os.WriteFile(filepath.Join(wt, "d0060", "f03000.go"), []byte(fmt.Sprintf("package x\n// run %d\n", i)), 0o644); err != nil {
			return nil, err
		}
		if err := pair(i, func() error {
			t0 := time.Now()
			n, err := forecast(sc, tips)
			pf = ms(time.Since(t0)) / float64(pairs)
			if err == nil && n != 1 {
				err = fmt.Errorf("the forecast saw %d conflicting pairs; there is one", n)
			}
			return err
		}, func() error {
			t0 := time.Now()
			for x := range tips {
				for y := x + 1; y < len(tips); y++ {
					_, err := gitOut(repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", tips[x], tips[y])
					if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
						return err
					}
				}
			}
			bf = ms(time.Since(t0)) / float64(pairs)
			return nil
		}); err != nil {
			return nil, err
		}
		one := scratch(-2 - i)
		t0 := time.Now()
		if n, err := forecast(one, tips[:2]); err != nil || n != 1 {
			return nil, fmt.Errorf("the conflicting pair: %d %v", n, err)
		}
		cf = ms(time.Since(t0))
		_ = one.Remove()
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
		conflictFig.samples = append(conflictFig.samples, cf)
		snapFig.samples = append(snapFig.samples, sf)
		statusFig.samples = append(statusFig.samples, gf)
	}
	_ = co.Remove(ctx)
	_ = snapSc.Remove()
	pr := pairFig.p50() / bareFig.p50()
	pairFig.pass = boolp(pr <= 1)
	pairFig.note = fmt.Sprintf("%.2f× a bare merge-tree per pair: each branch's files are read once, and only overlapping pairs are merged", pr)
	conflictFig.note = fmt.Sprintf("%.1f× one bare merge-tree: two diff-trees and the merge, three git processes for one", conflictFig.p50()/bareFig.p50())
	sr := snapFig.p50() / statusFig.p50()
	snapFig.pass = boolp(sr <= 3)
	snapFig.note = fmt.Sprintf("%.2f× the bare git status (it runs four git commands to status's one: the survey of nested repositories, add, write-tree, commit-tree); a running job is snapshot at most every 2 s, and no more often than twenty times what its last snapshot took", sr)
	return []*figure{pairFig, bareFig, conflictFig, snapFig, statusFig}, nil
}

func landFigures(ctx context.Context, e *env, repo string) ([]*figure, error) {
	runs := min(e.runs, 5)
	hubFig := &figure{name: fmt.Sprintf("`job/land` of %d jobs, each verified on its integrated commit (100 files)", landJobs), unit: "ms",
		target: "≤ 1.5× sequential merge + verify in a clean checkout"}
	cleanFig := &figure{name: fmt.Sprintf("floor: %d sequential `git merge --no-ff`, each verified in a clean `git worktree add` of the result", landJobs), unit: "ms"}
	placeFig := &figure{name: fmt.Sprintf("floor: %d sequential `git merge --no-ff` + verify in place, in one worktree", landJobs), unit: "ms"}
	floor := filepath.Join(e.work, "land-floor")
	if _, err := gitOut(repo, "worktree", "add", "-q", "--detach", floor, "main"); err != nil {
		return nil, err
	}
	merge := func(base string, branches, verifies []string, clean bool) (float64, error) {
		if _, err := gitOut(floor, "checkout", "-q", "--detach", base); err != nil {
			return 0, err
		}
		t0 := time.Now()
		for k, br := range branches {
			if _, err := gitOut(floor, "merge", "--no-ff", "--no-edit", "-q", br); err != nil {
				return 0, err
			}
			dir := floor
			if clean {
				dir = filepath.Join(e.work, "land-check")
				if _, err := gitOut(floor, "worktree", "add", "-q", "--detach", dir, "HEAD"); err != nil {
					return 0, err
				}
			}
			cmd := exec.Command("sh", "-c", verifies[k])
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if clean {
				if _, rerr := gitOut(floor, "worktree", "remove", "--force", dir); rerr != nil && err == nil {
					err = rerr
				}
			}
			if err != nil {
				return 0, fmt.Errorf("floor verify: %v %s", err, out)
			}
		}
		return ms(time.Since(t0)), nil
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
		var hf, cf, pf float64
		if err := pair(i, func() error {
			t0 := time.Now()
			res, err := e.c.Daemon().JobLand(ctx, protocol.LandParams{IDs: ids, Into: "main"})
			if err != nil {
				return err
			}
			hf = ms(time.Since(t0))
			for _, it := range res.Jobs {
				if it.Outcome != protocol.LandLanded {
					return fmt.Errorf("job %s did not land: %s %s", it.ID, it.Outcome, it.Reason)
				}
			}
			return nil
		}, func() (err error) {
			if cf, err = merge(base, branches, verifies, true); err != nil {
				return err
			}
			pf, err = merge(base, branches, verifies, false)
			return err
		}); err != nil {
			return nil, err
		}
		hubFig.samples = append(hubFig.samples, hf)
		cleanFig.samples = append(cleanFig.samples, cf)
		placeFig.samples = append(placeFig.samples, pf)
		if err := e.cleanup(ctx, ids...); err != nil {
			return nil, err
		}
	}
	_, _ = gitOut(repo, "worktree", "remove", "--force", floor)
	r := hubFig.p50() / cleanFig.p50()
	hubFig.pass = boolp(r <= 1.5)
	hubFig.why = "each check makes a private checkout (its own git dir, the repository's settings copied) and reads the job's settings and manifests before it runs, and around each merge hub checks the target's tip and the user's checkout and moves them, about six git commands a job the floor does not run"
	hubFig.note = fmt.Sprintf("%.2f× merging and checking each in a clean checkout by hand, %.1f× merging and checking in place (no clean checkout: a check can pass on what an earlier one left); %.0f ms a job",
		r, hubFig.p50()/placeFig.p50(), hubFig.p50()/landJobs)
	return []*figure{hubFig, cleanFig, placeFig}, nil
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
