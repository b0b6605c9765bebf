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

// Descendants lists the live (not zombie) descendants of root, root
// excluded, from one pass over /proc.
func Descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := stat(e.Name())
		if err != nil || f[0] == "Z" {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
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
