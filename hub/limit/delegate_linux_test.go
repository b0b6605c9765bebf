package limit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestFindDelegated walks a folder tree laid out as cgroup v2 lays out its
// files — not the kernel's cgroupfs: the machine these tests were written
// on has its controllers bound to cgroup v1, so the v2 code runs for real
// only where a v2 hierarchy is delegated (see the top of cgroup_linux.go).
// It checks the walk: the nearest ancestor with pids and memory to give
// and no process of its own.
func TestFindDelegated(t *testing.T) {
	type node struct{ controllers, procs string }
	cases := []struct {
		name string
		tree map[string]node // folder under top → its files
		want string          // folder under top; "": none
	}{
		{"user service", map[string]node{
			".":                {"cpu pids memory", "1\n"},
			"user":             {"cpu pids memory", ""},
			"user/app":         {"pids memory", "42\n"},
			"user/app/session": {"pids memory", "77\n"},
		}, "user"},
		{"nearest", map[string]node{
			".":                {"cpu pids memory", "1\n"},
			"user":             {"cpu pids memory", ""},
			"user/app":         {"pids memory", ""},
			"user/app/session": {"pids memory", "77\n"},
		}, "user/app"},
		{"no memory to give", map[string]node{
			".":                {"cpu pids memory", "1\n"},
			"user":             {"cpu pids", ""},
			"user/app":         {"pids", "42\n"},
			"user/app/session": {"pids", "77\n"},
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			for dir, n := range c.tree {
				d := filepath.Join(top, dir)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, s := range map[string]string{"cgroup.controllers": n.controllers, "cgroup.procs": n.procs, "cgroup.subtree_control": ""} {
					if err := os.WriteFile(filepath.Join(d, f), []byte(s), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, why := findDelegated(filepath.Join(top, "user/app/session"), top)
			want := ""
			if c.want != "" {
				want = filepath.Join(top, c.want)
			}
			if got != want || (got == "" && why == "") {
				t.Errorf("findDelegated = %q (%s); want %q", got, why, want)
			}
		})
	}
}

// TestKillV2 runs Kill's cgroup v2 path (cgroup.kill) on the kernel's
// cgroup2 hierarchy, where this machine has one hub does not use for its
// caps (a hybrid layout: the controllers are bound to v1, but cgroup.kill,
// cgroup.procs and rmdir need none).
func TestKillV2(t *testing.T) {
	m := probeMachine()
	if m.v2Parent != "" {
		t.Skip("cgroup v2 is hub's mechanism here: TestForkBomb kills through cgroup.kill")
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	_, own, hasV2, err := ownCgroups()
	if err != nil {
		t.Fatal(err)
	}
	dir := folder(mounts, func(x mountPoint) bool { return x.v2 }, own)
	if !hasV2 || dir == "" {
		t.Skip("no cgroup2 hierarchy on this machine; TestForkBomb covers the v1 kill")
	}
	g := &Group{name: Scope(t.TempDir()) + "-killv2", dirs: []cgroupDir{{Path: filepath.Join(dir, Scope(t.TempDir())+"-killv2"), V2: true}}}
	if err := os.Mkdir(g.dirs[0].Path, 0o755); err != nil {
		t.Fatalf("cgroup2 at %s is not writable here: %v", dir, err)
	}
	defer g.Remove()
	if _, err := os.Stat(filepath.Join(g.dirs[0].Path, "cgroup.kill")); err != nil {
		t.Fatalf("this kernel has no cgroup.kill (Linux 5.14): %v", err)
	}
	// The shell forks once it joined the group (a line on its stdin).
	cmd := exec.Command("sh", "-c", "read go; sleep 300 & sleep 300 & wait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := writeFile(filepath.Join(g.dirs[0].Path, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	deadline := time.Now().Add(10 * time.Second)
	for ps, _ := g.procs(); len(ps) < 3; ps, _ = g.procs() {
		if time.Now().After(deadline) {
			t.Fatalf("the group has %v", ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if ps, _ := g.procs(); len(ps) != 0 {
		t.Errorf("after Kill: %v", ps)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the shell was not killed")
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
}
