package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// world is a repo with a linked worktree on hub/job, a private home, and a
// secret outside both.
type world struct{ repo, wt, home, secret string }

func newWorld(t *testing.T) world {
	t.Helper()
	if a := Probe(); !a.OK {
		t.Fatalf("the sandbox tests need bubblewrap working here: %s", a.Reason)
	}
	root := t.TempDir()
	w := world{repo: filepath.Join(root, "repo"), wt: filepath.Join(root, "wt"), home: filepath.Join(root, "home"), secret: filepath.Join(root, "secret.txt")}
	os.MkdirAll(w.repo, 0o755)
	os.MkdirAll(w.home, 0o700)
	os.WriteFile(w.secret, []byte("s3cret"), 0o600)
	git(t, w.repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(w.repo, "a.txt"), []byte("a\n"), 0o644)
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "commit", "-qm", "init")
	git(t, w.repo, "worktree", "add", "-q", "-b", "hub/job", w.wt)
	git(t, w.repo, "branch", "hub/other")
	return w
}

func (w world) run(t *testing.T, network bool, script string) (string, error) {
	t.Helper()
	argv, err := Spec{Worktree: w.wt, Home: w.home, Network: network, Branch: "hub/job"}.Command([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestCommitInside(t *testing.T) {
	w := newWorld(t)
	out, err := w.run(t, false, "echo b > b.txt && git add -A && git commit -qm inside && git log --oneline | head -1")
	if err != nil {
		t.Fatalf("commit inside the sandbox: %v\n%s", err, out)
	}
	// The commit moved the private stand-in of the branch; SyncBranch carries it over.
	if got := git(t, w.repo, "log", "-1", "--format=%s", "hub/job"); got != "init" {
		t.Fatalf("before the sync hub/job is at %q", got)
	}
	if moved, err := SyncBranch(context.Background(), w.wt, "hub/job"); !moved || err != nil {
		t.Fatalf("SyncBranch: %v %v", moved, err)
	}
	if got := git(t, w.repo, "log", "-1", "--format=%s", "hub/job"); got != "inside" {
		t.Fatalf("hub/job tip is %q", got)
	}
	if moved, err := SyncBranch(context.Background(), w.wt, "hub/job"); moved || err != nil {
		t.Fatalf("a second SyncBranch: %v %v", moved, err)
	}
	main := git(t, w.repo, "rev-parse", "main")
	other := git(t, w.repo, "rev-parse", "hub/other")
	for _, bad := range []string{"cat " + w.secret, "git update-ref refs/heads/main HEAD", "ls /root/.ssh", "cat /etc/shadow",
		"git tag -f v1", "git branch side",
		"echo x > " + filepath.Join(w.repo, ".git", "config")} {
		if out, err := w.run(t, false, bad); err == nil {
			t.Errorf("%s succeeded inside the sandbox: %s", bad, out)
		}
	}
	// A write to the user's checkout lands in the sandbox's own scratch root, never in the real file.
	w.run(t, false, "echo x > "+filepath.Join(w.repo, "a.txt"))
	if b, _ := os.ReadFile(filepath.Join(w.repo, "a.txt")); string(b) != "a\n" {
		t.Errorf("the checkout's a.txt became %q", b)
	}
	if got := git(t, w.repo, "rev-parse", "main"); got != main {
		t.Errorf("main moved from %s to %s", main, got)
	}
	// Another job's branch: the worker may write its private stand-in, never the real ref.
	w.run(t, false, "git update-ref refs/heads/hub/other HEAD")
	SyncBranch(context.Background(), w.wt, "hub/job")
	if got := git(t, w.repo, "rev-parse", "hub/other"); got != other {
		t.Errorf("hub/other moved from %s to %s", other, got)
	}
	if out := git(t, w.repo, "branch", "--list", "side"); out != "" {
		t.Errorf("the worker made branch side: %s", out)
	}
}
