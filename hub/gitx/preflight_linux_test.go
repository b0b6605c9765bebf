package gitx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountReadOnly bind-mounts dir onto itself read-only for the rest of the test:
// a real read-only mount (EROFS), which root cannot write either.
// Mounting needs root (CAP_SYS_ADMIN): without it the test fails, saying
// so, rather than skip — the case it checks would go unchecked.
func mountReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test bind-mounts %s read-only, which needs root (CAP_SYS_ADMIN); run it as root", dir)
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s: %v (the read-only case needs mount(2))", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".probe"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("%s is still writable after the read-only remount: %v", dir, err)
	}
}

// TestCheckWritable: a repository whose git dir, or only one folder of it
// hub writes into, is on a read-only mount is refused, naming that
// folder; what a job does not write is not asked for.
func TestCheckWritable(t *testing.T) {
	all := Writes{Branch: "hub", Worktree: true}
	t.Run("whole repository", func(t *testing.T) {
		repo := newRepo(t, t.TempDir(), nil)
		r := mustOpen(t, repo)
		if err := r.CheckWritable(all); err != nil {
			t.Fatalf("a writable repository: %v", err)
		}
		mountReadOnly(t, repo)
		err := r.CheckWritable(all)
		want := filepath.Join(repo, ".git", "objects") + " is not writable (it is on a read-only file system); hub writes each job's commits, branch and worktree entry into the repository's git dir " + filepath.Join(repo, ".git")
		if !errors.Is(err, ErrNotWritable) || !errors.Is(err, syscall.EROFS) || err.Error() != want {
			t.Fatalf("CheckWritable = %v\nwant %s", err, want)
		}
		// A read job at a sandboxed level makes a private checkout: it writes
		// nothing of the repository's.
		if err := r.CheckWritable(Writes{}); err != nil {
			t.Errorf("a job that writes nothing of the repository: %v", err)
		}
		if err := r.CheckWritable(Writes{Worktree: true}); !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), "worktree entry") {
			t.Errorf("a linked checkout in a read-only repository: %v", err)
		}
	})
	for _, tc := range []struct {
		name, mount, named string
		earlier            bool // a job branch made before: refs/heads/hub/ is a folder
	}{
		{"refs/heads", "refs/heads", "refs/heads", false},
		{"refs/heads with hub/ in it", "refs/heads", "refs/heads/hub", true},
		{"objects/pack", "objects/pack", "objects/pack", false},
		{"one loose-object folder", "LOOSE", "LOOSE", false},
		{"worktrees", "worktrees", "worktrees", true},
		{"reflogs of hub/", "logs/refs/heads/hub", "logs/refs/heads/hub", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, t.TempDir(), nil)
			if tc.earlier {
				gitT(t, repo, "branch", "hub/earlier")
				gitT(t, repo, "worktree", "add", "-q", "--detach", filepath.Join(t.TempDir(), "wt"))
			}
			r := mustOpen(t, repo)
			path := func(rel string) string {
				if rel == "LOOSE" { // the folder of HEAD's commit, one of several
					return filepath.Join(r.CommonDir, "objects", gitT(t, repo, "rev-parse", "HEAD")[:2])
				}
				return filepath.Join(r.CommonDir, filepath.FromSlash(rel))
			}
			mountReadOnly(t, path(tc.mount))
			err := r.CheckWritable(all)
			if !errors.Is(err, ErrNotWritable) || !strings.HasPrefix(err.Error(), path(tc.named)+" is not writable (it is on a read-only file system)") {
				t.Errorf("%s read-only: %v; want it named %s", tc.mount, err, path(tc.named))
			}
		})
	}
}
