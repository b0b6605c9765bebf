//go:build unix

package tool

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestShellExitCodeAndOutput(t *testing.T) {
	w := newTree(t, map[string]string{"f.txt": "hello\n"})
	cases := []struct{ command, want string }{
		{"cat f.txt; echo err >&2; echo out; exit 3", "exit code 3\nhello\nerr\nout\n"},
		{"true", "exit code 0\n(no output)"},
		{"cat", "exit code 0\n(no output)"}, // stdin is /dev/null
		{"pwd", "exit code 0\n" + w.Root() + "\n"},
		{"kill -9 $$", "exit code 137 (killed by signal killed)\n(no output)"},
		{"echo 'a\"b' | tr a x", "exit code 0\nx\"b\n"},
	}
	for _, c := range cases {
		got := mustCall(t, w, "run_shell", obj{"command": c.command})
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("run_shell %q (-want +got):\n%s", c.command, diff)
		}
	}
	_, err := call(t, w, "run_shell", obj{"command": "  "})
	wantErr(t, err, "command is empty")
}

func TestShellOutputCap(t *testing.T) {
	root := t.TempDir()
	w, err := New(root, &Options{MaxOutput: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	seq, err := exec.Command("seq", "1", "5000").Output()
	if err != nil {
		t.Fatal(err)
	}
	full := "HEAD-" + string(seq) + "-TAIL"
	got := mustCall(t, w, "run_shell", obj{"command": "printf 'HEAD-'; seq 1 5000; printf -- '-TAIL'"})
	head, tail := full[:500], full[len(full)-500:]
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	want := "exit code 0\n" + head + fmt.Sprintf("[... %d bytes cut ...]\n", len(full)-1000) + tail
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capped output (-want +got):\n%s", diff)
	}
}

func TestHeadTail(t *testing.T) {
	b := newHeadTail(10)
	b.Write([]byte("0123"))
	b.Write([]byte("456789"))
	if got := b.String(); got != "0123456789" {
		t.Errorf("under the cap: %q", got)
	}
	// Written in small pieces, many times over the cap: the tail is the last bytes.
	b = newHeadTail(100)
	var all strings.Builder
	for i := range 5000 {
		s := fmt.Sprintf("%d,", i)
		all.WriteString(s)
		b.Write([]byte(s))
	}
	got := b.String()
	want := all.String()[:50] + "\n" + fmt.Sprintf("[... %d bytes cut ...]\n", all.Len()-100) + all.String()[all.Len()-50:]
	if got != want {
		t.Errorf("head and tail:\n got %q\nwant %q", got, want)
	}
	// Characters are not split: "é" is two bytes, and 11 bytes of head would split one.
	b = newHeadTail(22)
	text := "x" + strings.Repeat("é", 50)
	b.Write([]byte(text))
	got = b.String()
	if !utf8.ValidString(got) {
		t.Errorf("split a character: %q", got)
	}
	var cut int
	if _, err := fmt.Sscanf(got[strings.Index(got, "[..."):], "[... %d bytes cut ...]", &cut); err != nil {
		t.Fatal(err)
	}
	kept := strings.Replace(got, fmt.Sprintf("\n[... %d bytes cut ...]\n", cut), "", 1)
	if len(kept)+cut != len(text) {
		t.Errorf("kept %d + cut %d != written %d: %q", len(kept), cut, len(text), got)
	}
}

// processGone reports whether pid no longer runs (it is gone or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// waitGone polls, with a deadline, for the process whose pid is in file to
// be gone: its end is not observable otherwise (it is not our child).
func waitGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs", pid)
		}
		<-tick.C
	}
}

func TestShellTimeoutKillsGrandchild(t *testing.T) {
	w := newTree(t, nil)
	start := time.Now()
	got := mustCall(t, w, "run_shell", obj{"command": "echo started; sleep 30 & echo $! > pid; wait", "timeout_s": 1})
	want := "timed out after 1s; the command and its children were stopped. If it needs longer, set timeout_s (at most 600), or run a smaller step.\nstarted\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeout (-want +got):\n%s", diff)
	}
	if d := time.Since(start); d > 1*time.Second+killGrace+time.Second {
		t.Errorf("took %v", d)
	}
	waitGone(t, filepath.Join(w.Root(), "pid"))
	if w.Busy() {
		t.Error("still busy after the timeout")
	}
}

func TestShellStopsBackgroundOnReturn(t *testing.T) {
	w := newTree(t, nil)
	got := mustCall(t, w, "run_shell", obj{"command": "sleep 30 & echo $! > pid; echo done"})
	if got != "exit code 0\ndone\n" {
		t.Errorf("run_shell = %q", got)
	}
	waitGone(t, filepath.Join(w.Root(), "pid"))
}

// startBlocked starts run_shell in the background on a command that writes
// to the FIFO ready and then blocks; it returns once the command has
// written, and a channel for the tool's result.
func startBlocked(t *testing.T, ctx context.Context, w *Workspace, command string) <-chan string {
	t.Helper()
	ready := filepath.Join(w.Root(), "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	run := findTool(t, w, "run_shell").Run
	done := make(chan string, 1)
	go func() {
		out, err := run(ctx, []byte(fmt.Sprintf(`{"command":%q}`, command)))
		done <- fmt.Sprintf("%s|%v", out, err)
	}()
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(ready) // blocks until the command opens it to write
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case r := <-done:
		t.Fatalf("the command ended early: %s", r)
	}
	return done
}

func TestShellCancelKillsGroup(t *testing.T) {
	w := newTree(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startBlocked(t, ctx, w, "sleep 30 & echo $! > pid; echo x > ready; wait")
	if !w.Busy() {
		t.Error("not busy while the command runs")
	}
	cancel()
	r := <-done
	if !strings.Contains(r, "cancelled (context canceled); the command and its children were stopped") {
		t.Errorf("result after cancel: %q", r)
	}
	waitGone(t, filepath.Join(w.Root(), "pid"))
	if w.Busy() {
		t.Error("busy after the command was cancelled")
	}
}

func TestShellBusy(t *testing.T) {
	w := newTree(t, nil)
	if w.Busy() {
		t.Fatal("busy before any command")
	}
	proceed := filepath.Join(w.Root(), "proceed")
	if err := syscall.Mkfifo(proceed, 0o600); err != nil {
		t.Fatal(err)
	}
	done := startBlocked(t, context.Background(), w, "echo x > ready; read line < proceed; echo got $line")
	if !w.Busy() {
		t.Error("not busy while the command runs")
	}
	f, err := os.OpenFile(proceed, os.O_WRONLY, 0) // blocks until the command reads
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	if r := <-done; r != "exit code 0\ngot go\n|<nil>" {
		t.Errorf("result = %q", r)
	}
	if w.Busy() {
		t.Error("busy after the command ended")
	}
}

func envNames(out string) map[string]string {
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

func TestShellEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-secret")
	t.Setenv("HUB_TEST_TOKEN", "hub-fake-secret")

	// The default: a minimal environment.
	w := newTree(t, nil)
	out := mustCall(t, w, "run_shell", obj{"command": "env"})
	if strings.Contains(out, "fake-secret") {
		t.Fatalf("a secret reached the command:\n%s", out)
	}
	vars := envNames(out)
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TERM": true, "TMPDIR": true, "PWD": true, "SHLVL": true, "_": true, "OLDPWD": true}
	for k := range vars {
		if !allowed[k] {
			t.Errorf("the command sees %s, which the caller did not pass", k)
		}
	}
	if vars["LANG"] != "C.UTF-8" || vars["TERM"] != "dumb" || vars["PATH"] != os.Getenv("PATH") || vars["TMPDIR"] == "" {
		t.Errorf("environment: %v", vars)
	}
	home := vars["HOME"]
	if fi, err := os.Stat(home); err != nil || !fi.IsDir() || home == os.Getenv("HOME") {
		t.Errorf("HOME = %q (%v), want a fresh directory", home, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("Close left the temporary HOME %s", home)
	}

	// The caller's environment, as given, with HOME from Options.Home.
	myHome := t.TempDir()
	w2, err := New(t.TempDir(), &Options{Env: []string{"PATH=" + os.Getenv("PATH"), "FOO=bar baz"}, Home: myHome})
	if err != nil {
		t.Fatal(err)
	}
	out = mustCall(t, w2, "run_shell", obj{"command": "env"})
	vars = envNames(out)
	if vars["FOO"] != "bar baz" || vars["HOME"] != myHome {
		t.Errorf("environment: %v", vars)
	}
	for _, k := range []string{"OPENAI_API_KEY", "HUB_TEST_TOKEN", "LANG", "TERM"} {
		if _, ok := vars[k]; ok {
			t.Errorf("the command sees %s, which the caller did not pass", k)
		}
	}
	w2.Close()
	if _, err := os.Stat(myHome); err != nil {
		t.Errorf("Close removed the caller's Home: %v", err)
	}

	// A HOME in Env wins.
	w3, err := New(t.TempDir(), &Options{Env: []string{"HOME=/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	if out := mustCall(t, w3, "run_shell", obj{"command": "echo $HOME"}); out != "exit code 0\n/nonexistent\n" {
		t.Errorf("HOME from Env: %q", out)
	}
}

// TestShellExitWithChildHoldingOutput: a command that exits while children
// it left hold its output returns its own exit code, not a timeout, and
// soon: the tool reads the output from a pipe of its own (os/exec does not
// wait on it), stops the group, and stops reading after drainWait when a
// child out of the group (its own session) still holds the pipe.
func TestShellExitWithChildHoldingOutput(t *testing.T) {
	w := newTree(t, nil)
	start := time.Now()
	got := mustCall(t, w, "run_shell", obj{"command": "sleep 30 & echo $! > pid; setsid sleep 30 & echo $! > setsid; echo done; exit 4",
		"timeout_s": 60})
	b, err := os.ReadFile(filepath.Join(w.Root(), "setsid"))
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // out of the group's reach: the test ends it
	}
	if got != "exit code 4\ndone\n" {
		t.Errorf("run_shell = %q", got)
	}
	if d := time.Since(start); d > killGrace+drainWait+2*time.Second {
		t.Errorf("took %v", d)
	}
	waitGone(t, filepath.Join(w.Root(), "pid"))
}
