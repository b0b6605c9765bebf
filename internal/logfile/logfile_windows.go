package logfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// Windows has no numbered descriptors: fds 1 and 2 name the process's
// standard output and error handles, which the Go runtime looks up anew
// when it writes a panic's trace, so pointing them elsewhere (SetStdHandle)
// moves that too. os.Stdout and os.Stderr keep the handle they had.
//
// A rotation renames the open log, which Windows refuses for a file opened
// without FILE_SHARE_DELETE (as os.OpenFile opens it): there the log keeps
// growing in place (Write's rule for a log that cannot rotate).

// stdHandle maps 1 and 2 to the standard handles.
func stdHandle(fd int) (uint32, error) {
	switch fd {
	case 1:
		return windows.STD_OUTPUT_HANDLE, nil
	case 2:
		return windows.STD_ERROR_HANDLE, nil
	}
	return 0, fmt.Errorf("descriptor %d: only 1 (stdout) and 2 (stderr) can be followed on Windows", fd)
}

// writesTo reports whether standard handle fd is the file at path.
func writesTo(fd int, path string) bool {
	std, err := stdHandle(fd)
	if err != nil {
		return false
	}
	h, err := windows.GetStdHandle(std)
	if err != nil || h == windows.InvalidHandle || h == 0 {
		return false
	}
	var a windows.ByHandleFileInformation
	if windows.GetFileInformationByHandle(h, &a) != nil {
		return false // a console or a pipe
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b windows.ByHandleFileInformation
	if windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &b) != nil {
		return false
	}
	return a.VolumeSerialNumber == b.VolumeSerialNumber && a.FileIndexHigh == b.FileIndexHigh && a.FileIndexLow == b.FileIndexLow
}

// redirect points standard handle fd at f.
func redirect(f *os.File, fd int) error {
	std, err := stdHandle(fd)
	if err != nil {
		return err
	}
	return windows.SetStdHandle(std, windows.Handle(f.Fd()))
}
