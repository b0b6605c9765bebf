//go:build unix

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/internal/text"
)

// execed is a shell function for the tests' scripts: `execed <pid>` waits
// until pid runs sleep (its command line is set once its exec is done).
const execed = `execed() { n=0; until [ "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" = "$(command -v sleep) 1000 " ] ||
  [ "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" = "sleep 1000 " ] || [ $n -gt 10000 ]; do n=$((n+1)); done; }
`

// command is a shell script as a Command run in dir, with a marker of its own.
func command(t *testing.T, dir, script string) engine.Command {
	t.Helper()
	return engine.Command{Argv: []string{"sh", "-c", execed + script}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")},
		Marker: fmt.Sprintf("HUB_ENGINE_TEST=%d", time.Now().UnixNano()), Grace: 2 * time.Second}
}

// pidFile reads the pid a script wrote into dir/name; the process is
// killed at the end of the test should it still run.
func pidFile(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := proc.StartTime(pid); err == nil {
		t.Cleanup(func() {
			if proc.Same(pid, st) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
	return pid
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	_, err := proc.StartTime(pid)
	return err == nil
}

// TestRunCommandBackgroundChild: a command that exits 0 while a child it
// left holds its output is done at once, with the leader's exit, and the
// child is gone; one that died on the group's SIGTERM is not reported.
func TestRunCommandBackgroundChild(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	r := engine.RunCommand(context.Background(), command(t, dir, `echo hi; sleep 1000 & echo $! > pid; execed $!; echo bye >&2; exit 0`))
	if r.Err != nil || r.ExitCode != 0 || r.Signal != "" || r.TimedOut || r.Leftovers != nil {
		t.Fatalf("result %+v", r)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("RunCommand took %s", d)
	}
	if r.Output != "hi\nbye\n" {
		t.Errorf("output %q", r.Output)
	}
	if pid := pidFile(t, dir, "pid"); alive(pid) {
		t.Errorf("the background child %d is alive", pid)
	}
}

// TestRunCommandSetsid: a child that made a session of its own is found by
// the marker, ended and reported; so is one that ignores SIGTERM.
func TestRunCommandSetsid(t *testing.T) {
	dir := t.TempDir()
	c := command(t, dir, `setsid sleep 1000 & echo $! > setsid; execed $!
sh -c 'trap "" TERM; echo $$ > stubborn.tmp; mv stubborn.tmp stubborn; exec sleep 1000' &
n=0; until [ -s stubborn ] || [ $n -gt 1000 ]; do sleep 0.01; n=$((n+1)); done; execed $(cat stubborn)
exit 3`)
	c.Grace = 300 * time.Millisecond
	t0 := time.Now()
	r := engine.RunCommand(context.Background(), c)
	if r.Err != nil || r.ExitCode != 3 || r.Signal != "" || r.TimedOut {
		t.Fatalf("result %+v", r)
	}
	if d := time.Since(t0); d > 4*time.Second {
		t.Errorf("RunCommand took %s", d)
	}
	setsid, stubborn := pidFile(t, dir, "setsid"), pidFile(t, dir, "stubborn")
	got := map[int]proc.Leftover{}
	for _, l := range r.Leftovers {
		got[l.PID] = l
	}
	for _, pid := range []int{setsid, stubborn} {
		if l, ok := got[pid]; !ok || !l.Ended || l.Command != "sleep 1000" {
			t.Errorf("leftover %d: %+v %v; want ended, sleep 1000 (all: %+v)", pid, l, ok, r.Leftovers)
		}
		if alive(pid) {
			t.Errorf("leftover %d is alive", pid)
		}
	}
	if len(r.Leftovers) != 2 {
		t.Errorf("leftovers %+v", r.Leftovers)
	}
}

// TestRunCommandSurvivorHoldsPipe: a process out of reach (its own
// session, an empty environment, no subreaper) that holds the output
// does not hold RunCommand past the drain.
func TestRunCommandSurvivorHoldsPipe(t *testing.T) {
	dir := t.TempDir()
	bins := hubtest.Programs(t, "env", "setsid", "sleep")
	envBin, setsid, sleep := bins[0], bins[1], bins[2]
	t0 := time.Now()
	r := engine.RunCommand(context.Background(), command(t, dir,
		envBin+" -i "+setsid+" "+sleep+" 1000 & echo $! > pid; execed $!; echo out"))
	pid := pidFile(t, dir, "pid")
	if r.Err != nil || r.ExitCode != 0 || r.Output != "out\n" || r.Leftovers != nil {
		t.Errorf("result %+v", r)
	}
	if d := time.Since(t0); d > 4*time.Second {
		t.Errorf("RunCommand took %s with a survivor holding its output", d)
	}
	if !alive(pid) {
		t.Error("the survivor is gone: the test proves nothing")
	}
}

func TestRunCommandTimeout(t *testing.T) {
	dir := t.TempDir()
	c := command(t, dir, `echo started; sleep 1000 & echo $! > pid; wait`)
	c.Timeout = 300 * time.Millisecond
	t0 := time.Now()
	r := engine.RunCommand(context.Background(), c)
	if !r.TimedOut || r.ExitCode != -1 || r.Signal != "terminated" || r.Err != nil || r.Output != "started\n" {
		t.Errorf("result %+v", r)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("a timeout of 300ms took %s", d)
	}
	if pid := pidFile(t, dir, "pid"); alive(pid) {
		t.Errorf("the command's child %d is alive", pid)
	}
}

func TestRunCommandStopAndCancel(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan string)
	go func() {
		if b, err := os.ReadFile(fifo); err == nil && len(b) > 0 { // once the command ignores SIGTERM
			stop <- "cancelled by the supervisor"
		}
	}()
	c := command(t, dir, `trap "" TERM; echo ready > ready; sleep 1000`) // the leader holds out until SIGKILL
	c.Stop, c.Grace = stop, 200*time.Millisecond
	r := engine.RunCommand(context.Background(), c)
	if r.Stopped != "cancelled by the supervisor" || r.Signal != "killed" || r.ExitCode != -1 || r.TimedOut || r.Cancelled != nil {
		t.Errorf("stopped: %+v", r)
	}

	why := errors.New("the shim was told to stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	c = command(t, dir, `sleep 1000`)
	done := make(chan engine.CommandResult)
	go func() { done <- engine.RunCommand(ctx, c) }()
	cancel(why)
	r = <-done
	if !errors.Is(r.Cancelled, why) || r.ExitCode != -1 || r.Stopped != "" {
		t.Errorf("cancelled: %+v", r)
	}
	if r := engine.RunCommand(ctx, c); !errors.Is(r.Cancelled, why) || r.Duration != 0 {
		t.Errorf("started with a cancelled context: %+v", r)
	}
}

func TestRunCommandDoesNotStart(t *testing.T) {
	for _, argv := range [][]string{nil, {filepath.Join(t.TempDir(), "no-such-command")}} {
		r := engine.RunCommand(context.Background(), engine.Command{Argv: argv})
		if r.Err == nil || r.ExitCode != -1 {
			t.Errorf("%q: %+v", argv, r)
		}
	}
}

func TestRunCommandOutputCut(t *testing.T) {
	c := command(t, t.TempDir(), `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done`)
	c.OutputMax = 1000
	r := engine.RunCommand(context.Background(), c)
	if r.ExitCode != 0 || !strings.HasPrefix(r.Output, "line 0\nline 1\n") || !strings.HasSuffix(r.Output, "line 19999\n") ||
		!strings.Contains(r.Output, " bytes cut ...]\n") || len(r.Output) > 1100 {
		t.Errorf("exit %d, output (%d bytes):\n%s", r.ExitCode, len(r.Output), r.Output)
	}
}

func TestHeadTail(t *testing.T) {
	h := &text.HeadTail{Max: 10}
	h.Write([]byte("0123"))
	h.Write([]byte("456789"))
	if s := h.String(); s != "0123456789" || h.Total() != 10 {
		t.Errorf("not cut: %q", s)
	}
	h.Write([]byte("abcdefghij"))
	if s := h.String(); s != "01234\n[... 10 bytes cut ...]\nfghij" {
		t.Errorf("cut: %q", s)
	}
	// One large write keeps its own end.
	h = &text.HeadTail{Max: 8}
	h.Write([]byte("line one\nline two\nline three\n"))
	if s := h.String(); s != "line\n[... 21 bytes cut ...]\nree\n" {
		t.Errorf("large write: %q", s)
	}
}

// TestHeadTailUTF8: a cut inside a character drops the part kept, so the
// output is valid UTF-8 without replacement marks; the count says so.
func TestHeadTailUTF8(t *testing.T) {
	for max := 4; max < 16; max++ {
		h := &text.HeadTail{Max: max}
		text := strings.Repeat("é€😀", 20)
		for _, b := range []byte(text) { // byte by byte: every cut point
			h.Write([]byte{b})
		}
		s := h.String()
		if !utf8.ValidString(s) || strings.ContainsAny(s, "?\uFFFD") {
			t.Fatalf("max %d: %q", max, s)
		}
		head, tail, ok := strings.Cut(s, "[... ")
		var cut int
		if _, err := fmt.Sscanf(tail, "%d bytes cut ...]\n", &cut); !ok || err != nil {
			t.Fatalf("max %d: no cut line in %q", max, s)
		}
		tail = tail[strings.Index(tail, "]\n")+2:]
		head = strings.TrimSuffix(head, "\n")
		if len(head)+cut+len(tail) != len(text) || !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) {
			t.Errorf("max %d: head %q + %d cut + tail %q is not the text", max, head, cut, tail)
		}
	}
	// Bytes that are no UTF-8 at all are replaced.
	h := &text.HeadTail{}
	h.Write([]byte{'a', 0xff, 'b'})
	if s := h.String(); s != "a?b" {
		t.Errorf("invalid bytes: %q", s)
	}
}

func TestHeadTailConcurrent(t *testing.T) {
	h := &text.HeadTail{Max: 100}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			line := []byte(fmt.Sprintf("writer %d\n", i))
			for range 1000 {
				h.Write(line)
				_ = h.String()
			}
		})
	}
	wg.Wait()
	if h.Total() != 8*1000*int64(len("writer 0\n")) {
		t.Errorf("total %d", h.Total())
	}
	if s := h.String(); !utf8.ValidString(s) || !strings.Contains(s, " bytes cut ...]") || len(s) > 100+40 {
		t.Errorf("output %q", s)
	}
}

// TestHeadTailKeepsErrorsCut: an error line in the part of a long output
// that is cut is still shown, once, and one kept in the head or the tail
// is not repeated.
func TestHeadTailKeepsErrorsCut(t *testing.T) {
	h := &text.HeadTail{Max: 200}
	fmt.Fprintf(h, "Error: in the head\n")
	for i := range 50 {
		fmt.Fprintf(h, "noise line %d of the build\n", i)
		if i == 20 {
			// written in two pieces, as a pipe may hand it over
			fmt.Fprintf(h, "src/a.go:3: undefined: ")
			fmt.Fprintf(h, "Frob\n")
		}
	}
	fmt.Fprintf(h, "FAIL\tpkg\n")
	s := h.String()
	if strings.Count(s, "src/a.go:3: undefined: Frob") != 1 {
		t.Errorf("the cut error line is not shown once:\n%s", s)
	}
	if strings.Count(s, "Error: in the head") != 1 || strings.Count(s, "FAIL\tpkg") != 1 {
		t.Errorf("head or tail lines repeated or lost:\n%s", s)
	}
	if !strings.Contains(s, "bytes cut") {
		t.Errorf("nothing was cut:\n%s", s)
	}
}
