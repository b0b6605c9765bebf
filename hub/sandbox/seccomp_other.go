//go:build !linux

package sandbox

import "errors"

// The sandbox is Linux's (Refusal): no seccomp elsewhere.

func mptcpFilterable() bool { return false }

var errNoFilter = errors.New("no seccomp outside Linux")

func denyMPTCP() error { return errNoFilter }
