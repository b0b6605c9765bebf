// Package hubtest gives hub's tests the real parts: the hub binary built from
// this checkout, a private HUB_HOME and HOME under t.TempDir(), and git
// repositories to work on. It never touches the real home.
package hubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// goEnv is the environment the test process started with: tests move HOME,
// and the go command must still find the real module and build caches.
var goEnv = os.Environ()

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Root is the top of hub's source tree (the core module's folder), found
// from this file's own place in it, so a nested module's tests find it too.
func Root() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("hubtest: cannot tell where its source is")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "cmd", "hub", "main.go")); err != nil {
		return "", fmt.Errorf("hubtest: %s is not hub's source tree: %w", root, err)
	}
	return filepath.Clean(root), nil
}

// Binary builds ./cmd/hub once per test process and returns its path.
func Binary() (string, error) {
	buildOnce.Do(func() {
		root, err := Root()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hub-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hub")
		args := []string{"build", "-o", binPath}
		if os.Getenv("HUB_TEST_RACE") == "1" { // the race detector in the daemon, shims and CLI too
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/hub")...)
		cmd.Dir = root
		cmd.Env = goEnv
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/hub: %v\n%s", err, b)
		}
	})
	return binPath, buildErr
}

// BuildBeside builds the main package pkg of the module in dir (a nested
// module of hub's tree, say) into the hub binary's folder as name, so the
// hub binary finds it beside itself, and returns its path.
func BuildBeside(dir, pkg, name string) (string, error) {
	hub, err := Binary()
	if err != nil {
		return "", err
	}
	out := filepath.Join(filepath.Dir(hub), name)
	args := []string{"build", "-o", out}
	if os.Getenv("HUB_TEST_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = goEnv
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// MustBinary is Binary for tests: a build failure fails the test.
func MustBinary(t testing.TB) string {
	t.Helper()
	p, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Env is a private world for one test: HUB_HOME, HOME and the config dir
// under t.TempDir(), set in the test's own environment (t.Setenv) and
// returned as a list for child processes.
type Env struct {
	Home    string // HUB_HOME
	UserDir string // HOME
	Vars    []string
}

// NewEnv makes the world and sets it with t.Setenv (so the test must not be
// parallel), with the hub binary first on PATH; the daemon it starts is
// shut down at the test's end.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	e := Isolate(t)
	bin := MustBinary(t)
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	e.Vars = os.Environ()
	t.Cleanup(func() {
		e.Shutdown(t)
		if t.Failed() {
			e.DumpLogs(t)
		}
	})
	return e
}

// Isolate points HUB_HOME, HOME, the XDG folders and git's identity at a
// fresh temporary world with t.Setenv (so the test must not be parallel).
func Isolate(t testing.TB) *Env {
	t.Helper()
	base := t.TempDir()
	e := &Env{Home: filepath.Join(base, "hub"), UserDir: filepath.Join(base, "home")}
	if err := os.MkdirAll(e.UserDir, 0o700); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"HUB_HOME": e.Home, "HOME": e.UserDir, "XDG_CONFIG_HOME": filepath.Join(e.UserDir, ".config"),
		"XDG_DATA_HOME": filepath.Join(e.UserDir, ".local", "share"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@localhost",
		"GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@localhost",
		"HUB_CONFIG_DIR": "",
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	e.Vars = os.Environ()
	return e
}

// Call makes one call and fails the test, with the error's hint, if it fails.
func Call[R any](t testing.TB, ctx context.Context, c protocol.Caller, method string, params any) R {
	t.Helper()
	var r R
	if err := c.Call(ctx, method, params, &r); err != nil {
		t.Fatalf("%s: %v (hint: %s)", method, err, rpc.HintOf(err))
	}
	return r
}

// Deadline is a context that ends after d or with the test.
func Deadline(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// DumpLogs writes the tail of the daemon's log and of every job's shim and
// worker logs to the test log, so a failure in CI says what hub saw.
func (e *Env) DumpLogs(t testing.TB) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(e.Home, "logs", "*.log"))
	for _, pat := range []string{"shim.log", "worker.log"} {
		m, _ := filepath.Glob(filepath.Join(e.Home, "jobs", "*", pat))
		logs = append(logs, m...)
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		const max = 8 << 10
		if len(b) > max {
			b = append([]byte("…"), b[len(b)-max:]...)
		}
		rel, _ := filepath.Rel(e.Home, p)
		t.Logf("--- HUB_HOME/%s ---\n%s", rel, b)
	}
}

// Shutdown stops the daemon and every shim of this HUB_HOME, and waits
// until none is left, so no process outlives the test or writes into its
// temporary folder while the test removes it. A kill is asynchronous and a
// dying daemon may have started a child since the last look, so it looks
// again until a look finds nothing.
func (e *Env) Shutdown(t testing.TB) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := e.processes()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of %s still alive 10s after they were killed: %v", e.Home, pids)
			return
		}
		for _, pid := range pids {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processes lists the live processes of this HUB_HOME other than the test's
// own: the daemon and shims carry HUB_HOME in their environment, workers
// HUB_SOCKET (a path under it). A zombie has no environment left to read
// and writes nothing more, so it is not listed.
func (e *Env) processes() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(b, []byte("="+e.Home)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// Git runs git in dir and fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Programs finds each program on PATH, in order, and fails the test
// naming the first that is not there.
func Programs(t testing.TB, names ...string) []string {
	t.Helper()
	paths := make([]string, len(names))
	for i, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("no %s on PATH", name)
		}
		paths[i] = p
	}
	return paths
}

// WriteFiles writes files into dir, each (a slash-separated name) with the
// folders it needs, mode 0644.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Repo makes a git repository at dir with files committed on main.
func Repo(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	WriteFiles(t, dir, files)
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// Hub runs the hub binary with args and returns stdout, stderr and the exit code.
func Hub(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(MustBinary(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("hub %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// Main runs a test package's tests and then removes the binary Binary
// built. Call it from TestMain.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}
