package limit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Join moves the calling process (all its threads) into the plan's
// groups. hub's helper calls it first, before it restricts itself (a
// Landlock file system domain would forbid the write) and before it execs
// anything, so every process the command starts is born inside.
func (p Plan) Join() error {
	pid := strconv.Itoa(os.Getpid())
	for _, f := range p.Procs {
		if filepath.Base(f) != "cgroup.procs" || !filepath.IsAbs(f) {
			return fmt.Errorf("limit: %q is not a cgroup.procs file", f)
		}
		if err := writeFile(f, pid); err != nil {
			return fmt.Errorf("limit: join the job's group: %w", err)
		}
	}
	return nil
}

var rlimitResources = map[string]int{RlimitNproc: unix.RLIMIT_NPROC, RlimitData: unix.RLIMIT_DATA, RlimitFsize: unix.RLIMIT_FSIZE}

// SetRlimits sets the plan's rlimits on the calling process, soft and hard
// alike (never above a hard limit already in force), so neither the
// command nor its children can raise them. hub's helper calls it last,
// right before it execs the command: a low RLIMIT_DATA would starve the
// helper's own Go heap.
func (p Plan) SetRlimits() error {
	for _, r := range p.Rlimits {
		res, ok := rlimitResources[r.Name]
		if !ok {
			return fmt.Errorf("limit: unknown rlimit %q", r.Name)
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("limit: getrlimit %s: %w", r.Name, err)
		}
		v := min(r.Value, cur.Max)
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("limit: setrlimit %s %d: %w", r.Name, v, err)
		}
	}
	return nil
}
