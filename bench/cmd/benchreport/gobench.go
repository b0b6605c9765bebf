package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// goBenches are Go benchmarks (testing.B, in their packages' tests) read
// as ratios: each against its floor, run in the same process.
var goBenches = []struct {
	pkg, bench, floor string
	name, floorName   string
}{
	{"./hub/store", "Reservation", "AppendEvent",
		"store: a reservation booked and closed", "floor: one journal event appended"},
	{"./hub/redact", "String", "StringReplacer",
		"redact 1 MiB of output (20 known values and the secret formats)", "floor: a bare strings.Replacer of the 20 values"},
	// What the git boundary costs (2,000 files; 10 rewritten and one added).
	{"./hub/gitx", "CommitLinked", "CommitAll",
		"git boundary: hub's commit at worktree (pinned paths, its own index, the worker's git state put back)",
		"floor: `git add -A` + `git commit` in the worktree (hub's commit before the boundary)"},
	{"./hub/gitx", "CommitPrivate", "CommitAll",
		"git boundary: hub's commit at isolated (the worker's own commit copied in and checked, then as above)",
		"floor: `git add -A` + `git commit` in the worktree"},
	{"./hub/gitx", "CheckoutLinked", "WorktreeAdd",
		"git boundary: a linked checkout (`git worktree add` and hub's index)", "floor: a bare `git worktree add -b`"},
	{"./hub/gitx", "CheckoutPrivate", "WorktreeAdd",
		"git boundary: a private checkout (own git dir, the user's objects as an alternate, checked out with hub's index)",
		"floor: a bare `git worktree add -b`"},
}

// goBenchSection runs them with `go test -bench` and reads ns/op.
func goBenchSection(ctx context.Context, e *env) (*section, error) {
	count := max(3, e.runs/3)
	sec := &section{title: "9. Go benchmarks"}
	for _, g := range goBenches {
		re := fmt.Sprintf("^Benchmark(%s|%s)$", g.bench, g.floor)
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", re, "-benchtime", "0.5s", "-count", fmt.Sprint(count), g.pkg)
		cmd.Dir = e.root
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go test -bench %s %s: %v\n%s", re, g.pkg, err, out)
		}
		ns, err := parseBench(string(out))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.pkg, err)
		}
		if len(ns[g.bench]) == 0 || len(ns[g.floor]) == 0 {
			return nil, fmt.Errorf("%s: no result for %s or %s in:\n%s", g.pkg, g.bench, g.floor, out)
		}
		f := &figure{name: g.name, unit: "µs"}
		fl := &figure{name: g.floorName, unit: "µs"}
		for _, v := range ns[g.bench] {
			f.samples = append(f.samples, v/1000)
		}
		for _, v := range ns[g.floor] {
			fl.samples = append(fl.samples, v/1000)
		}
		f.note = fmt.Sprintf("%.1f× its floor", f.p50()/fl.p50())
		sec.figs = append(sec.figs, f, fl)
	}
	sec.how = fmt.Sprintf("`go test -run '^$' -bench … -benchtime 0.5s -count %d` on each package; each figure is the ns/op of the %d counts, "+
		"and the ratio is of the medians. The store's pair runs on a fresh hub.db in a temporary HUB_HOME with hub's own settings "+
		"(WAL, immediate transactions, synchronous writes): a reservation is four transactions (create, admit, run, finish). "+
		"The redactor's input is test-runner output with a key-shaped line every 500 lines. The git pairs run on a repository of "+
		"2,000 files of about 400 bytes in 40 folders, one commit; a commit's change rewrites 10 files and adds one, and the "+
		"floor is the commit hub made before the git boundary (through the worktree's own .git).", count, count)
	return sec, nil
}

// parseBench reads `go test -bench` output: benchmark name (without
// "Benchmark" and the -N suffix) → ns/op of each count.
func parseBench(out string) (map[string][]float64, error) {
	res := map[string][]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 2; i+1 < len(f); i++ {
			if f[i+1] != "ns/op" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bad ns/op in %q", sc.Text())
			}
			name := strings.TrimPrefix(f[0], "Benchmark")
			if j := strings.LastIndex(name, "-"); j > 0 {
				name = name[:j]
			}
			res[name] = append(res[name], v)
		}
	}
	return res, sc.Err()
}
