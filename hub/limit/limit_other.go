//go:build !linux

package limit

// Limits need Linux: cgroups and the rlimits hub sets are Linux's, and the
// isolated and untrusted levels that use them are Linux-only
// (hub/sandbox's Refusal). Elsewhere this package compiles, and says so.

const notHere = "not available: limits need Linux, as the isolated and untrusted levels do"

// Probe says that nothing is capped on this platform.
func Probe() Availability {
	c := Control{Mechanism: "none", Note: notHere}
	return Availability{Processes: c, Memory: c, Disk: c}
}

// New fails with ErrUnsupported on this platform.
func New(scope, id string, l Limits) (*Group, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if _, err := groupName(scope, id); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// Hit reports nothing on this platform.
func (g *Group) Hit() (Hits, error) { return Hits{}, nil }

// Kill has nothing to kill on this platform.
func (g *Group) Kill() error { return nil }

// Remove has nothing to remove on this platform.
func (g *Group) Remove() error { return nil }

// Sweep has nothing to sweep on this platform.
func Sweep(scope string, live func(id string) bool) ([]string, error) { return nil, nil }

// Usage fails with ErrUnsupported on this platform.
func Usage(dirs ...string) (int64, error) { return 0, ErrUnsupported }

// Join fails unless the plan is empty: nothing here can enforce it.
func (p Plan) Join() error {
	if len(p.Procs) > 0 {
		return ErrUnsupported
	}
	return nil
}

// SetRlimits fails unless the plan has none: nothing here can enforce them.
func (p Plan) SetRlimits() error {
	if len(p.Rlimits) > 0 {
		return ErrUnsupported
	}
	return nil
}
