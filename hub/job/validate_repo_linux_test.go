package job

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestValidateReadOnlyRepo: a repository on a read-only mount is refused at
// start, naming the folder hub cannot write, with what to do. Mounting
// needs root: without it the test fails, saying so, rather than skip.
func TestValidateReadOnlyRepo(t *testing.T) {
	gitEnv(t)
	repo := newRepo(t)
	if os.Geteuid() != 0 {
		t.Fatalf("this test bind-mounts %s read-only, which needs root (CAP_SYS_ADMIN); run it as root", repo)
	}
	if err := syscall.Mount(repo, repo, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s: %v", repo, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(repo, syscall.MNT_DETACH) })
	if err := syscall.Mount("", repo, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", repo, err)
	}
	git := filepath.Join(repo, ".git")
	for _, tc := range []struct {
		p    protocol.StartParams
		want string
	}{
		{protocol.StartParams{Repo: repo}, git + "/objects is not writable (it is on a read-only file system); hub writes each job's commits, branch and worktree entry into the repository's git dir " + git},
		{protocol.StartParams{Repo: repo, Kind: protocol.KindRead}, git + " is not writable (it is on a read-only file system); hub writes each job's worktree entry into the repository's git dir " + git},
	} {
		_, err := validate(t, tc.p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "repo" || fe.Msg != tc.want ||
			fe.Hint != "make it writable (remount it read-write, or fix its owner or mode), or clone the repository somewhere writable and start the job there" {
			t.Errorf("kind %q: %#v\nwant %s", tc.p.Kind, err, tc.want)
		}
	}
}
