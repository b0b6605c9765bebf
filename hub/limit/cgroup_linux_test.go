package limit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/limit"
)

// TestMain doubles the test binary as the helper that a sandboxed command
// starts with (hub sandbox-exec's part that this package owns): `limit.test
// limit-helper PLAN -- COMMAND...` joins the plan's groups, sets its
// rlimits, then execs the command in its place.
func TestMain(m *testing.M) {
	if len(os.Args) > 4 && os.Args[1] == "limit-helper" && os.Args[3] == "--" {
		os.Exit(helper(os.Args[2], os.Args[4:]))
	}
	os.Exit(m.Run())
}

func helper(planJSON string, argv []string) int {
	var p limit.Plan
	err := json.Unmarshal([]byte(planJSON), &p)
	if err == nil {
		err = p.Join()
	}
	path := ""
	if err == nil {
		path, err = exec.LookPath(argv[0])
	}
	if err == nil {
		err = p.SetRlimits()
	}
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintln(os.Stderr, "limit-helper:", err)
	return 127
}

// needCgroups fails the test, saying why, where hub cannot make cgroups.
func needCgroups(t *testing.T) {
	t.Helper()
	a := limit.Probe()
	if !a.Processes.Cgroup || !a.Memory.Cgroup {
		t.Fatalf("these tests need cgroups hub can make (root on cgroup v1, or a delegated cgroup v2); here:\n%s", strings.Join(a.Lines(), "\n"))
	}
}

// newGroup makes a group for id in a scope of the test's own, removed
// (its processes killed) when the test ends.
func newGroup(t *testing.T, scope, id string, l limit.Limits) *limit.Group {
	t.Helper()
	g, err := limit.New(scope, id, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(g.Kill(), g.Remove()); err != nil {
			t.Error(err)
		}
	})
	return g
}

// started is a command running through the helper.
type started struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// start runs argv through the helper with g's plan.
func start(t *testing.T, g *limit.Group, argv ...string) *started {
	t.Helper()
	plan, err := json.Marshal(g.Plan())
	if err != nil {
		t.Fatal(err)
	}
	s := &started{}
	s.cmd = exec.Command(os.Args[0], append([]string{"limit-helper", string(plan), "--"}, argv...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	s.cmd.WaitDelay = 10 * time.Second
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, g *limit.Group, argv ...string) (string, error) {
	t.Helper()
	s := start(t, g, argv...)
	err := s.cmd.Wait()
	return s.out.String(), err
}

// cgroupFile reads name from whichever of g's cgroups has it.
func cgroupFile(t *testing.T, g *limit.Group, name string) string {
	t.Helper()
	for _, d := range g.Cgroups() {
		if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no cgroup of %s has %s (%v)", g.Name(), name, g.Cgroups())
	return ""
}

// procs are the processes in g's cgroups.
func procs(t *testing.T, g *limit.Group) []int {
	t.Helper()
	var out []int
	for _, d := range g.Cgroups() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestForkBomb: a fork bomb under a 40-process cap is held there, Hit
// names the process limit, Kill ends every process (they keep forking as
// it works: it converges by stopping them first), and Remove deletes the
// groups.
func TestForkBomb(t *testing.T) {
	needCgroups(t)
	g := newGroup(t, limit.Scope(t.TempDir()), "bomb", limit.Limits{Processes: 40})
	// The cap must be in force before the bomb starts: the helper refuses
	// to run a command it could not put in the group.
	if got := cgroupFile(t, g, "pids.max"); got != "40" {
		t.Fatalf("pids.max = %q; want 40", got)
	}
	// Each shell forks two children again and again as they die (a fork
	// that fails ends that shell): a bomb, bounded at 2^10 processes were
	// the cap not there.
	s := start(t, g, "sh", "-c", `b() { [ "$1" -gt 0 ] || exec sleep 300; while :; do b $(($1-1)) & b $(($1-1)) & wait; done; }; b 9`)
	waitFor(t, "the process cap to refuse a fork", func() bool {
		h, err := g.Hit()
		return err == nil && h.Processes > 0
	})
	if n, _ := strconv.Atoi(cgroupFile(t, g, "pids.current")); n > 40 {
		t.Errorf("pids.current = %d, over the cap", n)
	}
	h, err := g.Hit()
	if err != nil || !h.Any() || !strings.Contains(h.String(), "the process limit") {
		t.Errorf("Hit = %+v (%s), %v", h, h, err)
	}
	seen := procs(t, g)
	if len(seen) < 10 {
		t.Fatalf("only %d processes in the group: %v\n%s", len(seen), seen, s.out.String())
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if left := procs(t, g); len(left) > 0 {
		t.Fatalf("after Kill the group still has %v", left)
	}
	s.cmd.Wait()
	for _, pid := range seen {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && strings.Contains(string(b), g.Name()) {
			t.Errorf("process %d of the bomb is still alive", pid)
		}
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Cgroups() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Remove (%v)", d, err)
		}
	}
}

// TestMemoryCap: a process that takes memory without bound is killed at
// the 64 MiB cap, and Hit names the memory limit with the kill.
func TestMemoryCap(t *testing.T) {
	needCgroups(t)
	g := newGroup(t, limit.Scope(t.TempDir()), "hog", limit.Limits{MemoryBytes: 64 << 20})
	if got := cgroupFile(t, g, "memory.limit_in_bytes"); got != strconv.Itoa(64<<20) && cgroupFile(t, g, "memory.max") != strconv.Itoa(64<<20) {
		t.Fatalf("memory cap not written: %s", got)
	}
	// tail keeps all of a line in memory: 1 GiB with no newline.
	out, err := run(t, g, "sh", "-c", "head -c 1G /dev/zero | tail")
	if err == nil {
		t.Fatalf("the memory hog ran to the end under a 64 MiB cap:\n%s", out)
	}
	h, herr := g.Hit()
	if herr != nil || h.OOMKills < 1 || !strings.Contains(h.String(), "the memory limit (1 process killed)") {
		t.Errorf("Hit = %+v (%s), %v; want one OOM kill", h, h, herr)
	}
	t.Logf("hog: %v; %s", err, h)
}

// TestFileSizeCap: RLIMIT_FSIZE stops a file at the job's disk cap: dd is
// killed by SIGXFSZ, or told "File too large" when it ignores the signal.
func TestFileSizeCap(t *testing.T) {
	needCgroups(t)
	g := newGroup(t, limit.Scope(t.TempDir()), "big", limit.Limits{DiskBytes: 1 << 20})
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	_, err := run(t, g, "dd", "if=/dev/zero", "of="+f, "bs=64k", "count=64")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGXFSZ {
		t.Errorf("dd past the cap: %v; want killed by SIGXFSZ", err)
	}
	if fi, err := os.Stat(f); err != nil || fi.Size() != 1<<20 {
		t.Errorf("the file is %v (%v); want 1 MiB exactly", fi.Size(), err)
	}
	out, err := run(t, g, "sh", "-c", "trap '' XFSZ; dd if=/dev/zero of="+f+"2 bs=64k count=64")
	if err == nil || !strings.Contains(out, "File too large") {
		t.Errorf("dd ignoring SIGXFSZ: %v\n%s", err, out)
	}
	if out, err := run(t, g, "dd", "if=/dev/zero", "of="+f+"3", "bs=64k", "count=8"); err != nil {
		t.Errorf("512 KiB under a 1 MiB cap: %v\n%s", err, out)
	}
}

// TestRlimitData: the rlimit hub falls back on without a memory cgroup
// holds a process's memory (RLIMIT_DATA), here set by a plan of its own.
func TestRlimitData(t *testing.T) {
	p := limit.Plan{Rlimits: []limit.Rlimit{{Name: limit.RlimitData, Value: 64 << 20}}}
	b, _ := json.Marshal(p)
	out, err := exec.Command(os.Args[0], "limit-helper", string(b), "--", "sh", "-c", "head -c 1G /dev/zero | tail").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "memory exhausted") {
		t.Errorf("a 1 GiB line under RLIMIT_DATA 64 MiB: %v\n%s", err, out)
	}
}

// TestSweep: Sweep ends and removes the groups of its scope whose job is
// not live, and leaves the live ones and other scopes' alone.
func TestSweep(t *testing.T) {
	needCgroups(t)
	scope, other := limit.Scope(t.TempDir()), limit.Scope(t.TempDir())
	live := newGroup(t, scope, "live1", limit.Limits{Processes: 64})
	dead := newGroup(t, scope, "dead1", limit.Limits{Processes: 64})
	stranger := newGroup(t, other, "dead1", limit.Limits{Processes: 64})
	s := start(t, dead, "sleep", "300")
	waitFor(t, "the sleep to join its group", func() bool { return len(procs(t, dead)) == 1 })
	swept, err := limit.Sweep(scope, func(id string) bool { return id == "live1" })
	if err != nil || !slices.Equal(swept, []string{"dead1"}) {
		t.Fatalf("Sweep = %v, %v; want [dead1]", swept, err)
	}
	if err := s.cmd.Wait(); err == nil {
		t.Error("the dead job's sleep was not killed")
	}
	for _, d := range dead.Cgroups() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dead job's %s still there (%v)", d, err)
		}
	}
	for _, g := range []*limit.Group{live, stranger} {
		for _, d := range g.Cgroups() {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("Sweep took %s: %v", d, err)
			}
		}
	}
}
