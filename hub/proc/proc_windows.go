package proc

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// listsGroups: Windows has no process groups; a group's liveness is its
// Job Object's (internal/pgroup), and entries carry pgid and sid 0.
const listsGroups = false

// snapshot lists every process with its parent and executable name, from
// one Toolhelp snapshot.
func snapshot() ([]windows.ProcessEntry32, error) {
	h, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(h)
	var out []windows.ProcessEntry32
	pe := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(h, &pe); err == nil; err = windows.Process32Next(h, &pe) {
		out = append(out, pe)
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, err
	}
	return out, nil
}

// created returns pid's creation time in 100 ns ticks since 1601, and
// whether it has exited (a process whose handle someone still holds).
func created(pid int) (uint64, bool, error) {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return 0, false, err
	}
	defer windows.CloseHandle(p)
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(p, &c, &e, &k, &u); err != nil {
		return 0, false, err
	}
	ev, err := windows.WaitForSingleObject(p, 0)
	return uint64(c.HighDateTime)<<32 | uint64(c.LowDateTime), err == nil && ev == windows.WAIT_OBJECT_0, nil
}

// info reads one process's start time, and whether it has exited (the
// zombie's counterpart here); its parent is parentOf's to find.
func info(pid int) (entry, bool, error) {
	start, gone, err := created(pid)
	if err != nil {
		return entry{}, false, err
	}
	return entry{pid: pid, start: start}, gone, nil
}

// parentOf returns the parent of pid. Windows records only the pid the
// parent had at creation: a parent that started after pid is another
// process that took a dead parent's pid, and pid has none (0).
func parentOf(pid int) (int, error) {
	all, err := snapshot()
	if err != nil {
		return 0, err
	}
	for _, pe := range all {
		if int(pe.ProcessID) != pid {
			continue
		}
		ppid := int(pe.ParentProcessID)
		start, _, err := created(pid)
		if err != nil {
			return 0, err
		}
		if ps, _, err := created(ppid); err != nil || ps > start {
			return 0, nil
		}
		return ppid, nil
	}
	return 0, fmt.Errorf("no process %d", pid)
}

// tableOK lists every live process hub may query (others, such as the
// system's, are left out). A child whose recorded parent started after it
// is not that parent's: its parent's pid was reused, so it gets ppid 0.
func tableOK() ([]entry, bool) {
	all, err := snapshot()
	if err != nil {
		return nil, false
	}
	out := make([]entry, 0, len(all))
	starts := map[int]uint64{}
	for _, pe := range all {
		pid := int(pe.ProcessID)
		start, gone, err := created(pid)
		if err != nil || gone || pid == 0 {
			continue
		}
		starts[pid] = start
		out = append(out, entry{pid: pid, ppid: int(pe.ParentProcessID), start: start})
	}
	for i, e := range out {
		if ps, ok := starts[e.ppid]; !ok || ps > e.start {
			out[i].ppid = 0
		}
	}
	return out, true
}

// hasEnv cannot read another process's environment here: a leftover that
// escaped its Job Object is not found by its marker.
func hasEnv(int, string) bool { return false }

// cmdline gives the process's executable name in brackets (its command
// line is not read here): "" when the process is gone.
func cmdline(pid int) string {
	all, err := snapshot()
	if err != nil {
		return ""
	}
	for _, pe := range all {
		if int(pe.ProcessID) == pid {
			return "[" + strings.ToValidUTF8(windows.UTF16ToString(pe.ExeFile[:]), "?") + "]"
		}
	}
	return ""
}
