//go:build linux

package proc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// The subreaper tests run in a child process (this test binary again, with
// helperEnv set): a test process that became a subreaper would adopt the
// orphans of every other test.
const helperEnv = "HUB_PROC_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "subreaper" {
		os.Exit(subreaperHelper())
	}
	os.Exit(m.Run())
}

// helperResult is what the subreaper helper reports on its stdout.
type helperResult struct {
	Leftovers   []Leftover
	Descendants []int // the helper's live descendants after EndLeftovers
	Before      int   // an unrelated child of the helper, started before the leader
	BeforeAlive bool
	Error       string
}

// subreaperHelper becomes a subreaper, starts an unrelated process with the
// marker, then the leader (HUB_PROC_SCRIPT, with the marker), prints
// "ready <leader start>", lets the leader exit when a line comes on stdin,
// ends its leftovers and prints a helperResult.
func subreaperHelper() int {
	res := helperResult{}
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(res) }()
	fail := func(err error) int { res.Error = err.Error(); return 0 }
	if err := BecomeSubreaper(); err != nil {
		return fail(err)
	}
	mark := os.Getenv("HUB_PROC_MARK")
	env := append(os.Environ(), mark)
	before := exec.Command("sleep", "1000")
	before.Env = env
	before.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := before.Start(); err != nil {
		return fail(err)
	}
	defer func() { _ = before.Process.Kill(); _ = before.Wait() }()
	bstart, err := ChildStartTime(before.Process.Pid)
	if err != nil {
		return fail(err)
	}
	if err := pastTick(bstart); err != nil {
		return fail(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	leader := exec.Command("sh", "-c", os.Getenv("HUB_PROC_SCRIPT"))
	leader.Env, leader.Stdin = env, pr
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = leader.Start()
	pr.Close()
	if err != nil {
		return fail(err)
	}
	lstart, err := ChildStartTime(leader.Process.Pid)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("ready %d\n", lstart)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(err)
	}
	pw.Close() // the leader's `read` ends: it exits
	_ = leader.Wait()
	res.Leftovers = EndLeftovers(LeftoverOptions{PGID: leader.Process.Pid, LeaderStart: lstart, Grace: 300 * time.Millisecond,
		Subreaper: os.Getpid(), Marker: mark})
	res.Descendants = Descendants(os.Getpid())
	res.Before, res.BeforeAlive = before.Process.Pid, Same(before.Process.Pid, bstart)
	return 0
}

// pastTick waits until the clock (in ticks since boot, as start times are)
// is past tick, so a process started now starts later than one at tick.
func pastTick(tick uint64) error {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		b, err := os.ReadFile("/proc/uptime")
		if err != nil {
			return err
		}
		up, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
		if err != nil {
			return err
		}
		if uint64(up*100) > tick+1 { // CLK_TCK is 100 on Linux
			return nil
		}
		time.Sleep(5 * time.Millisecond) // the clock, not a process: nothing to wait on
	}
	return fmt.Errorf("the clock never passed tick %d", tick)
}

// execed is a shell function for the tests' scripts: `execed <pid>` waits
// until pid runs sleep (its command line is set once its exec is done).
const execed = `execed() { n=0; until [ "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" = "$(command -v sleep) 1000 " ] ||
  [ "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" = "sleep 1000 " ] || [ $n -gt 10000 ]; do n=$((n+1)); done; }`

// startSleep starts `sleep 1000` with env (nil: the test's) as a child of
// the test, killed at the end of the test; it returns its pid and start time.
func startSleep(t *testing.T, env []string) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := ChildStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, st
}

// readPIDs reads the pid files a script wrote into dir, killing them at the
// end of the test should they still run.
func readPIDs(t *testing.T, dir string, names ...string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		pids[n] = pid
		if st, err := StartTime(pid); err == nil {
			t.Cleanup(func() {
				if Same(pid, st) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
		}
	}
	return pids
}

// killStarted kills the processes named by the pid files in dir that
// started at or after start.
func killStarted(dir string, start uint64) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if st, err := StartTime(pid); err == nil && st >= start {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	_, err := StartTime(pid)
	return err == nil
}

func TestEndLeftoversUnderSubreaper(t *testing.T) {
	dir := t.TempDir()
	bins := hubtest.Programs(t, "env", "setsid", "sleep")
	envBin, setsid, sleep := bins[0], bins[1], bins[2]
	script := fmt.Sprintf(`export D=%s
`+execed+`
setsid sleep 1000 & echo $! > $D/setsid; execed $!
( sleep 1000 & echo $! > $D/orphan; execed $! )
( %s -i %s %s 1000 & echo $! > $D/hidden; execed $! )
sh -c 'trap "" TERM; echo $$ > $D/stubborn.tmp; mv $D/stubborn.tmp $D/stubborn; exec sleep 1000' &
setsid sh -c 'trap "" TERM; echo $$ > $D/stubborn-setsid.tmp; mv $D/stubborn-setsid.tmp $D/stubborn-setsid; exec sleep 1000' &
n=0; until [ -s $D/stubborn ] && [ -s $D/stubborn-setsid ] || [ $n -gt 1000 ]; do sleep 0.01; n=$((n+1)); done
execed $(cat $D/stubborn); execed $(cat $D/stubborn-setsid)
read x
exit 0
`, dir, envBin, setsid, sleep)
	mark := fmt.Sprintf("HUB_PROC_TEST=%d", time.Now().UnixNano())
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=subreaper", "HUB_PROC_SCRIPT="+script, "HUB_PROC_MARK="+mark)
	helper.Stderr = os.Stderr
	in, outPipe := startPiped(t, helper)
	helperStart, err := ChildStartTime(helper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(time.Minute, func() { _ = helper.Process.Kill() })
	t.Cleanup(func() {
		watchdog.Stop()
		_ = helper.Process.Kill()
		_ = helper.Wait()
		killStarted(dir, helperStart) // should the test fail half way
	})
	out := bufio.NewReader(outPipe)
	line, err := out.ReadString('\n')
	var lstart uint64
	if _, serr := fmt.Sscanf(line, "ready %d", &lstart); err != nil || serr != nil {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	// Started after the leader, but not under the subreaper and without
	// the marker: not the command's.
	if err := pastTick(lstart); err != nil {
		t.Fatal(err)
	}
	after, afterStart := startSleep(t, nil)
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	var res helperResult
	if err := json.NewDecoder(out).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if err := helper.Wait(); err != nil || res.Error != "" {
		t.Fatalf("helper: %v %s", err, res.Error)
	}
	pids := readPIDs(t, dir, "setsid", "orphan", "hidden", "stubborn", "stubborn-setsid")
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (%d) is alive after EndLeftovers", name, pid)
		}
	}
	reported := map[int]Leftover{}
	for _, l := range res.Leftovers {
		reported[l.PID] = l
	}
	// Found outside the group (setsid; env -i and setsid, under the
	// subreaper only), or outliving the group's SIGTERM: reported, ended.
	for _, name := range []string{"setsid", "hidden", "stubborn", "stubborn-setsid"} {
		l, ok := reported[pids[name]]
		if !ok || !l.Ended || !strings.Contains(l.Command, "sleep 1000") {
			t.Errorf("%s (%d): reported %+v, %v; want ended, running sleep 1000", name, pids[name], l, ok)
		}
	}
	// A double fork stays in the group: it died on the group's SIGTERM.
	if _, ok := reported[pids["orphan"]]; ok || len(res.Leftovers) != 4 {
		t.Errorf("leftovers %+v; want the 4 outside the group or outliving SIGTERM, not the orphan %d", res.Leftovers, pids["orphan"])
	}
	if !res.BeforeAlive || !slices.Equal(res.Descendants, []int{res.Before}) {
		t.Errorf("the helper's process started before the leader: alive %v; descendants left %v, want only it (%d)",
			res.BeforeAlive, res.Descendants, res.Before)
	}
	if !Same(after, afterStart) {
		t.Error("a process outside the subreaper's tree, without the marker, was ended")
	}
}

// TestEndLeftoversByMarker: with no subreaper, a setsid leftover is found
// by the marker in its environment; a process started before the leader,
// one without the marker and one excluded are left alone.
func TestEndLeftoversByMarker(t *testing.T) {
	dir := t.TempDir()
	mark := fmt.Sprintf("HUB_PROC_TEST=%d", time.Now().UnixNano())
	env := append(os.Environ(), mark)
	before, beforeStart := startSleep(t, env)
	if err := pastTick(beforeStart); err != nil {
		t.Fatal(err)
	}
	leader := exec.Command("sh", "-c", execed+`
setsid sleep 1000 & echo $! > `+dir+`/setsid; execed $!
setsid sleep 1000 & echo $! > `+dir+`/excluded; execed $!
exit 0`)
	leader.Env = env
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	lstart, err := ChildStartTime(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Wait(); err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, dir, "setsid", "excluded")
	excludedStart, err := StartTime(pids["excluded"])
	if err != nil {
		t.Fatal(err)
	}
	after, afterStart := startSleep(t, nil)
	left := EndLeftovers(LeftoverOptions{PGID: leader.Process.Pid, LeaderStart: lstart, Grace: time.Second, Marker: mark,
		Exclude: []int{pids["excluded"]}})
	if len(left) != 1 || left[0].PID != pids["setsid"] || !left[0].Ended || left[0].Command != "sleep 1000" {
		t.Errorf("leftovers %+v; want the setsid sleep %d, ended", left, pids["setsid"])
	}
	if alive(pids["setsid"]) {
		t.Error("the setsid leftover is alive")
	}
	if !Same(before, beforeStart) || !Same(after, afterStart) || !Same(pids["excluded"], excludedStart) {
		t.Error("a process that is not the command's was ended")
	}
}

func TestEndLeftoversNothingLeft(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 1000 & exit 3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := ChildStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t0 := time.Now()
	// The background sleep dies on the group's SIGTERM: nothing to report.
	if left := EndLeftovers(LeftoverOptions{PGID: cmd.Process.Pid, LeaderStart: st, Grace: 5 * time.Second}); left != nil {
		t.Errorf("leftovers %+v", left)
	}
	if GroupAlive(cmd.Process.Pid) {
		t.Error("the group is alive")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("EndLeftovers took %s for a group that died on SIGTERM", d)
	}
}

// TestEndLeftoversReusedPID: a group whose leader's pid names another
// process now is not signalled.
func TestEndLeftoversReusedPID(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := ChildStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if left := EndLeftovers(LeftoverOptions{PGID: cmd.Process.Pid, LeaderStart: st - 1, Grace: 100 * time.Millisecond}); left != nil {
		t.Errorf("leftovers %+v", left)
	}
	if !Same(cmd.Process.Pid, st) {
		t.Error("the group of a reused pid was signalled")
	}
}

func TestCmdline(t *testing.T) {
	long := strings.Repeat("é", 150)
	// A shell that waits on its stdin, with no child: once it said ready it runs as itself.
	cmd := exec.Command("sh", "-c", "echo ready; read x", long)
	in, out := startPiped(t, cmd)
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	c := cmdline(cmd.Process.Pid)
	if len(c) > 200+len("…") || !strings.HasPrefix(c, "sh -c echo ready; read x éé") || !strings.HasSuffix(c, "é…") || !utf8.ValidString(c) {
		t.Errorf("cmdline = %q (%d bytes)", c, len(c))
	}
	if cmdline(1<<30) != "" {
		t.Error("cmdline of no process")
	}
}

// startPiped starts cmd with its stdin and stdout as pipes.
func startPiped(t *testing.T, cmd *exec.Cmd) (in io.WriteCloser, out io.ReadCloser) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if out, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return in, out
}
