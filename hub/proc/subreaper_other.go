//go:build !linux

package proc

import "errors"

// BecomeSubreaper is Linux only: elsewhere orphans go to init, and
// EndLeftovers finds them by their marker alone.
func BecomeSubreaper() error {
	return errors.New("a child subreaper needs Linux (prctl PR_SET_CHILD_SUBREAPER)")
}
