//go:build !unix

package gitx

import "os/exec"

// killGroupOnCancel leaves exec's default: only git itself is killed.
func killGroupOnCancel(*exec.Cmd) {}

// writable cannot ask the kernel here: git's own error says it later.
func writable(string) error { return nil }
