package proc

import (
	"os"
	"strconv"
)

// ParentPID returns the parent of pid (field 4 of /proc/<pid>/stat).
func ParentPID(pid int) (int, error) {
	f, err := stat(strconv.Itoa(pid))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// IsDescendant reports whether pid is ancestor itself or one of its
// descendants, by walking parents up from pid. With the ancestor a child
// subreaper (BecomeSubreaper), a process it started stays its descendant
// even after its own parent exited (a double fork, setsid).
func IsDescendant(pid, ancestor int) bool {
	for range 4096 { // a bound: a parent chain is never this long
		if pid == ancestor {
			return true
		}
		if pid <= 1 {
			return false
		}
		ppid, err := ParentPID(pid)
		if err != nil {
			return false
		}
		pid = ppid
	}
	return false
}

// entry is one live process of /proc: its ids and start time.
type entry struct {
	pid, ppid, pgid int
	start           uint64
}

// table reads every live (not zombie) process from one pass over /proc.
func table() []entry {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []entry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := stat(e.Name())
		if err != nil || f[0] == "Z" {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgid, err2 := strconv.Atoi(f[2])
		start, err3 := strconv.ParseUint(f[19], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, entry{pid: pid, ppid: ppid, pgid: pgid, start: start})
	}
	return out
}

// Descendants lists the live (not zombie) descendants of root, root
// excluded, from one pass over /proc.
func Descendants(root int) []int {
	children := map[int][]int{}
	for _, e := range table() {
		children[e.ppid] = append(children[e.ppid], e.pid)
	}
	var out []int
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}
