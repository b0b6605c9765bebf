//go:build !linux

package proc

import "errors"

// BecomeSubreaper is Linux only. Elsewhere a worker's child that leaves
// its process group (setsid, a double fork) goes to init, and EndLeftovers
// cannot find it by its marker either (hasEnv reads environments on Linux
// only): on macOS it is not found; on Windows the command's Job Object
// holds it anyway (internal/pgroup).
func BecomeSubreaper() error {
	return errors.New("a child subreaper needs Linux (prctl PR_SET_CHILD_SUBREAPER)")
}
