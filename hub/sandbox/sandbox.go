// Package sandbox runs a worker's commands under bubblewrap, for the
// isolated and untrusted levels: a read-only system, the worktree writable,
// only the git paths a commit needs, a private HOME and /tmp, its own PID
// namespace (so /proc shows nothing of the parent), no other repositories,
// no ~/.ssh, no hub config or keys — and, for untrusted, no network.
//
// It never downgrades: when bubblewrap is missing or user namespaces do not
// work here, Probe says why and the level is refused.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Availability says whether the sandbox works on this machine, and why not.
type Availability struct {
	OK      bool
	Version string // "bubblewrap 0.8.0"
	Reason  string // why not, with what to do
}

var (
	probeOnce sync.Once
	probed    Availability
)

// Probe checks, once per process, that bubblewrap is installed and can make
// the namespaces the sandbox needs (hosts that forbid unprivileged user
// namespaces make it fail).
func Probe() Availability {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Availability {
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
	return Availability{OK: true, Version: strings.TrimSpace(string(ver))}
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

// Command returns argv for running argv inside the sandbox, with the git
// paths the worktree's commits need made writable.
func (s Spec) Command(argv []string) ([]string, error) {
	if a := Probe(); !a.OK {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, a.Reason)
	}
	if s.Worktree == "" || s.Home == "" {
		return nil, errors.New("sandbox: worktree and home are required")
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
	ro, rw, err := gitPaths(s.Worktree)
	if err != nil {
		return nil, err
	}
	for _, p := range append(ro, s.ReadOnly...) {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--bind", s.Worktree, s.Worktree)
	for _, p := range append(rw, s.Writable...) {
		args = append(args, "--bind", p, p)
	}
	args = append(args, "--chdir", s.Worktree, "--setenv", "HOME", s.Home, "--setenv", "TMPDIR", "/tmp", "--")
	return append(args, argv...), nil
}

// gitPaths finds what a commit in the linked worktree at wt needs: the
// common git dir read-only (config, HEAD, packed refs), and writable its
// objects, the worktree's own admin folder (index, HEAD) and the folders of
// hub's branches and their logs. Every other ref — main included — stays
// read-only.
func gitPaths(wt string) (ro, rw []string, err error) {
	b, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %s is not a linked worktree: %w", wt, err)
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return nil, nil, fmt.Errorf("sandbox: %s/.git does not name a git dir", wt)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(wt, gitdir)
	}
	common := filepath.Dir(filepath.Dir(gitdir)) // <common>/worktrees/<name>
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gitdir, cd)
		}
		common = filepath.Clean(cd)
	}
	ro = []string{common}
	rw = []string{filepath.Join(common, "objects"), gitdir}
	for _, d := range []string{filepath.Join(common, "refs", "heads", "hub"), filepath.Join(common, "logs", "refs", "heads", "hub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
		rw = append(rw, d)
	}
	return ro, rw, nil
}
