package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hub-agents/hub/hub/limit"
)

// TestMain doubles the test binary as hub: `sandbox.test sandbox-exec
// PLAN -- COMMAND...` is the helper (Exec, as `hub sandbox-exec` runs
// it), and `sandbox.test net-probe CHECK...` is a program to run inside a
// sandbox that tries the network and says what it got.
func TestMain(m *testing.M) {
	if len(os.Args) > 4 && os.Args[1] == "sandbox-exec" && os.Args[3] == "--" {
		fmt.Fprintln(os.Stderr, Exec(os.Args[2], os.Args[4:]))
		os.Exit(126)
	}
	if len(os.Args) > 1 && os.Args[1] == "net-probe" {
		netProbe(os.Args[2:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// netProbe tries each check and prints "CHECK: ok" or "CHECK: error":
// bind:PORT and mptcp:PORT bind a TCP (an MPTCP) socket on 127.0.0.1;
// listen:PORT is Go's net.Listen (MPTCP first, since Go 1.24); connect:PORT
// and mptcp-connect:PORT connect to 127.0.0.1.
func netProbe(checks []string) {
	for _, c := range checks {
		kind, p, _ := strings.Cut(c, ":")
		port, _ := strconv.Atoi(p)
		var err error
		switch kind {
		case "bind", "mptcp":
			proto := unix.IPPROTO_TCP
			if kind == "mptcp" {
				proto = unix.IPPROTO_MPTCP
			}
			err = rawSocket(proto, func(fd int) error {
				if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
					return err
				}
				return unix.Listen(fd, 1)
			})
		case "connect", "mptcp-connect":
			proto := unix.IPPROTO_TCP
			if kind == "mptcp-connect" {
				proto = unix.IPPROTO_MPTCP
			}
			err = rawSocket(proto, func(fd int) error {
				return unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
			})
		case "listen":
			var ln net.Listener
			if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", p)); err == nil {
				ln.Close()
			}
		default:
			err = errors.New("unknown check")
		}
		var errno syscall.Errno
		switch {
		case err == nil:
			fmt.Printf("%s: ok\n", c)
		case errors.As(err, &errno):
			fmt.Printf("%s: %v\n", c, errno)
		default:
			fmt.Printf("%s: %v\n", c, err)
		}
	}
}

func rawSocket(proto int, use func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, proto)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	return use(fd)
}

const envTestMech = "HUB_SANDBOX_TEST_MECH"

// TestBothMechanisms runs TestMechanism once under bubblewrap and once
// under Landlock: Probe picks one per process, so each runs in a test
// process of its own with HUB_SANDBOX set.
func TestBothMechanisms(t *testing.T) {
	if os.Getenv(envTestMech) != "" {
		return // inside one mechanism's run
	}
	for _, mech := range []string{MechBwrap, MechLandlock} {
		t.Run(mech, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMechanism$", "-test.v", "-test.count=1", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), EnvMechanism+"="+mech, envTestMech+"="+mech)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestMechanism") {
				t.Fatalf("under %s: %v\n%s", mech, err, out)
			}
			t.Logf("under %s:\n%s", mech, out)
		})
	}
}

// TestMechanism is TestBothMechanisms' part in one mechanism's process.
func TestMechanism(t *testing.T) {
	mech := os.Getenv(envTestMech)
	if mech == "" {
		t.Skip("TestBothMechanisms runs this once per mechanism, in a process of its own")
	}
	a := Probe()
	if !a.OK || a.Mechanism != mech {
		t.Fatalf("%s=%s: Probe = %+v", EnvMechanism, mech, a)
	}
	t.Logf("%s: %s; port fence: %v %s", a.Mechanism, a.Version, a.PortFence, a.NoPortFenceReason)
	t.Run("ForkBomb", testForkBomb)
	t.Run("FilesStillFenced", testFilesStillFenced)
	t.Run("Ports", testPorts)
	t.Run("UntrustedMPTCP", testUntrustedMPTCP)
}

// self is the test binary: the helper, and the net probe.
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// spec is a sandbox over fresh folders, with the test binary as helper
// and readable.
func spec(t *testing.T, network bool) Spec {
	t.Helper()
	return Spec{Worktree: t.TempDir(), Home: t.TempDir(), Network: network, Helper: self(t), ReadOnly: []string{self(t)}}
}

func command(t *testing.T, s Spec, argv ...string) *exec.Cmd {
	t.Helper()
	full, err := s.Command(argv)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = s.Worktree
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// testForkBomb: a fork bomb through Spec.Command is held at the job's cap
// of 40 tasks, Hit names it, Kill ends everything, and under bubblewrap it
// is bubblewrap, started by the helper, that runs inside the group.
func testForkBomb(t *testing.T) {
	if a := limit.Probe(); !a.Processes.Cgroup {
		t.Fatalf("this test needs cgroups hub can make (root on cgroup v1, or a delegated cgroup v2): %s", a.Processes.Note)
	}
	g, err := limit.New(limit.Scope(t.TempDir()), "bomb", limit.Limits{Processes: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(g.Kill(), g.Remove()); err != nil {
			t.Error(err)
		}
	})
	s := spec(t, false)
	s.Limits = g.Plan()
	cmd := command(t, s, "sh", "-c", `b() { [ "$1" -gt 0 ] || exec sleep 300; while :; do b $(($1-1)) & b $(($1-1)) & wait; done; }; b 9`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := g.Hit()
		if err != nil {
			t.Fatal(err)
		}
		if h.Processes > 0 {
			t.Logf("hit: %s", h)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cap refused no fork in 30 s\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Under bubblewrap the command's own process (the helper's pid) is
	// bubblewrap now, inside the group.
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); Probe().Mechanism == MechBwrap && filepath.Base(exe) != "bwrap" {
		t.Errorf("the command's process runs %q; want bwrap", exe)
	}
	inGroup := func() int {
		n := 0
		for _, d := range g.Cgroups() {
			b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			n += len(strings.Fields(string(b)))
		}
		return n
	}
	if n := inGroup(); n < 10 {
		t.Errorf("only %d processes in the group", n)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if n := inGroup(); n != 0 {
		t.Errorf("%d processes left after Kill", n)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the bomb's command ended well")
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
}

// testFilesStillFenced: with limits and the port fence on the helper, the
// sandbox's file system is what it was: the worktree writable, a file
// beside it unreadable.
func testFilesStillFenced(t *testing.T) {
	g, err := limit.New(limit.Scope(t.TempDir()), "files", limit.Limits{Processes: 256, DiskBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = errors.Join(g.Kill(), g.Remove()) })
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, _ := freeRange(t)
	s := spec(t, true)
	s.Limits, s.Ports = g.Plan(), PortRange{first, first + 9}
	out, err := command(t, s, "sh", "-c", "echo ok > f && cat f").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("writing the worktree: %v\n%s", err, out)
	}
	if out, err := command(t, s, "cat", secret).CombinedOutput(); err == nil {
		t.Errorf("read a file outside the sandbox: %s", out)
	}
	// The disk cap's RLIMIT_FSIZE reached the command.
	out, err = command(t, s, "sh", "-c", "trap '' XFSZ; dd if=/dev/zero of=big bs=64k count=32").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "File too large") {
		t.Errorf("a 2 MiB file under a 1 MiB disk cap: %v\n%s", err, out)
	}
}

// freeRange finds ten free ports from first, and a free port out (five
// below) outside them, in hub's pool.
func freeRange(t *testing.T) (first, out int) {
	t.Helper()
	free := func(p int) bool {
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
next:
	for first = 20010; first < 30000; first += 10 {
		for p := first - 5; p < first+10; p++ {
			if !free(p) {
				continue next
			}
		}
		return first, first - 5
	}
	t.Fatal("no free port range in 20000-29999")
	return 0, 0
}

// testPorts: at isolated, the sandbox binds its own range and port 0, and
// nothing else — not by plain TCP, not by Multipath TCP, not by Go's
// net.Listen — while connecting elsewhere stays free.
func testPorts(t *testing.T) {
	a := Probe()
	if !a.PortFence {
		t.Fatalf("the port fence is not available here: %s", a.NoPortFenceReason)
	}
	first, out := freeRange(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	there := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	o, i := strconv.Itoa(out), strconv.Itoa(first)
	checks := []string{"bind:" + o, "mptcp:" + o, "listen:" + o, "bind:" + i, "listen:" + strconv.Itoa(first+9), "bind:0", "connect:" + there}
	want := map[string]string{
		"bind:" + o: "permission denied", "mptcp:" + o: "protocol not supported", "listen:" + o: "permission denied",
		"bind:" + i: "ok", "listen:" + strconv.Itoa(first+9): "ok", "bind:0": "ok", "connect:" + there: "ok",
	}
	s := spec(t, true)
	s.Ports = PortRange{first, first + 9}
	got := probeNet(t, s, checks)
	for _, c := range checks {
		if got[c] != want[c] {
			t.Errorf("fenced to %d-%d, %s: %q; want %q", first, first+9, c, got[c], want[c])
		}
	}
	// Without a range nothing is fenced.
	s.Ports = PortRange{}
	if got := probeNet(t, s, []string{"bind:" + o}); got["bind:"+o] != "ok" {
		t.Errorf("unfenced, bind:%s: %q", o, got["bind:"+o])
	}
}

// testUntrustedMPTCP: at untrusted nothing reaches the host's loopback,
// Multipath TCP included (under Landlock, it is the seccomp filter's).
func testUntrustedMPTCP(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	there := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	got := probeNet(t, spec(t, false), []string{"connect:" + there, "mptcp-connect:" + there})
	for c, r := range got {
		if r == "ok" {
			t.Errorf("untrusted, %s: ok", c)
		}
	}
	if Probe().Mechanism == MechLandlock && got["mptcp-connect:"+there] != "protocol not supported" {
		t.Errorf("untrusted under Landlock, an MPTCP connect: %q; want the filter's refusal", got["mptcp-connect:"+there])
	}
}

func probeNet(t *testing.T, s Spec, checks []string) map[string]string {
	t.Helper()
	out, err := command(t, s, append([]string{self(t), "net-probe"}, checks...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("net-probe: %v\n%s", err, out)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if c, r, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			got[c] = r
		}
	}
	return got
}

// TestMPTCPFilter: the seccomp program decides as meant for each
// architecture hub has one for (the kernel then runs it on this one, in
// TestBothMechanisms).
func TestMPTCPFilter(t *testing.T) {
	for arch, a := range seccompArchs {
		prog, err := mptcpFilter(a)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		deny := unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)
		cases := []filterCase{
			{a.native, a.socket[0], [3]uint32{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, deny},
			{a.native, a.socket[0], [3]uint32{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, deny},
			{a.native, a.socket[0], [3]uint32{unix.AF_INET, unix.SOCK_STREAM, 0}, unix.SECCOMP_RET_ALLOW},
			{a.native, a.socket[0], [3]uint32{unix.AF_UNIX, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, unix.SECCOMP_RET_ALLOW},
			{a.native, a.socket[0] + 1, [3]uint32{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, unix.SECCOMP_RET_ALLOW},
			{a.native + 1, a.socket[0], [3]uint32{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, unix.SECCOMP_RET_ALLOW},
		}
		if a.compat != 0 {
			cases = append(cases, filterCase{a.compat, a.compatSocket, [3]uint32{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, deny})
		}
		if a.compatSocketcall != 0 {
			cases = append(cases, filterCase{a.compat, a.compatSocketcall, [3]uint32{1 /* SYS_SOCKET */, 0, 0}, deny},
				filterCase{a.compat, a.compatSocketcall, [3]uint32{3 /* SYS_CONNECT */, 0, 0}, unix.SECCOMP_RET_ALLOW})
		}
		for _, c := range cases {
			if got := runBPF(t, prog, c.arch, c.nr, c.args); got != c.want {
				t.Errorf("%s: arch %#x nr %d args %v: %#x; want %#x", arch, c.arch, c.nr, c.args, got, c.want)
			}
		}
	}
}

// filterCase is a syscall and what the filter should answer.
type filterCase struct {
	arch, nr uint32
	args     [3]uint32
	want     uint32
}

// runBPF interprets the few classic BPF instructions mptcpFilter emits
// over a seccomp_data.
func runBPF(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args [3]uint32) uint32 {
	t.Helper()
	data := map[uint32]uint32{offNr: nr, offArch: arch, offArg0: args[0], offArg2: args[2]}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = data[in.K]
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected instruction %+v", in)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}
