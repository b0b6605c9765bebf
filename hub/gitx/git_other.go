//go:build !unix

package gitx

import "os/exec"

// killGroupOnCancel leaves exec's default: only git itself is killed.
func killGroupOnCancel(*exec.Cmd) {}
