package limit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What was exercised where: the cgroup v1 code (pids and memory
// hierarchies, memory.memsw, pids.events, memory.oom_control, the SIGSTOP
// kill loop) runs in this package's tests on a hybrid-layout machine as
// root. The cgroup v2 code could not run there with its controllers (they
// were bound to v1): makeV2, memory.max and memory.events never ran on a
// kernel; findDelegated ran on a folder tree laid out like cgroup v2, and
// Kill's cgroup.kill on the controller-less v2 hierarchy (TestKillV2). So
// the v2 code is kept small and shares the rest with v1: pids.max,
// pids.events, cgroup.procs and rmdir have the same names in both.

// machine is what this process can use, found once.
type machine struct {
	// v2Parent is the delegated cgroup v2 folder hub.slice lives in, ""
	// when there is none; v2Why says why not.
	v2Parent, v2Why string
	// v1Pids and v1Memory are this process's own cgroup folders in the
	// writable v1 pids and memory hierarchies, "" when not usable.
	v1Pids, v1Memory       string
	v1PidsWhy, v1MemoryWhy string
	memsw                  bool // v1 memory.memsw.* exist: swap is accounted
	swap                   bool // the machine has swap
	root                   bool
}

var (
	machineOnce sync.Once
	found       machine
)

func probeMachine() machine {
	machineOnce.Do(func() { found = findMachine() })
	return found
}

// mountPoint is one cgroup mount of /proc/self/mountinfo.
type mountPoint struct {
	point, root string
	v2          bool
	options     []string // super options: the v1 controllers
}

func cgroupMounts() ([]mountPoint, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mountPoint
	for line := range strings.Lines(string(b)) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		out = append(out, mountPoint{point: unescape(f[4]), root: unescape(f[3]), v2: g[0] == "cgroup2", options: strings.Split(g[2], ",")})
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads /proc/self/cgroup: the path of this process in each v1
// controller's hierarchy, and in the v2 one.
func ownCgroups() (v1 map[string]string, v2 string, hasV2 bool, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, "", false, err
	}
	v1 = map[string]string{}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, hasV2 = parts[2], true
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	return v1, v2, hasV2, nil
}

// folder is where cgroup path p (as /proc/self/cgroup gives it) is on the
// first mount m of its hierarchy that shows it.
func folder(mounts []mountPoint, match func(mountPoint) bool, p string) string {
	for _, m := range mounts {
		if !match(m) {
			continue
		}
		rel, ok := strings.CutPrefix(p, m.root)
		if m.root == "/" {
			rel, ok = p, true
		}
		if ok && (rel == "" || strings.HasPrefix(rel, "/")) {
			return filepath.Join(m.point, rel)
		}
	}
	return ""
}

func findMachine() machine {
	m := machine{root: os.Geteuid() == 0}
	if b, err := os.ReadFile("/proc/swaps"); err == nil {
		m.swap = len(bytes.Split(bytes.TrimSpace(b), []byte("\n"))) > 1
	}
	mounts, err := cgroupMounts()
	if err != nil {
		why := "cannot read /proc/self/mountinfo: " + err.Error()
		m.v2Why, m.v1PidsWhy, m.v1MemoryWhy = why, why, why
		return m
	}
	v1, v2, hasV2, err := ownCgroups()
	if err != nil {
		why := "cannot read /proc/self/cgroup: " + err.Error()
		m.v2Why, m.v1PidsWhy, m.v1MemoryWhy = why, why, why
		return m
	}
	if !hasV2 {
		m.v2Why = "this process is in no cgroup v2 hierarchy"
	} else if dir := folder(mounts, func(x mountPoint) bool { return x.v2 }, v2); dir == "" {
		m.v2Why = "its cgroup v2 hierarchy is not mounted where this process sees it"
	} else {
		top := folder(mounts, func(x mountPoint) bool { return x.v2 }, "/")
		m.v2Parent, m.v2Why = findDelegated(dir, top)
	}
	if m.v2Parent != "" {
		return m
	}
	v1Dir := func(c, file string) (string, string) {
		p, ok := v1[c]
		if !ok {
			return "", "no cgroup v1 " + c + " hierarchy"
		}
		dir := folder(mounts, func(x mountPoint) bool { return !x.v2 && slices.Contains(x.options, c) }, p)
		switch {
		case dir == "":
			return "", "the cgroup v1 " + c + " hierarchy is not mounted where this process sees it"
		case unix.Access(dir, unix.W_OK|unix.X_OK) != nil:
			return "", "this process's cgroup v1 " + c + " group (" + dir + ") is not writable by this user"
		}
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil && p != "/" {
			return "", "the cgroup v1 " + c + " group " + dir + " has no " + file
		}
		return dir, ""
	}
	m.v1Pids, m.v1PidsWhy = v1Dir("pids", "pids.max")
	m.v1Memory, m.v1MemoryWhy = v1Dir("memory", "memory.limit_in_bytes")
	if m.v1Memory != "" {
		_, err := os.Stat(filepath.Join(m.v1Memory, "memory.memsw.limit_in_bytes"))
		m.memsw = err == nil
	}
	return m
}

// findDelegated walks up from the cgroup v2 folder own to top and returns
// the nearest ancestor hub can make hub.slice in: writable by this user,
// offering pids and memory to its children (or able to), and with no
// process of its own ("no internal processes": only such a cgroup can
// enable controllers for its children). Moving a process from own into
// hub.slice then needs write access to its cgroup.procs, the common
// ancestor's, which it checks too. systemd's user@UID.service is such a
// place on a desktop. Not exercised on the machine the tests ran on (its
// controllers are bound to v1).
func findDelegated(own, top string) (string, string) {
	for d := filepath.Dir(own); strings.HasPrefix(d, top); d = filepath.Dir(d) {
		ctrl, err := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		if err != nil {
			break
		}
		have := strings.Fields(string(ctrl))
		procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err == nil && slices.Contains(have, "pids") && slices.Contains(have, "memory") && len(bytes.TrimSpace(procs)) == 0 &&
			unix.Access(d, unix.W_OK|unix.X_OK) == nil && unix.Access(filepath.Join(d, "cgroup.procs"), unix.W_OK) == nil &&
			unix.Access(filepath.Join(d, "cgroup.subtree_control"), unix.W_OK) == nil {
			return d, ""
		}
		if d == top {
			break
		}
	}
	return "", "no cgroup v2 ancestor of this process is delegated to this user with the pids and memory controllers (as systemd's user@UID.service is)"
}

// Probe says, once per process, how this machine caps a job's processes,
// memory and disk.
func Probe() Availability {
	probeOnce.Do(func() { probed = availability(probeMachine()) })
	return probed
}

var (
	probeOnce sync.Once
	probed    Availability
)

func availability(m machine) Availability {
	var a Availability
	const shared = " Every command of a job shares the one cap."
	switch {
	case m.v2Parent != "":
		mech := "cgroup v2 (" + filepath.Join(m.v2Parent, "hub.slice") + ")"
		a.Processes = Control{Mechanism: mech, Cgroup: true, Note: "pids.max caps the job's processes and threads together." + shared}
		a.Memory = Control{Mechanism: mech, Cgroup: true, Note: "memory.max caps the memory of all the job's processes together, swap excluded (memory.swap.max 0); at the cap the kernel reclaims, then kills a process of the job." + shared}
	default:
		if m.v1Pids != "" {
			a.Processes = Control{Mechanism: "cgroup v1 (pids)", Cgroup: true, Note: "pids.max caps the job's processes and threads together." + shared}
		} else {
			note := "No cgroup: " + m.v2Why + ", and " + m.v1PidsWhy + ". RLIMIT_NPROC counts every process of the user, not the job's alone (under bubblewrap, those of the sandbox's own user namespace, Linux 5.14 and later)."
			if m.root {
				note += " The kernel ignores it for root, as hub runs here: processes are not capped."
			}
			a.Processes = Control{Mechanism: "rlimit (RLIMIT_NPROC)", Note: note}
		}
		if m.v1Memory != "" {
			note := "memory.limit_in_bytes caps the memory of all the job's processes together; at the cap the kernel reclaims, then kills a process of the job."
			switch {
			case m.memsw:
				note += " memory.memsw.limit_in_bytes keeps swap out of it."
			case m.swap:
				note += " This kernel does not account swap (no memory.memsw), so swap can extend it."
			}
			a.Memory = Control{Mechanism: "cgroup v1 (memory)", Cgroup: true, Note: note + shared}
		} else {
			a.Memory = Control{Mechanism: "rlimit (RLIMIT_DATA)", Note: "No cgroup: " + m.v2Why + ", and " + m.v1MemoryWhy +
				". RLIMIT_DATA caps each process's heap and private writable memory, not the job's sum: N processes may take N times the cap."}
		}
	}
	a.Disk = Control{Mechanism: "measured, and RLIMIT_FSIZE", Note: "The kernel has no per-job disk cap hub can set: hub measures the blocks the job's folders take and ends the job over the cap, so a job may overshoot by what it writes between two measurements. RLIMIT_FSIZE stops any one file at the cap (a write past it fails with EFBIG)."}
	return a
}

// New makes job id's group in scope (Scope of the HUB_HOME) with the
// limits l written: its cgroups where this machine has them (Probe), and
// the rlimits for what they do not cover. On a machine with no usable
// cgroup the Group carries only rlimits. Call it once per job, before the
// job's first sandboxed command; Remove it at the job's end. A group of
// the same name left by an earlier run of the job is taken over.
func New(scope, id string, l Limits) (*Group, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	name, err := groupName(scope, id)
	if err != nil {
		return nil, err
	}
	m := probeMachine()
	g := &Group{name: name, limits: l}
	fail := func(err error) (*Group, error) {
		_ = g.Remove()
		return nil, fmt.Errorf("limit: job %s's group: %w", id, err)
	}
	var pidsIn, memIn bool
	switch {
	case m.v2Parent != "":
		dir, err := makeV2(m.v2Parent, name)
		if dir != "" {
			g.dirs = append(g.dirs, cgroupDir{Path: dir, V2: true, Pids: true, Memory: true})
		}
		if err != nil {
			return fail(err)
		}
		pidsIn, memIn = true, true
	default:
		add := func(parent string, pids, memory bool) error {
			dir := filepath.Join(parent, name)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			g.dirs = append(g.dirs, cgroupDir{Path: dir, Pids: pids, Memory: memory})
			pidsIn, memIn = pidsIn || pids, memIn || memory
			return nil
		}
		if m.v1Pids != "" {
			if err := add(m.v1Pids, true, m.v1Pids == m.v1Memory); err != nil {
				return fail(err)
			}
		}
		if m.v1Memory != "" && m.v1Memory != m.v1Pids {
			if err := add(m.v1Memory, false, true); err != nil {
				return fail(err)
			}
		}
	}
	for _, d := range g.dirs {
		if err := d.write(l, m.memsw); err != nil {
			return fail(err)
		}
	}
	if l.Processes > 0 && !pidsIn {
		g.rlimits = append(g.rlimits, Rlimit{Name: RlimitNproc, Value: uint64(l.Processes)})
	}
	// RLIMIT_DATA, not RLIMIT_AS: V8 and Go reserve large PROT_NONE address
	// space they never use, which RLIMIT_AS counts and RLIMIT_DATA (private
	// writable mappings, Linux 4.7 and later) does not; under RLIMIT_AS
	// node and go fail at start long before they use the memory.
	if l.MemoryBytes > 0 && !memIn {
		g.rlimits = append(g.rlimits, Rlimit{Name: RlimitData, Value: uint64(l.MemoryBytes)})
	}
	if l.DiskBytes > 0 {
		g.rlimits = append(g.rlimits, Rlimit{Name: RlimitFsize, Value: uint64(l.DiskBytes)})
	}
	return g, nil
}

// makeV2 makes parent/hub.slice, with pids and memory enabled for its
// children, and the job's group in it; it returns the group's folder once
// made. Not exercised where the tests ran (see the top of this file).
func makeV2(parent, name string) (string, error) {
	slice := filepath.Join(parent, "hub.slice")
	if err := os.Mkdir(slice, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	for _, d := range []string{parent, slice} {
		ctl := filepath.Join(d, "cgroup.subtree_control")
		b, err := os.ReadFile(ctl)
		if err != nil {
			return "", err
		}
		if have := strings.Fields(string(b)); !slices.Contains(have, "pids") || !slices.Contains(have, "memory") {
			if err := writeFile(ctl, "+pids +memory"); err != nil {
				return "", fmt.Errorf("enable pids and memory in %s: %w", d, err)
			}
		}
	}
	dir := filepath.Join(slice, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return dir, nil
}

// write sets d's caps. v1's memsw, when the kernel accounts swap, is set
// after limit_in_bytes and to the same value: the kernel wants memsw >=
// limit, and swap then cannot extend the cap.
func (d cgroupDir) write(l Limits, memsw bool) error {
	var files [][2]string
	if d.Pids {
		v := "max"
		if l.Processes > 0 {
			v = strconv.Itoa(l.Processes)
		}
		files = append(files, [2]string{"pids.max", v})
	}
	if d.Memory && d.V2 {
		v := "max"
		if l.MemoryBytes > 0 {
			v = strconv.FormatInt(l.MemoryBytes, 10)
		}
		files = append(files, [2]string{"memory.max", v})
		if _, err := os.Stat(filepath.Join(d.Path, "memory.swap.max")); err == nil && l.MemoryBytes > 0 {
			files = append(files, [2]string{"memory.swap.max", "0"})
		}
	}
	if d.Memory && !d.V2 && l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		files = append(files, [2]string{"memory.limit_in_bytes", v})
		if memsw {
			files = append(files, [2]string{"memory.memsw.limit_in_bytes", v})
		}
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(d.Path, f[0]), f[1]); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes s to an existing control file in one write.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", s, path, err)
	}
	return nil
}

// keyed reads a flat keyed file ("max 3\n", "oom_kill 1\n").
func keyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// Hit reads what the job ran into since its group was made: forks its
// process cap refused, processes its memory cap killed. A Group without
// cgroups (rlimits only) cannot tell and reports nothing. Read it after
// each of the job's commands.
func (g *Group) Hit() (Hits, error) {
	var h Hits
	if g == nil {
		return h, nil
	}
	for _, d := range g.dirs {
		if d.Pids {
			ev, err := keyed(filepath.Join(d.Path, "pids.events"))
			if err != nil {
				return h, fmt.Errorf("limit: %w", err)
			}
			h.Processes = ev["max"]
		}
		switch {
		case d.Memory && d.V2:
			ev, err := keyed(filepath.Join(d.Path, "memory.events"))
			if err != nil {
				return h, fmt.Errorf("limit: %w", err)
			}
			h.OOMKills, h.MemoryMax = ev["oom_kill"], ev["max"]
		case d.Memory:
			oc, err := keyed(filepath.Join(d.Path, "memory.oom_control"))
			if err != nil {
				return h, fmt.Errorf("limit: %w", err)
			}
			h.OOMKills = oc["oom_kill"] // Linux 4.13 and later
			for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
				if b, err := os.ReadFile(filepath.Join(d.Path, f)); err == nil {
					if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
						h.MemoryMax = max(h.MemoryMax, n)
					}
				}
			}
		}
	}
	return h, nil
}

// procs are the processes in g's cgroups now.
func (g *Group) procs() ([]int, error) {
	var out []int
	for _, d := range g.dirs {
		f, err := os.Open(filepath.Join(d.Path, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stopped reports whether pid is stopped, dead or gone: it cannot fork.
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'T', 't', 'Z', 'X', 'x':
		return true
	}
	return false
}

// killWait bounds how long Kill waits for the group to empty.
const killWait = 10 * time.Second

// Kill ends every process in g's cgroups and waits (at most 10 s) until
// none is left. cgroup v2's cgroup.kill does it in one write where the
// kernel has it (5.14); elsewhere it SIGSTOPs every process of the group
// until a pass finds none left running — a stopped process cannot fork, so
// even a fork bomb converges — then SIGKILLs them all. A Group without
// cgroups has nothing to kill: the caller ends its command's processes.
func (g *Group) Kill() error {
	if g == nil || len(g.dirs) == 0 {
		return nil
	}
	deadline := time.Now().Add(killWait)
	killFile := ""
	for _, d := range g.dirs {
		if _, err := os.Stat(filepath.Join(d.Path, "cgroup.kill")); d.V2 && err == nil {
			killFile = filepath.Join(d.Path, "cgroup.kill")
		}
	}
	if killFile != "" {
		if err := writeFile(killFile, "1"); err != nil {
			return fmt.Errorf("limit: %w", err)
		}
	} else {
		// Stop them all: a pass that finds every process stopped ends it.
		// A process in uninterruptible sleep stops late; past the deadline
		// SIGKILL goes to whatever is left anyway.
		for pause := time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 20*time.Millisecond) {
			pids, err := g.procs()
			if err != nil {
				return fmt.Errorf("limit: %w", err)
			}
			running := 0
			for _, pid := range pids {
				if !stopped(pid) {
					running++
					_ = syscall.Kill(pid, syscall.SIGSTOP)
				}
			}
			if running == 0 {
				break
			}
			time.Sleep(pause)
		}
	}
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		pids, err := g.procs()
		if err != nil {
			return fmt.Errorf("limit: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("limit: %d processes of group %s still alive after %s", len(pids), g.name, killWait)
		}
		if killFile == "" {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(pause)
	}
}

// Remove deletes g's cgroups, retrying for a few seconds while the kernel
// drains them (a cgroup with a process left cannot go: Kill first).
func (g *Group) Remove() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, d := range g.dirs {
		deadline := time.Now().Add(5 * time.Second)
		for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
			err := unix.Rmdir(d.Path)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("limit: remove %s: %w", d.Path, err))
				break
			}
			time.Sleep(pause)
		}
	}
	return errors.Join(errs...)
}

// Sweep ends and removes the groups of scope whose job is no longer live
// (left by a shim that died), and returns their job ids. The daemon calls
// it; live says whether a job still runs. It looks where New makes groups
// from this process's cgroup, so the daemon must run where its shims run
// (they are its children: it does).
func Sweep(scope string, live func(id string) bool) ([]string, error) {
	if !scopeRe.MatchString(scope) {
		return nil, fmt.Errorf("limit: scope %q: want lower-case letters, digits and dashes", scope)
	}
	m := probeMachine()
	type parent struct {
		path             string
		v2, pids, memory bool
	}
	var parents []parent
	switch {
	case m.v2Parent != "":
		parents = append(parents, parent{filepath.Join(m.v2Parent, "hub.slice"), true, true, true})
	default:
		if m.v1Pids != "" {
			parents = append(parents, parent{m.v1Pids, false, true, m.v1Pids == m.v1Memory})
		}
		if m.v1Memory != "" && m.v1Memory != m.v1Pids {
			parents = append(parents, parent{m.v1Memory, false, false, true})
		}
	}
	dead := map[string]*Group{}
	for _, p := range parents {
		entries, err := os.ReadDir(p.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("limit: sweep: %w", err)
		}
		for _, e := range entries {
			id, ok := strings.CutPrefix(e.Name(), scope+"-")
			if !ok || !e.IsDir() || !jobRe.MatchString(id) || live(id) {
				continue
			}
			g := dead[id]
			if g == nil {
				g = &Group{name: e.Name()}
				dead[id] = g
			}
			g.dirs = append(g.dirs, cgroupDir{Path: filepath.Join(p.path, e.Name()), V2: p.v2, Pids: p.pids, Memory: p.memory})
		}
	}
	var ids []string
	var errs []error
	for id, g := range dead {
		if err := errors.Join(g.Kill(), g.Remove()); err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, errors.Join(errs...)
}
