// Command benchreport runs hub's benchmarks and rewrites docs/benchmarks.md
// and the plots in docs/benchmarks/.
//
//	go run ./bench/cmd/benchreport -out docs/benchmarks.md
//
// Every figure is measured in this one run, beside its floor or its
// alternative, on this machine: ratios, not absolute times, are what carry
// from one machine to another. Targets are checked and reported, never
// asserted: a missed target is written down with its cause.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

func main() {
	if os.Getenv(roleEnv) == "ledger" {
		os.Exit(ledgerWorker())
	}
	out := flag.String("out", "docs/benchmarks.md", "where to write the report; plots go to a folder named after it")
	runs := flag.Int("runs", 15, "repetitions per figure")
	quick := flag.Bool("quick", false, "fewer runs and no 50,000-file repo: to try the harness, not to publish")
	only := flag.String("only", "", "run only these sections (comma-separated: tokens,readiness,wake,cold,fleet,ledger,loop,gobench,realproj,land,remote)")
	flag.Parse()
	if *quick {
		*runs = 3
	}
	if err := run(*out, *runs, *quick, *only); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// figure is one measured quantity: its samples, and what they are held to.
type figure struct {
	name, unit string
	samples    []float64
	target     string // the budget, as the doc states it
	pass       *bool  // nil: no target
	note       string
	why        string // the cause, when the target is missed and the cause is known
}

func (f *figure) stats() (p50, p90, p99, min, max float64) {
	s := append([]float64(nil), f.samples...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	return q(0.5), q(0.9), q(0.99), s[0], s[len(s)-1]
}

func (f *figure) p50() float64 { p, _, _, _, _ := f.stats(); return p }
func (f *figure) p99() float64 { _, _, p, _, _ := f.stats(); return p }

// section is one numbered part of the report.
type section struct {
	title string
	figs  []*figure
	extra string   // markdown after the table (e.g. a second table)
	notes []string // bullets after the table
	how   string   // how it is measured
	plots []plot
}

// plot is a chart written next to the report.
type plot struct {
	file string // base name, e.g. "readiness.svg"
	alt  string
	c    chart
}

// env is what every section measures with: one daemon on a private
// HUB_HOME, one client of it, and the store it writes.
type env struct {
	work, bin string
	root      string // the repository's top, where the harness runs
	paths     config.Paths
	c         *client.Client
	st        *store.Store
	runs      int
	quick     bool
	repos     map[int]string // sample repositories by file count
	subjects  string         // the real projects scripts/subjects.sh fetched
	began     time.Time
}

func run(out string, runs int, quick bool, only string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "hub-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	e := &env{work: work, root: root, runs: runs, quick: quick, repos: map[int]string{}, began: time.Now()}
	e.bin = filepath.Join(work, "bin", "hub")
	if b, err := exec.Command("go", "build", "-o", e.bin, "./cmd/hub").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, b)
	}
	// The real projects, fetched (once) where the user's caches are, before
	// HOME moves into the scratch folder.
	if only == "" || slices.Contains(strings.Split(only, ","), "realproj") {
		step("fetching the real projects (scripts/subjects.sh)")
		if e.subjects, err = subjectsDir(root); err != nil {
			return err
		}
		// The daemon's installs and the floor's use the same warm npm cache.
		os.Setenv("NPM_CONFIG_CACHE", filepath.Join(e.subjects, "npm-cache"))
	}
	// Go's caches live under HOME by default; keep the real ones for the
	// `go test -bench` runs, which otherwise rebuild and re-download all.
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return fmt.Errorf("go env: %v", err)
	}
	for i, v := range strings.Split(strings.TrimSpace(string(goenv)), "\n") {
		os.Setenv([]string{"GOCACHE", "GOMODCACHE", "GOPATH"}[i], v)
	}
	home := filepath.Join(work, "home")
	for k, v := range map[string]string{"HUB_HOME": filepath.Join(work, "hubhome"), "HOME": home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM": "1", "HUB_MAX_RUNNING": "64",
		"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
		"PATH": filepath.Dir(e.bin) + ":" + os.Getenv("PATH")} {
		os.Setenv(k, v)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	if e.paths, err = config.Resolve(); err != nil {
		return err
	}
	sizes := []int{100, 5000, 50000}
	if quick {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		dir := filepath.Join(work, fmt.Sprintf("repo-%d", n))
		step("making a %d-file repository", n)
		if err := makeRepo(dir, n); err != nil {
			return err
		}
		e.repos[n] = dir
	}
	ctx := context.Background()
	// The daemon starts here, with nothing stored: its idle footprint is
	// read first, before any job has run.
	if e.c, err = client.Connect(ctx, e.paths, client.Options{AutoStart: true, HubBinary: e.bin, ClientName: "bench"}); err != nil {
		return err
	}
	defer func() {
		if e.c != nil {
			_, _ = e.c.Daemon().Shutdown(ctx, protocol.Empty{})
			e.c.Close()
		}
	}()
	if e.st, err = store.Open(e.paths.DB()); err != nil {
		return err
	}
	defer e.st.Close()

	var secs []*section
	for _, s := range []struct {
		key, name string
		fn        func(context.Context, *env) (*section, error)
	}{
		{"tokens", "supervisor tokens", tokensSection},
		{"readiness", "start and readiness", readinessSection},
		{"wake", "wake-up", wakeSection},
		{"cold", "cold start", coldSection},
		{"fleet", "footprint and scale", fleetSection},
		{"ledger", "ledger", ledgerSection},
		{"loop", "built-in worker", loopSection},
		{"gobench", "Go benchmarks", goBenchSection},
		{"realproj", "readiness on real projects", realProjectSection},
		{"land", "forecast and landing", landSection},
		{"remote", "remote queues", remoteSection},
	} {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.key) {
			continue
		}
		step("%s", s.name)
		t0 := time.Now()
		sec, err := s.fn(ctx, e)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		step("%s: done in %s", s.name, time.Since(t0).Round(time.Second))
		secs = append(secs, sec)
	}
	return write(out, secs, e)
}

// pair runs a measured thing and its floor or reference, alternating
// which goes first from one run to the next (i), so neither always meets
// the other's leftovers (page cache, git's packed refs, a warm CPU).
func pair(i int, a, b func() error) error {
	if i%2 != 0 {
		a, b = b, a
	}
	if err := a(); err != nil {
		return err
	}
	return b()
}

// step says where the harness is, on stderr.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// startJob starts one job over the protocol and returns its id.
func (e *env) startJob(ctx context.Context, p protocol.StartParams) (string, error) {
	r, err := e.c.Daemon().JobStart(ctx, p)
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

// waitAll waits for jobs and fails unless every one succeeded.
func (e *env) waitAll(ctx context.Context, ids []string) error {
	wr, err := e.c.Daemon().JobWait(ctx, protocol.WaitParams{IDs: ids, TimeoutS: 600})
	if err != nil {
		return err
	}
	if !wr.Done {
		return fmt.Errorf("bench jobs still running after 600 s")
	}
	for _, j := range wr.Jobs {
		if j.State != protocol.StateSucceeded {
			return fmt.Errorf("bench job %s ended %s: %s", j.ID, j.State, j.Error)
		}
	}
	return nil
}

// cleanup removes a job's worktree and branch, so a repository's worktree
// list stays short across hundreds of runs.
func (e *env) cleanup(ctx context.Context, ids ...string) error {
	for _, id := range ids {
		if _, err := e.c.Daemon().JobCleanup(ctx, protocol.CleanupParams{ID: id, DeleteBranch: true, Force: true}); err != nil {
			return fmt.Errorf("cleanup %s: %w", id, err)
		}
	}
	return nil
}

// makeRepo writes a repository of n Go files, 50 to a directory, about
// 400 bytes each, in one commit.
func makeRepo(dir string, n int) error {
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%04d", i/50), fmt.Sprintf("f%05d.go", i))
		if i%50 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		body := fmt.Sprintf("package d%04d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", i/50, i, i, i, i)
		if err := os.WriteFile(p, []byte(strings.Repeat(body, 5)), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "sample"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v %s", args, err, b)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
func boolp(b bool) *bool         { return &b }

// num prints v with three significant digits and no trailing zeros.
func num(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		d = 0
	}
	s := fmt.Sprintf("%.*f", d, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
