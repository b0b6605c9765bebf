// Command benchreport runs hub's benchmarks and rewrites docs/benchmarks.md.
//
//	go run ./bench/cmd/benchreport -out docs/benchmarks.md
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "where to write the report")
	runs := flag.Int("runs", 15, "repetitions per figure")
	files := flag.Int("files", 5000, "files in the large sample repo")
	flag.Parse()
	if err := run(*out, *runs, *files); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

type figure struct {
	name, unit string
	samples    []float64
	target     string
	pass       *bool
	note       string
}

func (f *figure) stats() (p50, p90, p99, min, max float64) {
	s := append([]float64(nil), f.samples...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	return q(0.5), q(0.9), q(0.99), s[0], s[len(s)-1]
}

func run(out string, runs, nfiles int) error {
	work, err := os.MkdirTemp("", "hub-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "hub")
	if b, err := exec.Command("go", "build", "-o", bin, "./cmd/hub").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, b)
	}
	home := filepath.Join(work, "home")
	for k, v := range map[string]string{"HUB_HOME": filepath.Join(work, "hubhome"), "HOME": home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM": "1", "HUB_MAX_RUNNING": "64",
		"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
		"PATH": filepath.Dir(bin) + ":" + os.Getenv("PATH")} {
		os.Setenv(k, v)
	}
	os.MkdirAll(home, 0o700)
	paths, _ := config.Resolve()
	repo := filepath.Join(work, "repo")
	if err := makeRepo(repo, nfiles); err != nil {
		return err
	}
	ctx := context.Background()
	c, err := client.Connect(ctx, paths, client.Options{AutoStart: true, HubBinary: bin, ClientName: "bench"})
	if err != nil {
		return err
	}
	defer func() {
		_ = c.Call(ctx, protocol.MethodShutdown, struct{}{}, nil)
		c.Close()
	}()
	st, err := store.Open(paths.DB())
	if err != nil {
		return err
	}
	defer st.Close()

	var figs []*figure
	// 1 and 2. start latency, and readiness against the floor: a bare
	// `git worktree add` of the same repo, interleaved with hub's runs so
	// both see the same machine. One warm-up of each is discarded.
	start := &figure{name: fmt.Sprintf("`start` latency (%d-file repo)", nfiles), unit: "ms", target: "p50 < 20 ms"}
	ready := &figure{name: "start → worker running", unit: "ms"}
	floor := &figure{name: "floor: bare `git worktree add`", unit: "ms"}
	for i := -1; i < runs; i++ {
		// Alternate which goes first, so neither always meets the other's leftovers.
		var startMS, floorMS float64
		var j *store.Job
		hubRun := func() error {
			t0 := time.Now()
			var r protocol.StartResult
			if err := c.Call(ctx, protocol.MethodJobStart, protocol.StartParams{Task: "bench", Repo: repo, Engine: "exec", Exec: "true"}, &r); err != nil {
				return err
			}
			startMS = ms(time.Since(t0))
			if err := waitAll(ctx, c, []string{r.ID}); err != nil { // one at a time: readiness is per job
				return err
			}
			var err error
			j, err = st.Job(ctx, r.ID)
			return err
		}
		dir := filepath.Join(work, fmt.Sprintf("floor-%d", i+1))
		floorRun := func() error {
			t1 := time.Now()
			if b, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", fmt.Sprintf("floor-%d", i+1), dir, "HEAD").CombinedOutput(); err != nil {
				return fmt.Errorf("worktree add: %v %s", err, b)
			}
			floorMS = ms(time.Since(t1))
			return nil
		}
		first, second := hubRun, floorRun
		if i%2 != 0 {
			first, second = floorRun, hubRun
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).Run()
		exec.Command("git", "-C", repo, "worktree", "remove", "--force", j.Worktree).Run()
		if i < 0 {
			continue
		}
		start.samples = append(start.samples, startMS)
		ready.samples = append(ready.samples, ms(j.RunningAt.Sub(j.CreatedAt)))
		floor.samples = append(floor.samples, floorMS)
	}
	p50, _, _, _, _ := start.stats()
	start.pass = boolp(p50 < 20)
	r50, _, _, _, _ := ready.stats()
	f50, _, _, _, _ := floor.stats()
	ready.target = "≤ 1.2× floor"
	ready.pass = boolp(r50 <= 1.2*f50)
	ready.note = fmt.Sprintf("ratio %.2f× the floor's median", r50/f50)
	figs = append(figs, start, ready, floor)

	// 3. wake-up: job end → wait returns.
	wake := &figure{name: "job end → `wait` returns", unit: "ms", target: "p99 < 20 ms"}
	for i := 0; i < runs; i++ {
		var r protocol.StartResult
		if err := c.Call(ctx, protocol.MethodJobStart, protocol.StartParams{Task: "bench", Repo: repo, Engine: "exec", Exec: "sleep 0.3"}, &r); err != nil {
			return err
		}
		var wr protocol.WaitResult
		if err := c.Call(ctx, protocol.MethodJobWait, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: 60}, &wr); err != nil {
			return err
		}
		got := time.Now()
		j, err := st.Job(ctx, r.ID)
		if err != nil {
			return err
		}
		wake.samples = append(wake.samples, ms(got.Sub(j.EndedAt)))
	}
	_, _, w99, _, _ := wake.stats()
	wake.pass = boolp(w99 < 20)
	figs = append(figs, wake)

	// 4. cold start: spawn `hub mcp` → initialize answered, daemon running.
	cold := &figure{name: "`hub mcp` spawn → `initialize` answered", unit: "ms", target: "p50 < 50 ms"}
	for i := 0; i < runs; i++ {
		d, err := mcpInit(bin)
		if err != nil {
			return err
		}
		cold.samples = append(cold.samples, ms(d))
	}
	c50, _, _, _, _ := cold.stats()
	cold.pass = boolp(c50 < 50)
	figs = append(figs, cold)

	// 5 and 6. the built-in worker's loop: its own cost per turn, beside a
	// bare model call to the same scripted server; the prompt's fixed size.
	lf, err := loopFigures(runs)
	if err != nil {
		return err
	}
	figs = append(figs, lf...)

	return write(out, figs, runs, nfiles)
}

func waitAll(ctx context.Context, c *client.Client, ids []string) error {
	var wr protocol.WaitResult
	if err := c.Call(ctx, protocol.MethodJobWait, protocol.WaitParams{IDs: ids, TimeoutS: 120}, &wr); err != nil {
		return err
	}
	for _, j := range wr.Jobs {
		if j.State != protocol.StateSucceeded {
			return fmt.Errorf("bench job %s ended %s: %s", j.ID, j.State, j.Error)
		}
	}
	return nil
}

// mcpInit spawns `hub mcp`, sends initialize as a client would, and times the answer.
func mcpInit(bin string) (time.Duration, error) {
	cmd := exec.Command(bin, "mcp")
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	msg := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"
	if _, err := in.Write([]byte(msg)); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(outp).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("hub mcp: %v", err)
	}
	d := time.Since(t0)
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal([]byte(line), &resp) != nil || resp.Result == nil {
		return 0, fmt.Errorf("hub mcp answered %q", line)
	}
	return d, nil
}

func makeRepo(dir string, n int) error {
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/50), fmt.Sprintf("f%04d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		body := fmt.Sprintf("package d%03d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", i/50, i, i, i, i)
		if err := os.WriteFile(p, []byte(strings.Repeat(body, 20)), 0o644); err != nil {
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

func write(out string, figs []*figure, runs, nfiles int) error {
	var b strings.Builder
	b.WriteString("# hub benchmarks\n\n")
	b.WriteString("Generated by `make bench` (bench/cmd/benchreport); do not edit by hand.\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s, %s. Each figure: %d runs; median (p50), p90, p99, min–max.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"), runs)
	b.WriteString("| figure | p50 | p90 | p99 | min–max | target | met |\n|---|---|---|---|---|---|---|\n")
	for _, f := range figs {
		p50, p90, p99, mn, mx := f.stats()
		met := ""
		if f.pass != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*f.pass]
		}
		fmt.Fprintf(&b, "| %s | %.1f %s | %.1f | %.1f | %.1f–%.1f | %s | %s |\n", f.name, p50, f.unit, p90, p99, mn, mx, f.target, met)
	}
	b.WriteString("\n")
	for _, f := range figs {
		if f.note != "" {
			fmt.Fprintf(&b, "- %s: %s.\n", f.name, f.note)
		}
	}
	fmt.Fprintf(&b, `
## How each is measured

- **start latency**: the client's round trip for `+"`job/start`"+` on a %d-file repo (100 dirs × 50 Go files), through the
  daemon's unix socket. Validation opens the repo and resolves the base in-process with go-git; no git process runs.
- **start → worker running**: the job's `+"`created_at`"+` to `+"`running_at`"+` in the store (ms resolution): admission,
  spawning the shim, `+"`git worktree add`"+`, the dirty check of the user's checkout (in parallel), the state change.
  The floor is a bare `+"`git worktree add -b`"+` of the same repo, timed the same number of times in the same run.
- **wake-up**: a job of `+"`sleep 0.3`"+`; `+"`wait`"+` is called at once; measured from the job's `+"`ended_at`"+` (stamped by the shim
  just before it commits the ending) to the moment the client has the answer: shim → `+"`shim/changed`"+` → daemon reads the
  events → wakes the waiter → answer.
- **cold start**: spawning `+"`hub mcp`"+` and writing an MCP `+"`initialize`"+` line on its stdin, until the answer line arrives, with
  the daemon already running (it connects and subscribes before it serves).
- **loop overhead per turn**: the built-in worker (package agent) runs %d turns against the scripted model server on
  loopback, each turn one `+"`read_file`"+` of a one-line file, then a final answer. Everything the loop does but the model
  call itself (building the request, running the tool, steering and cost reports to the mailbox, context accounting)
  is the run's wall time minus the time spent inside the model client, divided by the turns. The reference is a bare
  model call (the same client, the same server, a one-line conversation), timed in the same process; the ratio is
  overhead per turn to that call.
- **prompt fixed size**: the first request of a write job (system prompt, every tool schema with the role tools, and a
  one-line task), as the scripted server received it; tokens estimated at 4 bytes each.
`, nfiles, loopTurns)
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return runtime.GOARCH
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func boolp(b bool) *bool         { return &b }
