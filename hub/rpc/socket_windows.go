package rpc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// notMine says who owns the file at path when it is not this process's
// user — "S-1-5-21-…-1002, not you (S-1-5-21-…-1001)" — and "" when it
// is. The owner is the owner SID of the file's security descriptor. A file
// made by an elevated process belongs to the Administrators group rather
// than to its user; that owner is taken as this user's only when this
// process runs elevated too.
func notMine(path string, _ fs.FileInfo) (string, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return "", err
	}
	tok := windows.GetCurrentProcessToken()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", err
	}
	me := u.User.Sid
	if owner.Equals(me) {
		return "", nil
	}
	if owner.IsWellKnown(windows.WinBuiltinAdministratorsSid) && tok.IsElevated() {
		return "", nil
	}
	return fmt.Sprintf("%s, not you (%s)", owner, me), nil
}

// makeDirPrivate has no mode to set here: who may enter the directory is
// its ACL, which a folder under the user's profile (where hub keeps its
// socket) inherits as private to the user and the system. hub does not
// rewrite ACLs; it checks the owner (notMine).
func makeDirPrivate(*os.File, fs.FileInfo, string) error { return nil }

// makePrivate: the socket file inherits its folder's ACL (see
// makeDirPrivate); there is no mode to set.
func makePrivate(string) error { return nil }

// refused reports whether err says nothing listens on the socket: Winsock's
// WSAECONNREFUSED, which is not syscall.ECONNREFUSED here.
func refused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, syscall.ECONNREFUSED)
}

// inUse reports whether err says the address is taken (WSAEADDRINUSE).
func inUse(err error) bool {
	return errors.Is(err, windows.WSAEADDRINUSE) || errors.Is(err, syscall.EADDRINUSE)
}
