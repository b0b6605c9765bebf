package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// listsGroups: the table says which group each process is in.
const listsGroups = true

// stat returns the fields of /proc/<pid>/stat after the command name
// (field 2, in parentheses, may hold spaces): f[0] is field 3 (the state),
// f[1] field 4 (the parent), f[2] field 5 (the process group), f[3] field
// 6 (the session), f[19] field 22 (the start time, in clock ticks since
// boot).
func stat(pid string) ([]string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%s/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("short /proc/%s/stat", pid)
	}
	return f, nil
}

// parse makes an entry of stat's fields.
func parse(pid int, f []string) (entry, error) {
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	sid, err3 := strconv.Atoi(f[3])
	start, err4 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return entry{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return entry{pid: pid, ppid: ppid, pgid: pgid, sid: sid, start: start}, nil
}

// info reads one process, and whether it is a zombie.
func info(pid int) (entry, bool, error) {
	f, err := stat(strconv.Itoa(pid))
	if err != nil {
		return entry{}, false, err
	}
	e, err := parse(pid, f)
	return e, f[0] == "Z", err
}

// tableOK reads every live (not zombie) process from one pass over /proc;
// false when /proc cannot be read.
func tableOK() ([]entry, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	var out []entry
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		f, err := stat(d.Name())
		if err != nil || f[0] == "Z" {
			continue
		}
		if e, err := parse(pid, f); err == nil {
			out = append(out, e)
		}
	}
	return out, true
}

// hasEnv reports whether entry (exactly "NAME=value") is in pid's
// environment as it started.
func hasEnv(pid int, entry string) bool {
	if entry == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(entry)
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// cmdline returns pid's command line for a record: its arguments joined by
// spaces, cut at about 200 bytes (at a character boundary, marked "…"),
// valid UTF-8; "[name]" for a process with none (a kernel thread, a zombie).
// "" when the process is gone.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	if s == "" {
		c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil {
			return ""
		}
		return "[" + strings.ToValidUTF8(strings.TrimSpace(string(c)), "?") + "]"
	}
	if len(s) > maxCommand {
		i := maxCommand
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// parentOf returns the parent of pid.
func parentOf(pid int) (int, error) {
	e, _, err := info(pid)
	return e.ppid, err
}
