package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestHomeInsideGit: Ensure refuses a HUB_HOME inside a git working tree —
// a dotfiles repository above it, a linked worktree (a gitfile), through a
// symlink — and makes nothing there; it takes one outside, one whose
// checkout is above GIT_CEILING_DIRECTORIES, and one holding repositories of
// its own below. Each answer agrees with git run where HUB_HOME would be.
func TestHomeInsideGit(t *testing.T) {
	base := t.TempDir()
	t.Setenv("HOME", base)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CEILING_DIRECTORIES", "")
	dots := filepath.Join(base, "dots")
	if err := os.MkdirAll(filepath.Join(dots, ".local", "share"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dots, "init", "-q", "-b", "main")
	git(t, dots, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "--allow-empty", "-m", "initial")
	git(t, dots, "worktree", "add", "-q", filepath.Join(base, "linked"))
	if err := os.Symlink(filepath.Join(dots, ".local"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "fake", ".git"), 0o755); err != nil { // no HEAD: not a repository
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		home    string
		ceiling string
		refused bool
	}{
		{"in a dotfiles repository", filepath.Join(dots, ".local", "share", "hub"), "", true},
		{"at a repository's top", dots, "", true},
		{"in a linked worktree", filepath.Join(base, "linked", "hub"), "", true},
		{"through a symlink into a repository", filepath.Join(base, "link", "hub"), "", true},
		{"outside any repository", filepath.Join(base, "plain", "hub"), "", false},
		{"under an empty .git folder", filepath.Join(base, "fake", "hub"), "", false},
		{"with the repository above the ceiling", filepath.Join(dots, ".local", "share", "hub"), filepath.Join(dots, ".local"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GIT_CEILING_DIRECTORIES", tc.ceiling)
			p := Paths{Home: tc.home}
			_, statErr := os.Stat(tc.home)
			existed := statErr == nil
			err := p.Ensure()
			if tc.refused {
				if !errors.Is(err, ErrInGitCheckout) || !strings.Contains(err.Error(), "set HUB_HOME to a folder outside any git checkout") {
					t.Fatalf("Ensure: %v, want it refused, saying what to do", err)
				}
				if _, err := os.Stat(p.JobsDir()); !existed && err == nil {
					t.Error("a refused HUB_HOME was made")
				}
			} else if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			// git, run in HUB_HOME (or where it would be), agrees.
			cmd := exec.Command("git", "rev-parse", "--show-toplevel")
			for cmd.Dir = tc.home; ; cmd.Dir = filepath.Dir(cmd.Dir) {
				if _, err := os.Stat(cmd.Dir); err == nil {
					break
				}
			}
			out, gerr := cmd.CombinedOutput()
			if inside := gerr == nil; inside != tc.refused {
				t.Errorf("hub says refused=%v, git in %s says %q (%v)", tc.refused, cmd.Dir, out, gerr)
			}
		})
	}

	// A HUB_HOME's own repositories below it (the jobs' worktrees) do not count.
	p := Paths{Home: filepath.Join(base, "plain", "hub")}
	wt := p.Worktree("job1")
	if err := os.MkdirAll(wt, 0o700); err != nil {
		t.Fatal(err)
	}
	git(t, wt, "init", "-q")
	if err := p.Ensure(); err != nil {
		t.Errorf("Ensure with a repository below HUB_HOME: %v", err)
	}
}
