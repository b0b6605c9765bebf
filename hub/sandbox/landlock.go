package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/hub-agents/hub/hub/limit"
)

// Landlock is the fallback where bubblewrap cannot make namespaces: the
// worker's process restricts itself (through `hub sandbox-exec`, a helper
// that hub re-executes) before it runs the command. It fences the file
// system the same way — the system read-only, the worktree and the git paths
// a commit needs writable, a private HOME and TMPDIR, nothing else, /proc
// included — and, for untrusted, every TCP connection and bind (Landlock
// ABI 4 and later). It has no namespaces: the worker sees the machine's
// process list, though not what /proc holds about them, and Landlock
// before ABI 6 does not fence unix sockets by path.
//
// The same helper fences an isolated job's TCP binds to its own ports (a
// Landlock domain that handles BIND_TCP only, with rules for the range and
// port 0), under Landlock and, before it execs bubblewrap, under
// bubblewrap too: a domain that handles no file system access leaves
// bubblewrap's mounts alone (tested). Landlock holds classic TCP only, so
// wherever it restricts TCP a seccomp filter also refuses Multipath TCP
// sockets (seccomp_linux.go). And the helper joins the job's limits
// (hub/limit) before anything else, under either mechanism.

// MinNetABI is the first Landlock ABI that can forbid TCP connections.
const MinNetABI = 4

func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

func probeLandlock() Availability {
	abi := landlockABI()
	if abi < 1 {
		return Availability{Reason: "Landlock is not enabled in this kernel (it needs CONFIG_SECURITY_LANDLOCK and landlock in the lsm= list)"}
	}
	a := Availability{OK: true, Mechanism: MechLandlock, Version: fmt.Sprintf("Landlock ABI %d", abi), Network: abi >= MinNetABI}
	if !a.Network {
		a.NoNetworkReason = fmt.Sprintf("Landlock ABI %d cannot forbid network connections (ABI %d can)", abi, MinNetABI)
	}
	a.PortFence, a.NoPortFenceReason = portFence(false)
	return a
}

// portFence says whether an isolated job can be held to its own TCP ports
// here, and why not. setuidBwrap: bubblewrap is installed setuid, which the
// fence's no_new_privs would disarm.
func portFence(setuidBwrap bool) (bool, string) {
	const unfenced = "ports are not fenced at isolated, so a job there may listen on any port of the host, other jobs' ranges included: "
	switch abi := landlockABI(); {
	case abi < 1:
		return false, unfenced + "the fence is Landlock's, and this kernel has no Landlock"
	case abi < MinNetABI:
		return false, unfenced + fmt.Sprintf("this kernel's Landlock (ABI %d) cannot restrict TCP binds (ABI %d, Linux 6.7, can)", abi, MinNetABI)
	case !mptcpFilterable():
		return false, unfenced + "Landlock does not hold Multipath TCP, and hub has no seccomp filter against it on " + runtime.GOARCH
	case setuidBwrap:
		return false, unfenced + "bubblewrap is installed setuid, and the fence (Landlock sets no_new_privs) would stop its setuid from working"
	}
	return true, ""
}

// plan is what `hub sandbox-exec` enforces; it travels as JSON in one argument.
type plan struct {
	RODirs  []string `json:"ro_dirs"`
	ROFiles []string `json:"ro_files"`
	RWDirs  []string `json:"rw_dirs"`
	RWFiles []string `json:"rw_files"`
	NoNet   bool     `json:"no_net"`
	Dir     string   `json:"dir"`
	Env     []string `json:"env"` // set on top of the inherited environment
	// Wrap: the command is bubblewrap, which does the file system (and,
	// for untrusted, the network): no Landlock file system rules, no
	// chdir, no environment; only Limits and Ports. False (a plan of an
	// older hub too): the full Landlock sandbox above.
	Wrap bool `json:"wrap,omitempty"`
	// Limits are joined first, before anything runs (hub/limit).
	Limits limit.Plan `json:"limits,omitzero"`
	// Ports, when not zero, is the only TCP range the command may bind
	// (and port 0); connecting stays free.
	Ports PortRange `json:"ports,omitzero"`
}

// landlockCommand is Command for Landlock: the helper, the plan, then argv.
func (s Spec) landlockCommand(argv []string) ([]string, error) {
	if s.Helper == "" {
		return nil, errors.New("sandbox: Landlock needs hub's binary to re-execute (Spec.Helper)")
	}
	tmp := filepath.Join(s.Home, ".tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	p := plan{NoNet: !s.Network, Dir: s.Worktree, Env: []string{"HOME=" + s.Home, "TMPDIR=" + tmp},
		RWFiles: []string{"/dev/null", "/dev/zero", "/dev/full"}, ROFiles: []string{"/dev/urandom", "/dev/random"}, Limits: s.Limits}
	if s.fencePorts(Probe()) {
		p.Ports = s.Ports
	}
	add := func(path string, rw bool) {
		fi, err := os.Stat(path)
		switch {
		case err != nil:
		case fi.IsDir() && rw:
			p.RWDirs = append(p.RWDirs, path)
		case fi.IsDir():
			p.RODirs = append(p.RODirs, path)
		case rw:
			p.RWFiles = append(p.RWFiles, path)
		default:
			p.ROFiles = append(p.ROFiles, path)
		}
	}
	for _, d := range systemDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			add(d, false)
		}
	}
	for _, f := range etcFiles {
		add(filepath.Join("/etc", f), false)
	}
	for _, r := range append(slices.Clone(s.Objects), s.ReadOnly...) {
		add(r, false)
	}
	rw := []string{s.Worktree, s.Home}
	if s.GitDir != "" {
		rw = append(rw, s.GitDir)
	}
	for _, d := range append(rw, s.Writable...) {
		add(d, true)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append([]string{s.Helper, "sandbox-exec", string(b), "--"}, argv...), nil
}

// Exec enforces a plan made by Command on the calling process and then
// replaces it with argv. `hub sandbox-exec` calls it; it returns only on
// failure, and never runs argv with less than the plan says. In order: it
// joins the job's limits (before a Landlock file system domain would
// forbid writing to the cgroups), restricts itself, and sets the rlimits
// last (a low RLIMIT_DATA would starve its own Go heap).
func Exec(planJSON string, argv []string) error {
	var p plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		return fmt.Errorf("sandbox-exec: bad plan: %w", err)
	}
	if len(argv) == 0 {
		return errors.New("sandbox-exec: no command")
	}
	if err := p.Ports.validate(); err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	if err := p.Limits.Join(); err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	var err error
	if p.Wrap {
		err = p.fencePorts()
	} else {
		err = p.restrict()
	}
	if err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	if !p.Wrap && p.Dir != "" {
		if err := os.Chdir(p.Dir); err != nil {
			return fmt.Errorf("sandbox-exec: %w", err)
		}
	}
	env := os.Environ()
	if !p.Wrap {
		env = append(env, p.Env...)
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	if err := p.Limits.SetRlimits(); err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	return syscall.Exec(path, argv, env)
}

// portRules are the binds a fenced command may make: its range, and port
// 0 (bind(0) asks the kernel for an ephemeral port, which Landlock checks
// as port 0; without the rule it is refused).
func (p plan) portRules() []landlock.Rule {
	rules := []landlock.Rule{landlock.BindTCP(0)}
	for port := p.Ports.First; port <= p.Ports.Last; port++ {
		rules = append(rules, landlock.BindTCP(uint16(port)))
	}
	return rules
}

// fencePorts is the fence before bubblewrap: a Landlock domain that
// handles TCP binds only (no file system access, so bubblewrap can still
// mount; no connect, so the network stays the host's), and the Multipath
// TCP filter.
func (p plan) fencePorts() error {
	if p.Ports.Zero() {
		return nil
	}
	if abi := landlockABI(); abi < MinNetABI {
		return fmt.Errorf("Landlock ABI %d cannot fence TCP ports; refusing to run unfenced", abi)
	}
	cfg := landlock.Config{HandledAccessNet: llsys.AccessNetBindTCP}
	if err := cfg.Restrict(p.portRules()...); err != nil {
		return fmt.Errorf("fence ports: %w", err)
	}
	if err := denyMPTCP(); err != nil {
		return fmt.Errorf("fence ports: %w", err)
	}
	return nil
}

// restrict is the Landlock sandbox: the file system, and TCP for untrusted
// (all of it) or for a fenced isolated job (binds outside its ports).
func (p plan) restrict() error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("Landlock is not available; refusing to run unrestricted")
	}
	if (p.NoNet || !p.Ports.Zero()) && abi < MinNetABI {
		return fmt.Errorf("Landlock ABI %d cannot restrict TCP; refusing to run", abi)
	}
	// Refer: git renames files across folders (objects, locks).
	rules := []landlock.Rule{
		landlock.RODirs(p.RODirs...),
		landlock.ROFiles(p.ROFiles...).IgnoreIfMissing(),
		landlock.RWDirs(p.RWDirs...).WithRefer(),
		landlock.RWFiles(p.RWFiles...).IgnoreIfMissing(),
	}
	// Best effort only over which rights a newer ABI adds: the ABI is
	// checked above, so the file system (and, when asked, TCP) is
	// restricted; from ABI 6 also signals to processes outside the sandbox
	// (the shim, the daemon, other jobs) and abstract unix sockets made
	// outside it.
	cfg := landlock.V7.BestEffort()
	switch {
	case p.NoNet: // no network rules: every TCP bind and connect is refused
	case !p.Ports.Zero():
		cfg.HandledAccessNet = llsys.AccessNetBindTCP // binds outside the range are refused
		rules = append(rules, p.portRules()...)
	default:
		cfg.HandledAccessNet = 0 // isolated keeps the network
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	if p.NoNet || !p.Ports.Zero() {
		// Landlock does not hold Multipath TCP. Where hub has no filter for
		// the architecture, untrusted runs as before (Availability says the
		// ports are not fenced, so no range is asked for there).
		if err := denyMPTCP(); err != nil && !(p.NoNet && errors.Is(err, errNoFilter)) {
			return fmt.Errorf("restrict: %w", err)
		}
	}
	return nil
}

// lookPath finds argv0 on the PATH of env (the worker's, not hub's).
func lookPath(argv0 string, env []string) (string, error) {
	if filepath.IsAbs(argv0) || filepath.Base(argv0) != argv0 {
		return argv0, nil
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, argv0)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on the worker's PATH", argv0)
}
