//go:build unix

package gitx

import "syscall"

// noFollow makes open fail on a symlink at the path's last element.
const noFollow = syscall.O_NOFOLLOW
