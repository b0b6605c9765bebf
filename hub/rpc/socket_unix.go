//go:build unix

package rpc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// notMine says who owns the file fi (at path) when it is not this
// process's user — "uid 65534, not you (uid 1000)" — and "" when it is.
func notMine(_ string, fi fs.FileInfo) (string, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no owner in its file info")
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Sprintf("uid %d, not you (uid %d)", st.Uid, uid), nil
	}
	return "", nil
}

// makeDirPrivate makes the socket directory mode 0700 when it is looser.
func makeDirPrivate(f *os.File, fi fs.FileInfo, dirPath string) error {
	if fi.Mode().Perm()&^0o700 != 0 {
		if err := f.Chmod(0o700); err != nil {
			return fmt.Errorf("make socket directory %s private: %w", dirPath, err)
		}
	}
	return nil
}

// makePrivate makes the socket file mode 0600.
func makePrivate(addr string) error { return os.Chmod(addr, 0o600) }

// refused reports whether err says nothing listens on the socket.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// inUse reports whether err says the address is taken.
func inUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
