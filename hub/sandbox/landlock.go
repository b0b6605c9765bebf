package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
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
	return a
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
		RWFiles: []string{"/dev/null", "/dev/zero", "/dev/full"}, ROFiles: []string{"/dev/urandom", "/dev/random"}}
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
// failure, and never runs argv unrestricted.
func Exec(planJSON string, argv []string) error {
	var p plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		return fmt.Errorf("sandbox-exec: bad plan: %w", err)
	}
	if len(argv) == 0 {
		return errors.New("sandbox-exec: no command")
	}
	abi := landlockABI()
	if abi < 1 {
		return errors.New("sandbox-exec: Landlock is not available; refusing to run unrestricted")
	}
	if p.NoNet && abi < MinNetABI {
		return fmt.Errorf("sandbox-exec: Landlock ABI %d cannot forbid network connections; refusing to run", abi)
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
	if !p.NoNet {
		cfg.HandledAccessNet = 0 // isolated keeps the network
	} // else no network rules: every TCP bind and connect is refused
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("sandbox-exec: restrict: %w", err)
	}
	if p.Dir != "" {
		if err := os.Chdir(p.Dir); err != nil {
			return fmt.Errorf("sandbox-exec: %w", err)
		}
	}
	env := os.Environ()
	env = append(env, p.Env...)
	path, err := lookPath(argv[0], env)
	if err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	return syscall.Exec(path, argv, env)
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
