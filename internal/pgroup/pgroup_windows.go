package pgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobs holds the Job Object of each group this process started, by the
// pid of its head. While its handle is open, KILL_ON_JOB_CLOSE ends the
// tree should this process die. Once the group is ended the handle is
// closed (0) but the entry stays, so that a later signal to the group is
// no signal to whatever process has the head's pid by then; a new group
// whose head gets that pid replaces it.
var (
	jobsMu sync.Mutex
	jobs   = map[int]windows.Handle{}
)

// setGroup: a console process group of its own (so a Ctrl-C in hub's
// console does not reach it directly), and a console without a window
// (hub's daemon and shims have none, and a console program they start
// would otherwise open one on the user's desktop); the Job Object comes in
// started.
func setGroup(a *syscall.SysProcAttr) {
	a.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW
}

func detach(a *syscall.SysProcAttr) {
	a.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS
	a.HideWindow = true
}

// started puts the new process into a Job Object of its own that kills
// its processes when its last handle closes. On failure the process is
// killed: a command hub could not end as a tree must not run.
func started(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	job, err := newJob(pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("put process %d in a job object: %w", pid, err)
	}
	jobsMu.Lock()
	jobs[pid] = job
	jobsMu.Unlock()
	return nil
}

func newJob(pid int) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// Signal ends the group pgid: any signal but 0 terminates its whole Job
// Object at once (Windows has no SIGTERM to give a grace with); a group
// ended already is left alone. A group this process did not start (no job
// known: a shim's, after it died, whose own handle closing ended its jobs)
// is ended by terminating its head alone; the caller checks first that the
// pid is still the head's (hub/proc.KillGroup). A group that is gone is
// no error.
func Signal(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("no process group to signal")
	}
	if sig == 0 {
		if !Alive(pgid) {
			return syscall.ESRCH
		}
		return nil
	}
	jobsMu.Lock()
	defer jobsMu.Unlock()
	job, ok := jobs[pgid]
	if !ok {
		return SignalPID(pgid, sig)
	}
	if job == 0 {
		return nil // ended before
	}
	err := windows.TerminateJobObject(job, 1)
	windows.CloseHandle(job)
	jobs[pgid] = 0
	return err
}

// SignalPID terminates the one process pid (any signal but 0). A process
// that is gone is no error.
func SignalPID(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return errors.New("no process to signal")
	}
	access := uint32(windows.PROCESS_TERMINATE | windows.SYNCHRONIZE) // SYNCHRONIZE: for exited
	if sig == 0 {
		access = windows.PROCESS_QUERY_LIMITED_INFORMATION
	}
	p, err := windows.OpenProcess(access, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil // no such process
		}
		return err
	}
	defer windows.CloseHandle(p)
	if sig == 0 {
		return nil
	}
	err = windows.TerminateProcess(p, 1)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) && exited(p) {
		return nil // it was on its way out
	}
	return err
}

// Alive reports whether the group pgid still has a process: its Job
// Object's active processes when this process started it, else whether
// its head runs.
func Alive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if n, ok := active(pgid); ok {
		return n > 0
	}
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pgid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(p)
	return !exited(p)
}

// active counts the live processes of the Job Object of group pgid; ok is
// false when this process holds no open job for it.
func active(pgid int) (n uint32, ok bool) {
	jobsMu.Lock()
	defer jobsMu.Unlock() // Signal closes the handle under the lock
	job := jobs[pgid]
	if job == 0 {
		return 0, false
	}
	var acct basicAccounting
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil); err != nil {
		return 0, false
	}
	return acct.ActiveProcesses, true
}

// exited reports whether process p (a handle with SYNCHRONIZE access) has
// ended: its handle is signalled.
func exited(p windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(p, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}
