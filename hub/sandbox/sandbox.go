// Package sandbox runs a worker's commands under bubblewrap, for the
// isolated and untrusted levels: a read-only system, the worktree and its
// private git dir writable, the user's object store readable and nothing
// else of the repository, a private HOME and /tmp, its own PID namespace
// (so /proc shows nothing of the parent), no other repositories, no
// ~/.ssh, no hub config or keys — and, for untrusted, no network.
//
// Where bubblewrap cannot make namespaces it falls back to Landlock (see
// landlock.go). It never downgrades further: when neither works here, Probe
// says why and the level is refused.
//
// Two more fences ride on hub's helper (`hub sandbox-exec`, which runs
// first and execs the command — or bubblewrap — in its own place): the
// job's limits (Spec.Limits, from hub/limit: the helper joins the job's
// cgroups and sets its rlimits before anything of the command runs) and,
// at isolated, the job's TCP ports (Spec.Ports: a Landlock domain that
// handles binds only, so the job cannot take the other jobs' ports on the
// host's network it shares).
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
)

// Mechanisms, and the variable that picks one (empty: bubblewrap, else Landlock).
const (
	MechBwrap    = "bwrap"
	MechLandlock = "landlock"
	EnvMechanism = "HUB_SANDBOX"
)

// Availability says whether the sandbox works on this machine, and why not.
type Availability struct {
	OK        bool
	Mechanism string // bwrap or landlock
	Version   string // "bubblewrap 0.8.0", "Landlock ABI 7"
	Reason    string // why not, with what to do
	// Network says it can also cut the worker's network (untrusted);
	// NoNetworkReason says why not.
	Network         bool
	NoNetworkReason string
	// PortFence says it can hold an isolated job to its own TCP ports
	// (Spec.Ports); NoPortFenceReason says why not. The job then runs
	// unfenced: never refused for it.
	PortFence         bool
	NoPortFenceReason string
}

var (
	probeOnce sync.Once
	probed    Availability
)

// Probe finds, once per process, the mechanism that works here: bubblewrap
// when it is installed and can make the namespaces the sandbox needs (hosts
// that forbid unprivileged user namespaces make it fail), else Landlock.
// HUB_SANDBOX=bwrap or landlock asks for one only.
func Probe() Availability {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Availability { return probeFor(runtime.GOOS) }

// probeFor is probe as it goes on the platform goos: refused by Refusal
// first, else what the machine can do.
func probeFor(goos string) Availability {
	if r := Refusal(goos, protocol.IsolationIsolated); r != "" {
		return Availability{Reason: r}
	}
	switch m := os.Getenv(EnvMechanism); m {
	case MechBwrap:
		return probeBwrap()
	case MechLandlock:
		return probeLandlock()
	case "":
		b := probeBwrap()
		if b.OK {
			return b
		}
		l := probeLandlock()
		if l.OK {
			return l
		}
		return Availability{Reason: b.Reason + "; and " + l.Reason}
	default:
		return Availability{Reason: fmt.Sprintf("%s=%q: use %s or %s, or leave it unset", EnvMechanism, m, MechBwrap, MechLandlock)}
	}
}

func probeBwrap() Availability {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return Availability{Reason: "bubblewrap is not installed: install it (apt-get install bubblewrap) for the isolated and untrusted levels"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ver, _ := exec.CommandContext(ctx, bin, "--version").Output()
	out, err := exec.CommandContext(ctx, bin, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
		"--dev", "/dev", "true").CombinedOutput()
	if err != nil {
		return Availability{Reason: fmt.Sprintf("bubblewrap cannot make namespaces here (%s): enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or AppArmor's userns restriction off)",
			strings.TrimSpace(firstLine(string(out), err.Error())))}
	}
	a := Availability{OK: true, Mechanism: MechBwrap, Version: strings.TrimSpace(string(ver)), Network: true}
	setuid := false
	if fi, err := os.Stat(bin); err == nil {
		setuid = fi.Mode()&os.ModeSetuid != 0
	}
	a.PortFence, a.NoPortFenceReason = portFence(setuid)
	return a
}

func firstLine(s, fallback string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return fallback
	}
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Spec is what one sandboxed run may see.
type Spec struct {
	// Worktree is the job's checkout: the only writable place of the repo,
	// and the working directory.
	Worktree string
	// Home is a private folder that becomes HOME (and holds only the
	// engine's own state).
	Home string
	// Network keeps the host's network (isolated); false gives the sandbox
	// only its own loopback (untrusted).
	Network bool
	// ReadOnly are files or folders the worker may read (the hub binary,
	// the shim's socket, an engine's own binary).
	ReadOnly []string
	// Writable are extra folders it may write (an engine's own state).
	Writable []string
	// Helper is hub's binary, which Landlock re-executes as `hub
	// sandbox-exec` to restrict itself before it runs the command.
	Helper string
	// GitDir is the checkout's private git dir (writable: the worker's
	// commits go there), and Objects the object stores it borrows from the
	// user's repository (readable). Nothing else of the repository is
	// there: no refs, no config, no other job's worktree. Both come from
	// hub's record of the checkout, never from the worktree's .git.
	GitDir  string
	Objects []string
	// Limits is the job's budget (hub/limit's Group.Plan): the command
	// joins the job's cgroups and takes its rlimits before any of it runs,
	// so every process it starts is inside. It needs Helper. Zero: none.
	Limits limit.Plan
	// Ports is the job's TCP port range (HUB_PORTS). At isolated (Network),
	// where the sandbox shares the host's network, it may then bind TCP
	// only on these ports and on port 0 (an ephemeral port the kernel
	// picks, outside hub's pool), when Probe's PortFence says this machine
	// can; connecting stays free. untrusted needs no fence: it has no
	// network to bind in. It needs Helper. Zero: not fenced.
	Ports PortRange
}

// PortRange is First to Last, both included.
type PortRange struct{ First, Last int }

// Zero reports whether r is no range.
func (r PortRange) Zero() bool { return r == PortRange{} }

func (r PortRange) validate() error {
	if r.Zero() || (1 <= r.First && r.First <= r.Last && r.Last <= 65535) {
		return nil
	}
	return fmt.Errorf("sandbox: bad port range %d-%d", r.First, r.Last)
}

// fencePorts reports whether s's command is held to its ports: at
// isolated, with a range, where the machine can.
func (s Spec) fencePorts(a Availability) bool {
	return s.Network && !s.Ports.Zero() && a.PortFence
}

// systemDirs are bound read-only when they are real folders; merged-/usr
// links (/bin → usr/bin) are recreated as links.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// etcFiles are the parts of /etc programs need to run and reach the
// network; the rest of /etc (shadow files, other services' secrets) stays out.
var etcFiles = []string{
	"passwd", "group", "hosts", "hostname", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"ssl", "ca-certificates", "ca-certificates.conf", "pki", "alternatives", "ld.so.cache", "ld.so.conf",
	"ld.so.conf.d", "localtime", "timezone", "gitconfig", "mime.types", "services", "protocols",
	"os-release", "debian_version", "profile", "bash.bashrc", "inputrc", "environment", "login.defs",
}

// ErrUnavailable: the sandbox does not work here; Probe says why.
var ErrUnavailable = errors.New("sandbox unavailable")

// Command returns argv for running argv inside the sandbox.
func (s Spec) Command(argv []string) ([]string, error) {
	a := Probe()
	if !a.OK {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, a.Reason)
	}
	if !s.Network && !a.Network {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, a.NoNetworkReason)
	}
	if s.Worktree == "" || s.Home == "" {
		return nil, errors.New("sandbox: worktree and home are required")
	}
	if err := s.Ports.validate(); err != nil {
		return nil, err
	}
	if a.Mechanism == MechLandlock {
		return s.landlockCommand(argv)
	}
	args := []string{"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--hostname", "hub-sandbox"}
	if s.Network {
		args = append(args, "--share-net")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		p := filepath.Join("/etc", f)
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", p, p)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	args = append(args, "--bind", s.Home, s.Home)
	for _, p := range append(slices.Clone(s.Objects), s.ReadOnly...) {
		args = append(args, "--ro-bind", p, p)
	}
	rw := []string{s.Worktree}
	if s.GitDir != "" {
		rw = append(rw, s.GitDir)
	}
	for _, p := range append(rw, s.Writable...) {
		args = append(args, "--bind", p, p)
	}
	args = append(args, "--chdir", s.Worktree, "--setenv", "HOME", s.Home, "--setenv", "TMPDIR", "/tmp", "--")
	args = append(args, argv...)
	fence := s.fencePorts(a)
	if s.Limits.Empty() && !fence {
		return args, nil
	}
	// The helper joins the limits and fences the ports, then execs
	// bubblewrap, which does the file system and the namespaces.
	if s.Helper == "" {
		return nil, errors.New("sandbox: limits and the port fence need hub's binary to re-execute (Spec.Helper)")
	}
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	args[0] = bin
	p := plan{Wrap: true, Limits: s.Limits}
	if fence {
		p.Ports = s.Ports
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append([]string{s.Helper, "sandbox-exec", string(b), "--"}, args...), nil
}
