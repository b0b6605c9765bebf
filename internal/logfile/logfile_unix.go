//go:build unix

package logfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// writesTo reports whether descriptor fd is the file at path.
func writesTo(fd int, path string) bool {
	var st, fst unix.Stat_t
	return unix.Stat(path, &st) == nil && unix.Fstat(fd, &fst) == nil && st.Dev == fst.Dev && st.Ino == fst.Ino
}

// redirect points descriptor fd at f (dup2).
func redirect(f *os.File, fd int) error {
	return unix.Dup2(int(f.Fd()), fd)
}
