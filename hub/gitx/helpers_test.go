package gitx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain gives the tests a private, empty HOME and no system git config,
// so neither the real home nor /etc/gitconfig is read or touched. A missing
// git binary fails the run: these tests exist to exercise real git.
func TestMain(m *testing.M) {
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "gitx tests need the git binary:", err)
		os.Exit(1)
	}
	home, err := os.MkdirTemp("", "gitx-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// No identity in the environment: CommitAll must bring its own.
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_GLOBAL",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// fixtureIdentity makes the fixture commits; it is not hub's identity.
var fixtureIdentity = []string{
	"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@localhost",
	"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@localhost",
}

// gitT runs git for a test's own setup and checks, and returns its trimmed output.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(string(gitRaw(t, dir, "", args...)))
}

// gitRaw runs git with stdin and returns its raw standard output.
func gitRaw(t testing.TB, dir, stdin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fixtureIdentity...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func writeFile(t testing.TB, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile keeps the mode of an existing file
		t.Fatal(err)
	}
}

// newRepo makes a repository at dir (created) on branch main with files
// (name → content) committed as "initial", and returns dir with symlinks
// resolved.
func newRepo(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	if len(files) == 0 {
		files = map[string]string{"README": "hello\n"}
	}
	for name, body := range files {
		writeFile(t, filepath.Join(dir, name), body, 0o644)
	}
	commitFixture(t, dir, "initial")
	return realDir(t, dir)
}

// commitFixture commits everything in dir as the fixture identity.
func commitFixture(t testing.TB, dir, msg string) string {
	t.Helper()
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "--no-verify", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

func realDir(t testing.TB, dir string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustOpen(t testing.TB, path string) *Repo {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return r
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
