package proc

// ParentPID returns the parent of pid.
func ParentPID(pid int) (int, error) { return parentOf(pid) }

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

// entry is one process: its ids and start time. sid and pgid are 0 where
// the platform has no sessions or groups (Windows).
type entry struct {
	pid, ppid, pgid, sid int
	start                uint64
}

// table lists every live (not zombie) process, from one look at the
// process table; nil when it cannot be read.
func table() []entry {
	t, _ := tableOK()
	return t
}

// Descendants lists the live (not zombie) descendants of root, root
// excluded, from one look at the process table.
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
