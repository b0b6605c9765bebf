// Package limit caps what one job may take of the machine at the isolated
// and untrusted levels: its processes, its memory and its disk. The caps are
// per job — every sandboxed command of a job (setup, the worker, each of the
// built-in worker's shell commands, verify) joins the job's one Group — and
// the kernel enforces them where hub can ask it to:
//
//   - cgroups, where this process can make them: cgroup v2 below a delegated
//     ancestor (systemd's user@UID.service on a desktop), else the writable
//     cgroup v1 pids and memory hierarchies. Job groups are made below the
//     process's own cgroup (v1) or beside it in a hub.slice (v2), so a limit
//     on hub itself still applies to its jobs.
//   - rlimits, for what no cgroup covers: RLIMIT_NPROC and RLIMIT_DATA then,
//     and RLIMIT_FSIZE always (no single file may outgrow the job's disk).
//   - the job's disk as a whole has no kernel cap hub can set unprivileged:
//     Usage measures it, and the shim polls it and ends the job over the cap.
//
// A command joins its job's groups with no race: hub's helper (`hub
// sandbox-exec`, see hub/sandbox) writes its own pid into each group and
// sets the rlimits (Plan.Apply) before it execs anything, so every process
// the command starts is born inside.
//
// This package owns the groups' lifetime (New, Hit, Kill, Remove, Sweep) and
// the measurement of disk use; it never decides what a job may do — the
// shim does — and it never touches a cgroup it did not name (every name
// starts with a Scope, one per HUB_HOME).
package limit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Limits is a job's budget. A zero field is no cap on that resource.
type Limits struct {
	// Processes caps the job's tasks: processes and their threads alike
	// (pids.max counts tasks), so a multithreaded runtime such as Go, Java
	// or Node takes several each.
	Processes int
	// MemoryBytes caps the memory of all the job's processes together
	// (with a memory cgroup; else of each process, see Availability).
	MemoryBytes int64
	// DiskBytes caps what the job writes under its folders (Usage), and
	// the size of any one file it writes (RLIMIT_FSIZE).
	DiskBytes int64
}

// The smallest caps that let a command start at all: the helper, bwrap, a
// shell and the command are several tasks; a shell and git need some MiB.
const (
	MinProcesses   = 16
	MinMemoryBytes = 16 << 20
	MinDiskBytes   = 1 << 20
)

// Validate says what is wrong with l, nil when nothing is.
func (l Limits) Validate() error {
	var errs []error
	switch {
	case l.Processes < 0 || l.MemoryBytes < 0 || l.DiskBytes < 0:
		errs = append(errs, errors.New("limits cannot be negative (0 is no cap)"))
	default:
		if l.Processes > 0 && l.Processes < MinProcesses {
			errs = append(errs, fmt.Errorf("a cap of %d processes is too small: a sandboxed command needs at least %d (threads count as processes)", l.Processes, MinProcesses))
		}
		if l.MemoryBytes > 0 && l.MemoryBytes < MinMemoryBytes {
			errs = append(errs, fmt.Errorf("a memory cap of %s is too small: at least %s", bytesString(l.MemoryBytes), bytesString(MinMemoryBytes)))
		}
		if l.DiskBytes > 0 && l.DiskBytes < MinDiskBytes {
			errs = append(errs, fmt.Errorf("a disk cap of %s is too small: at least %s", bytesString(l.DiskBytes), bytesString(MinDiskBytes)))
		}
	}
	return errors.Join(errs...)
}

// Zero reports whether l caps nothing.
func (l Limits) Zero() bool { return l == Limits{} }

// String is l in one line: "1,024 processes, 8 GiB memory, 20 GiB disk".
func (l Limits) String() string {
	if l.Zero() {
		return "no limits"
	}
	var parts []string
	if l.Processes > 0 {
		parts = append(parts, thousands(int64(l.Processes))+" processes")
	} else {
		parts = append(parts, "no process cap")
	}
	if l.MemoryBytes > 0 {
		parts = append(parts, bytesString(l.MemoryBytes)+" memory")
	} else {
		parts = append(parts, "no memory cap")
	}
	if l.DiskBytes > 0 {
		parts = append(parts, bytesString(l.DiskBytes)+" disk")
	} else {
		parts = append(parts, "no disk cap")
	}
	return strings.Join(parts, ", ")
}

// thousands writes n with commas: 1,024.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bytesString writes n in the largest binary unit it fills: "8 GiB",
// "1.5 GiB", "512 MiB", "100 bytes".
func bytesString(n int64) string {
	units := []string{"TiB", "GiB", "MiB", "KiB"}
	for i, u := range units {
		size := int64(1) << (10 * (len(units) - i))
		if n >= size {
			if n%size == 0 {
				return thousands(n/size) + " " + u
			}
			return strconv.FormatFloat(float64(n)/float64(size), 'f', 1, 64) + " " + u
		}
	}
	return thousands(n) + " bytes"
}

// Hits is what a job ran into, counted since its group was made. Any says
// whether it hit a limit at all; String names the limits it hit.
type Hits struct {
	// Processes is how many forks (or new threads) the process cap refused
	// (pids.events "max").
	Processes int64
	// OOMKills is how many of the job's processes the kernel killed at the
	// memory cap (v2 memory.events "oom_kill", v1 memory.oom_control
	// "oom_kill", Linux 4.13 and later).
	OOMKills int64
	// MemoryMax is how many times the job's memory reached the cap (v2
	// memory.events "max", v1 memory.failcnt). The kernel reclaims (page
	// cache, swap) before it kills, so this alone is no failure: a job that
	// writes big files reaches it without harm. Any ignores it.
	MemoryMax int64
}

// Any reports whether the job hit a limit: a fork refused or a process
// killed for memory.
func (h Hits) Any() bool { return h.Processes > 0 || h.OOMKills > 0 }

// String names the limits hit, for a job's error: "the process limit (12
// forks refused)", "the memory limit (1 process killed)", or both.
func (h Hits) String() string {
	var parts []string
	if h.Processes > 0 {
		parts = append(parts, fmt.Sprintf("the process limit (%s refused)", plural(h.Processes, "fork")))
	}
	if h.OOMKills > 0 {
		parts = append(parts, fmt.Sprintf("the memory limit (%s killed)", plural(h.OOMKills, "process")))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, " and ")
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "s") {
		return thousands(n) + " " + what + "es"
	}
	return thousands(n) + " " + what + "s"
}

// Availability says how this machine caps each resource, for `hub engines`.
type Availability struct {
	Processes, Memory, Disk Control
}

// Control is one resource's mechanism and what it does and does not cover.
type Control struct {
	// Mechanism is short: "cgroup v1 (pids)", "cgroup v2
	// (/user.slice/…/hub.slice)", "rlimit (RLIMIT_NPROC)", "none".
	Mechanism string
	// Cgroup is true when the cap holds the job's processes together.
	Cgroup bool
	// Note says, in sentences a user reads, what the mechanism enforces and
	// what it cannot.
	Note string
}

// Lines is a in three lines a person reads.
func (a Availability) Lines() []string {
	return []string{
		"processes: " + a.Processes.Mechanism + ". " + a.Processes.Note,
		"memory: " + a.Memory.Mechanism + ". " + a.Memory.Note,
		"disk: " + a.Disk.Mechanism + ". " + a.Disk.Note,
	}
}

// Plan is what a sandboxed command applies to itself before it runs
// anything (Apply): the job's groups to join and the rlimits to set. It
// travels as JSON inside hub/sandbox's helper plan. The zero Plan does
// nothing.
type Plan struct {
	// Procs are the cgroup.procs files of the job's groups, one per
	// hierarchy (one under cgroup v2; pids and memory under v1).
	Procs []string `json:"procs,omitempty"`
	// Rlimits are set as both the soft and the hard limit (never above a
	// hard limit already in force), so the command cannot raise them.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
}

// Rlimit is one resource limit: its name as in getrlimit(2) without the
// prefix (nproc, data, fsize) and its value.
type Rlimit struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Rlimit names.
const (
	RlimitNproc = "nproc"
	RlimitData  = "data"
	RlimitFsize = "fsize"
)

// Empty reports whether p does nothing.
func (p Plan) Empty() bool { return len(p.Procs) == 0 && len(p.Rlimits) == 0 }

// Group is one job's budget: its cgroups (none on a machine without them)
// and the rlimits its commands set. Its methods are safe on a nil Group,
// which caps nothing, so a caller may hold nil for a job without limits.
// A Group is used by one goroutine at a time.
type Group struct {
	name    string
	limits  Limits
	dirs    []cgroupDir
	rlimits []Rlimit
}

// cgroupDir is one of a group's cgroups.
type cgroupDir struct {
	Path   string // the cgroup's folder
	V2     bool
	Pids   bool // its process cap is here
	Memory bool // its memory cap is here
}

// Name is the group's cgroup name: Scope-jobID.
func (g *Group) Name() string {
	if g == nil {
		return ""
	}
	return g.name
}

// Limits is the budget g was made with.
func (g *Group) Limits() Limits {
	if g == nil {
		return Limits{}
	}
	return g.limits
}

// Cgroups are the folders of g's cgroups (none when it carries only
// rlimits), for a journal or a test.
func (g *Group) Cgroups() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, d := range g.dirs {
		out = append(out, d.Path)
	}
	return out
}

// Plan is what each of the job's sandboxed commands applies to itself:
// hub/sandbox's Spec.Limits.
func (g *Group) Plan() Plan {
	if g == nil {
		return Plan{}
	}
	var p Plan
	for _, d := range g.dirs {
		p.Procs = append(p.Procs, filepath.Join(d.Path, "cgroup.procs"))
	}
	p.Rlimits = append(p.Rlimits, g.rlimits...)
	return p
}

// Scope is the prefix of the groups of the hub whose home is hubHome:
// "hub-" and 10 hex digits of a hash of its absolute path, so that two
// HUB_HOMEs on one machine (parallel tests) never share a name nor sweep
// each other's groups.
func Scope(hubHome string) string {
	if abs, err := filepath.Abs(hubHome); err == nil {
		hubHome = abs
	}
	sum := sha256.Sum256([]byte(filepath.Clean(hubHome)))
	return "hub-" + hex.EncodeToString(sum[:5])
}

var (
	scopeRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,40}$`)
	jobRe   = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
)

// groupName is the cgroup name of job id in scope.
func groupName(scope, id string) (string, error) {
	if !scopeRe.MatchString(scope) {
		return "", fmt.Errorf("limit: scope %q: want lower-case letters, digits and dashes (limit.Scope makes one)", scope)
	}
	if !jobRe.MatchString(id) {
		return "", fmt.Errorf("limit: job id %q: want letters, digits and underscores", id)
	}
	return scope + "-" + id, nil
}

// ErrUnsupported: this platform has no limits hub can set (only Linux has).
var ErrUnsupported = errors.New("limits need Linux")
