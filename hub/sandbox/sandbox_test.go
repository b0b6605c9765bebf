package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/gitx"
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

// world is a repo with a private checkout on hub/job, a private home, and
// a secret outside both.
type world struct {
	repo, home, secret string
	c                  *gitx.Checkout
}

func newWorld(t *testing.T) world {
	t.Helper()
	if a := Probe(); !a.OK {
		t.Fatalf("the sandbox tests need bubblewrap working here: %s", a.Reason)
	}
	root := t.TempDir()
	w := world{repo: filepath.Join(root, "repo"), home: filepath.Join(root, "home"), secret: filepath.Join(root, "secret.txt")}
	os.MkdirAll(w.repo, 0o755)
	os.MkdirAll(w.home, 0o700)
	os.WriteFile(w.secret, []byte("s3cret"), 0o600)
	git(t, w.repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(w.repo, "a.txt"), []byte("a\n"), 0o644)
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "commit", "-qm", "init")
	git(t, w.repo, "gc", "-q") // packed, so the pack can be tried too
	git(t, w.repo, "branch", "hub/other")
	r, err := gitx.Open(w.repo)
	if err != nil {
		t.Fatal(err)
	}
	w.c, err = gitx.MakeCheckout(context.Background(), r, gitx.CheckoutOptions{Dir: filepath.Join(root, "wt"), Index: filepath.Join(root, "index"),
		Branch: "hub/job", Base: git(t, w.repo, "rev-parse", "main"), PrivateGitDir: filepath.Join(root, "job.git")})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w world) run(t *testing.T, network bool, script string) (string, error) {
	t.Helper()
	argv, err := Spec{Worktree: w.c.Dir, Home: w.home, Network: network, GitDir: w.c.GitDir, Objects: w.c.ObjectDirs()}.Command([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.c.Dir
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
	// The commit is in the checkout's own git dir; hub's commit takes it onto the branch.
	if got := git(t, w.repo, "log", "-1", "--format=%s", "hub/job"); got != "init" {
		t.Fatalf("before hub's commit hub/job is at %q", got)
	}
	res, err := w.c.Commit(context.Background(), gitx.CommitOptions{Message: "hub", Who: gitx.HubIdentity, Scratch: filepath.Join(t.TempDir(), "import")})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, w.repo, "log", "-1", "--format=%s", "hub/job"); got != "inside" || res.Committed {
		t.Fatalf("hub/job tip is %q (hub committed: %v)", got, res.Committed)
	}
	main := git(t, w.repo, "rev-parse", "main")
	other := git(t, w.repo, "rev-parse", "hub/other")
	common := filepath.Join(w.repo, ".git")
	for _, bad := range []string{"cat " + w.secret, "ls /root/.ssh", "cat /etc/shadow",
		"ls " + filepath.Join(common, "refs"), "cat " + filepath.Join(common, "config"),
		"rm -f " + filepath.Join(common, "objects", "pack") + "/*.pack",
		"touch " + filepath.Join(common, "objects", "planted")} {
		if out, err := w.run(t, false, bad); err == nil {
			t.Errorf("%s succeeded inside the sandbox: %s", bad, out)
		}
	}
	// A write to the user's checkout lands in the sandbox's own scratch root, never in the real file.
	config, _ := os.ReadFile(filepath.Join(common, "config"))
	w.run(t, false, "echo x > "+filepath.Join(w.repo, "a.txt")+"; echo x > "+filepath.Join(common, "config"))
	if b, _ := os.ReadFile(filepath.Join(w.repo, "a.txt")); string(b) != "a\n" {
		t.Errorf("the checkout's a.txt became %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(common, "config")); string(b) != string(config) {
		t.Errorf("the repository's config became %q", b)
	}
	// Refs it makes are its own: nothing of them reaches the user's repository.
	if out, err := w.run(t, false, "git update-ref refs/heads/hub/other HEAD && git branch side && git tag v1"); err != nil {
		t.Errorf("refs of its own: %v\n%s", err, out)
	}
	if _, err := w.c.Commit(context.Background(), gitx.CommitOptions{Message: "hub", Who: gitx.HubIdentity, Scratch: filepath.Join(t.TempDir(), "import")}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, w.repo, "rev-parse", "main"); got != main {
		t.Errorf("main moved from %s to %s", main, got)
	}
	if got := git(t, w.repo, "rev-parse", "hub/other"); got != other {
		t.Errorf("hub/other moved from %s to %s", other, got)
	}
	if out := git(t, w.repo, "for-each-ref", "refs/heads/side", "refs/tags"); out != "" {
		t.Errorf("the worker's refs reached the user's repository: %s", out)
	}
	git(t, w.repo, "fsck", "--full")
}
