//go:build unix

package gitx

import "syscall"

// nonBlock keeps open from waiting on a fifo planted where a file was.
const nonBlock = syscall.O_NONBLOCK
