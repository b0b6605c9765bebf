// Package sandbox runs a worker's commands under bubblewrap, for the
// isolated and untrusted levels: a read-only system, the worktree writable,
// only the git paths a commit needs, a private HOME and /tmp, its own PID
// namespace (so /proc shows nothing of the parent), no other repositories,
// no ~/.ssh, no hub config or keys — and, for untrusted, no network.
//
// Where bubblewrap cannot make namespaces it falls back to Landlock (see
// landlock.go). It never downgrades further: when neither works here, Probe
// says why and the level is refused.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
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

func probe() Availability {
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
	return Availability{OK: true, Mechanism: MechBwrap, Version: strings.TrimSpace(string(ver)), Network: true}
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
	// Branch is the job's branch (hub/<id>): the only ref the worker can
	// move (under bubblewrap; Landlock cannot hide the other refs). Inside, refs/heads/hub holds just it, in a private folder;
	// SyncBranch carries its moves to the real ref after the run.
	Branch string
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
	ro, rw, err := gitPaths(s.Worktree, s.Branch)
	if err != nil {
		return nil, err
	}
	for _, p := range s.ReadOnly {
		ro = append(ro, [2]string{p, p})
	}
	for _, m := range ro {
		args = append(args, "--ro-bind", m[0], m[1])
	}
	rw = append([][2]string{{s.Worktree, s.Worktree}}, rw...)
	for _, p := range s.Writable {
		rw = append(rw, [2]string{p, p})
	}
	for _, m := range rw {
		args = append(args, "--bind", m[0], m[1])
	}
	args = append(args, "--chdir", s.Worktree, "--setenv", "HOME", s.Home, "--setenv", "TMPDIR", "/tmp", "--")
	return append(args, argv...), nil
}

// gitPaths finds what a commit in the linked worktree at wt needs: the
// common git dir read-only (config, HEAD, packed refs, every ref — main
// included), and writable its objects, the worktree's own admin folder
// (index, HEAD) and a private stand-in for refs/heads/hub holding only the
// job's branch (and its log). It returns mounts as pairs: ro and rw are
// lists of [source, target].
func gitPaths(wt, branch string) (ro, rw [][2]string, err error) {
	gitdir, common, err := gitDirs(wt)
	if err != nil {
		return nil, nil, err
	}
	priv, err := prepareBranch(gitdir, common, branch)
	if err != nil {
		return nil, nil, err
	}
	ro = [][2]string{{common, common}}
	objects := filepath.Join(common, "objects")
	rw = [][2]string{{objects, objects}, {gitdir, gitdir}}
	for _, d := range []struct{ src, dst string }{
		{filepath.Join(priv, "refs"), filepath.Join(common, "refs", "heads", "hub")},
		{filepath.Join(priv, "logs"), filepath.Join(common, "logs", "refs", "heads", "hub")},
	} {
		// The mount point must exist in the real tree: the common dir is read-only inside.
		if err := os.MkdirAll(d.dst, 0o755); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
		rw = append(rw, [2]string{d.src, d.dst})
	}
	return ro, rw, nil
}

// gitDirs reads a linked worktree's .git file: its own git dir and the
// repository's common dir, as the paths are written there. Not gitx's
// lookup, which resolves symlinks: git inside the sandbox follows the paths
// as written, so those are the ones to mount.
func gitDirs(wt string) (gitdir, common string, err error) {
	b, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		return "", "", fmt.Errorf("sandbox: %s is not a linked worktree: %w", wt, err)
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", "", fmt.Errorf("sandbox: %s/.git does not name a git dir", wt)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(wt, gitdir)
	}
	common = filepath.Dir(filepath.Dir(gitdir)) // <common>/worktrees/<name>
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gitdir, cd)
		}
		common = filepath.Clean(cd)
	}
	return gitdir, common, nil
}

// privateDir is where a worktree's private refs/heads/hub lives: inside its
// own admin folder, so whoever has the worktree can find it.
func privateDir(gitdir string) string { return filepath.Join(gitdir, "hub-sandbox") }

// prepareBranch makes the private refs/heads/hub: empty, plus the job's
// branch at its real tip.
func prepareBranch(gitdir, common, branch string) (string, error) {
	priv := privateDir(gitdir)
	if err := os.RemoveAll(priv); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	for _, d := range []string{"refs", "logs"} {
		if err := os.MkdirAll(filepath.Join(priv, d), 0o755); err != nil {
			return "", fmt.Errorf("sandbox: %w", err)
		}
	}
	leaf, ok := strings.CutPrefix(branch, "hub/")
	if branch == "" || !ok || leaf == "" || strings.Contains(leaf, "/") {
		return priv, nil // a detached checkout: no branch to move
	}
	out, err := gitx.Git(context.Background(), common, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("sandbox: branch %s: %w", branch, err)
	}
	if err := os.WriteFile(filepath.Join(priv, "refs", leaf), append(bytes.TrimSpace(out), '\n'), 0o644); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return priv, nil
}

// SyncBranch carries what the worker did to its branch inside the sandbox
// to the real ref: the private tip, if it moved, becomes the branch's tip
// (git checks it is a commit). It is a no-op for a worktree that never ran
// sandboxed. It reports whether the branch moved.
func SyncBranch(ctx context.Context, wt, branch string) (bool, error) {
	gitdir, common, err := gitDirs(wt)
	if err != nil {
		return false, nil // no linked worktree: nothing ran sandboxed here
	}
	leaf, ok := strings.CutPrefix(branch, "hub/")
	if !ok || leaf == "" {
		return false, nil
	}
	b, err := os.ReadFile(filepath.Join(privateDir(gitdir), "refs", leaf))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("sandbox: %w", err)
	}
	tip := strings.TrimSpace(string(b))
	cur, err := gitx.Git(ctx, common, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return false, fmt.Errorf("sandbox: branch %s: %w", branch, err)
	}
	if tip == strings.TrimSpace(string(cur)) {
		return false, nil
	}
	if _, err := gitx.Git(ctx, common, "update-ref", "-m", "hub: the worker's commits in its sandbox", "refs/heads/"+branch, tip, strings.TrimSpace(string(cur))); err != nil {
		return false, fmt.Errorf("sandbox: carry %s to %s: %w", branch, tip, err)
	}
	return true, nil
}
