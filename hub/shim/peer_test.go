//go:build linux

package shim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// peerCalls are what a peer tries on the job's socket: the daemon's three
// methods, and the worker's two (sent for another job, so they stop at the
// job check, before the store, which these tests do not have).
var peerCalls = []struct {
	method string
	params any
}{
	{protocol.MethodShimReply, protocol.ShimReplyParams{QuestionID: "q1", Text: "answered by myself"}},
	{protocol.MethodShimSteer, protocol.ShimSteerParams{Text: "steered by myself"}},
	{protocol.MethodShimStop, protocol.ShimStopParams{Reason: "stopped by myself"}},
	{protocol.MethodWorkerAsk, protocol.AskParams{Job: "other", Question: "may I?", Kind: "blocker"}},
	{protocol.MethodWorkerProgress, protocol.ProgressParams{Job: "other", Note: "half way"}},
}

// peerResult is what one call got: the error's code, message and hint, or
// code 0 for an answer.
type peerResult struct {
	Method  string `json:"method"`
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

// socketShim is a shim with only what handle needs before the store, serving
// its socket in a fresh folder; the pids it saw connect land in seen.
type socketShim struct {
	*shim
	sock string
	mu   sync.Mutex
	seen []int
}

func newSocketShim(t *testing.T, self int) *socketShim {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "hub.db")) // no jobs: no other job's worker to place
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &socketShim{shim: newShim(Options{}, st, &store.Job{ID: "j1"}, NewNotifier(filepath.Join(t.TempDir(), "no-daemon.sock"), "j1"))}
	s.self, s.red = self, redact.New()
	s.sock = filepath.Join(t.TempDir(), "shim.sock")
	ln, err := rpc.Listen(s.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rpc.Serve(ctx, ln, s.handle, nil, func(c *rpc.Conn) {
			s.mu.Lock()
			s.seen = append(s.seen, c.PeerPID())
			s.mu.Unlock()
			s.onConn(c)
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// TestWorkerCannotActAsDaemon: the job's worker — a child of the shim, a
// process it left behind after a setsid and double fork, one inside
// bubblewrap's pid namespace, or the shim itself — may ask and report on the
// job's socket, and is refused the daemon's reply, steer and stop; the
// daemon, which is no descendant of the shim, is not.
func TestWorkerCannotActAsDaemon(t *testing.T) {
	// The real shim is a child subreaper, so what its worker orphans stays
	// below it; this test process plays the shim.
	if err := proc.BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	s := newSocketShim(t, os.Getpid())
	helper := []string{os.Args[0], "-test.run=^TestPeerHelper$", "-test.count=1"}
	env := append(os.Environ(), "HUB_PEER_SOCKET="+s.sock)

	t.Run("child", func(t *testing.T) {
		cmd := exec.Command(helper[0], helper[1:]...)
		cmd.Env = env
		expectWorker(t, s, runPeer(t, cmd))
	})
	t.Run("orphan after setsid", func(t *testing.T) {
		// sh starts the helper in a session of its own and exits; the
		// helper connects only once it has lost that parent.
		cmd := exec.Command("sh", "-c", `HUB_PEER_ORPHAN_OF=$$ setsid "$@" & exit 0`, "sh")
		cmd.Args = append(cmd.Args, helper...)
		cmd.Env = env
		expectWorker(t, s, runPeer(t, cmd))
	})
	t.Run("the shim itself", func(t *testing.T) {
		expectWorker(t, s, callPeer(t, s.sock))
	})
	t.Run("inside bubblewrap", func(t *testing.T) {
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			t.Fatal("bubblewrap is not installed (make test installs it)")
		}
		if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "true").CombinedOutput(); err != nil {
			t.Fatalf("bubblewrap cannot make a pid namespace here: %v %s", err, out)
		}
		s.mu.Lock()
		before := len(s.seen)
		s.mu.Unlock()
		cmd := exec.Command(bwrap, append([]string{"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
			"--unshare-pid", "--die-with-parent", "--new-session", "--"}, helper...)...)
		cmd.Env = append(env, "HUB_PEER_REPORT_PID=1")
		res := runPeer(t, cmd)
		expectWorker(t, s, res)
		// The helper saw itself with a small pid of its namespace; the
		// shim saw its real pid.
		inside := res[len(res)-1].Code
		s.mu.Lock()
		seen := s.seen[before:]
		s.mu.Unlock()
		for _, pid := range seen {
			if pid == int(inside) || pid <= 0 {
				t.Errorf("the shim saw pid %d for a peer that is pid %d in its own namespace", pid, inside)
			}
		}
	})
}

// TestDaemonMayReplySteerStop: a peer that is not below the shim (this test
// process, with a stand-in shim as the job's) is the daemon: steer and stop
// go through.
func TestDaemonMayReplySteerStop(t *testing.T) {
	standIn := exec.Command("sleep", "60")
	if err := standIn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standIn.Process.Kill(); standIn.Wait() })
	s := newSocketShim(t, standIn.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := rpc.Dial(ctx, s.sock)
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	sc := protocol.ShimClient{C: c}
	if _, err := sc.ShimSteer(ctx, protocol.ShimSteerParams{Text: "go on"}); err != nil {
		t.Errorf("the daemon's steer: %v", err)
	}
	if _, err := sc.ShimStop(ctx, protocol.ShimStopParams{Reason: "stopped by request"}); err != nil {
		t.Errorf("the daemon's stop: %v", err)
	}
	select {
	case r := <-s.stopCh:
		if r != "stopped by request" {
			t.Errorf("stop reason %q", r)
		}
	default:
		t.Error("the daemon's stop did not reach the job")
	}
}

// expectWorker checks a worker's results: the daemon's methods refused with
// a hint, the worker's own served (they reach the job check), and no stop.
func expectWorker(t *testing.T, s *socketShim, res []peerResult) {
	t.Helper()
	if len(res) < len(peerCalls) {
		t.Fatalf("the peer made %d calls, want %d: %+v", len(res), len(peerCalls), res)
	}
	for _, r := range res[:len(peerCalls)] {
		switch r.Method {
		case protocol.MethodShimReply, protocol.MethodShimSteer, protocol.MethodShimStop:
			if r.Code != protocol.CodeRefused || !strings.Contains(r.Message, "worker cannot") || !strings.Contains(r.Hint, "hub ask") {
				t.Errorf("%s from the worker: %+v, want refused with a hint", r.Method, r)
			}
		default:
			if r.Code != protocol.CodeInvalidParams || !strings.Contains(r.Message, "serves job j1") {
				t.Errorf("%s from the worker: %+v, want it served (up to the job check)", r.Method, r)
			}
		}
	}
	select {
	case r := <-s.stopCh:
		t.Errorf("the worker stopped its job: %q", r)
	default:
	}
}

// runPeer runs a helper peer and reads its results from its output, which
// closes once every process holding it is gone.
func runPeer(t *testing.T, cmd *exec.Cmd) []peerResult {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("peer: %v\n%s%s", err, out, ee.Stderr)
		}
		t.Fatalf("peer: %v", err)
	}
	var res []peerResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "PEER "); ok {
			var r peerResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			res = append(res, r)
		}
	}
	return res
}

// callPeer makes peerCalls on sock from this process.
func callPeer(t testing.TB, sock string) []peerResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := rpc.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	var res []peerResult
	for _, pc := range peerCalls {
		r := peerResult{Method: pc.method}
		err := c.Call(ctx, pc.method, pc.params, nil)
		var je *jsonrpc2.Error
		switch {
		case errors.As(err, &je):
			r.Code, r.Message, r.Hint = je.Code, je.Message, rpc.HintOf(err)
		case err != nil:
			t.Fatalf("%s: %v", pc.method, err)
		}
		res = append(res, r)
	}
	return res
}

// TestPeerHelper is the peer of the tests above, run as a process of its
// own: it makes peerCalls on HUB_PEER_SOCKET and prints what each got.
func TestPeerHelper(t *testing.T) {
	sock := os.Getenv("HUB_PEER_SOCKET")
	if sock == "" {
		t.Skip("run by TestWorkerCannotActAsDaemon")
	}
	if parent, _ := strconv.Atoi(os.Getenv("HUB_PEER_ORPHAN_OF")); parent > 0 {
		// Wait for the parent to exit: the kernel signals its death.
		died := make(chan os.Signal, 1)
		signal.Notify(died, syscall.SIGUSR1)
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGUSR1), 0); e != 0 {
			t.Fatalf("prctl(PR_SET_PDEATHSIG): %v", e)
		}
		if os.Getppid() == parent {
			select {
			case <-died:
			case <-time.After(10 * time.Second):
				t.Fatal("the helper's parent did not exit")
			}
		}
	}
	for _, r := range callPeer(t, sock) {
		b, _ := json.Marshal(r)
		fmt.Printf("PEER %s\n", b)
	}
	if os.Getenv("HUB_PEER_REPORT_PID") != "" {
		b, _ := json.Marshal(peerResult{Method: "getpid", Code: int64(os.Getpid())})
		fmt.Printf("PEER %s\n", b)
	}
}
