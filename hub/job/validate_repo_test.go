package job

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/execengine"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/router"
)

// gitEnv gives the test's git a home of its own: no global or system
// config of the machine's is read.
func gitEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"} {
		t.Setenv(k, v)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo is a repository on main with in/a.txt, out/b.txt committed.
func newRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	for _, f := range []string{"in/a.txt", "out/b.txt"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "initial")
	return dir
}

func validate(t *testing.T, p protocol.StartParams) (*Request, error) {
	t.Helper()
	if p.Task == "" {
		p.Task = "t"
	}
	p.Engine, p.Exec = "exec", "true"
	return Validate(context.Background(), p, config.Defaults(), engine.NewRegistry(execengine.New()), RouteInputs{Now: time.Now(), Money: router.Money{CapMicros: 100e6}})
}

// TestValidateRepoShapes: at start, a repository hub could not make the
// job's branch in is refused with what to do, before anything is made;
// one it can work in (a sparse checkout, an orphan HEAD with a base) is
// accepted.
func TestValidateRepoShapes(t *testing.T) {
	gitEnv(t)
	t.Run("branch hub", func(t *testing.T) {
		repo := newRepo(t)
		git(t, repo, "branch", "hub")
		for _, packed := range []bool{false, true} {
			if packed {
				git(t, repo, "pack-refs", "--all")
			}
			_, err := validate(t, protocol.StartParams{Repo: repo})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "repo" ||
				fe.Msg != repo+` has a branch named "hub", which leaves no room for hub's job branches (hub/<id>): git cannot hold a branch hub and branches under hub/ at once` ||
				fe.Hint != "rename that branch, for example `git -C "+repo+" branch -m hub hub-old`, then start the job again" {
				t.Errorf("packed=%v: %#v", packed, err)
			}
		}
		// A read job makes no branch: the branch hub is not in its way.
		if _, err := validate(t, protocol.StartParams{Repo: repo, Kind: protocol.KindRead}); err != nil {
			t.Errorf("a read job: %v", err)
		}
	})
	t.Run("tag hub", func(t *testing.T) {
		repo := newRepo(t)
		git(t, repo, "tag", "hub")
		if _, err := validate(t, protocol.StartParams{Repo: repo}); err != nil {
			t.Errorf("a tag named hub: %v", err)
		}
	})
	t.Run("sparse checkout", func(t *testing.T) {
		repo := newRepo(t)
		git(t, repo, "sparse-checkout", "set", "--cone", "in")
		r, err := validate(t, protocol.StartParams{Repo: repo})
		if err != nil {
			t.Fatalf("a sparse checkout: %v", err)
		}
		if want := git(t, repo, "rev-parse", "HEAD"); r.BaseSHA != want {
			t.Errorf("base %s, want %s", r.BaseSHA, want)
		}
	})
	t.Run("orphan HEAD", func(t *testing.T) {
		repo := newRepo(t)
		main := git(t, repo, "rev-parse", "HEAD")
		git(t, repo, "checkout", "-q", "--orphan", "new")
		r, err := validate(t, protocol.StartParams{Repo: repo, Base: "main"})
		if err != nil || r.BaseSHA != main {
			t.Fatalf("an orphan HEAD with base main: %+v, %v", r, err)
		}
		_, err = validate(t, protocol.StartParams{Repo: repo})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "base" ||
			fe.Msg != repo+" is on branch new, which has no commits yet; pass a base to start from (such as main), or commit something on new first" ||
			!strings.Contains(fe.Hint, "commit something first") {
			t.Errorf("an orphan HEAD without a base: %#v", err)
		}
	})
	t.Run("no commits at all", func(t *testing.T) {
		repo, _ := filepath.EvalSymlinks(t.TempDir())
		git(t, repo, "init", "-q")
		_, err := validate(t, protocol.StartParams{Repo: repo, Base: "main"})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "repo" || !strings.Contains(fe.Msg, "has no commits yet") || fe.Hint != "commit something first; hub starts every job from a commit" {
			t.Errorf("an empty repository: %#v", err)
		}
	})
}
