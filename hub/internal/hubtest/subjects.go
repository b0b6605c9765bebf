package hubtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Subject is a real open-source project scripts/subjects.sh fetched from a
// registry, with its own tests: the npm package's published tarball or the
// Go module's source.
type Subject struct {
	Slug string
	Kind string // npm or go
	Dir  string // <subjects>/<slug>
	Test string // the command that runs its tests
}

// Subjects is the folder scripts/subjects.sh fetched into, named by
// HUB_TEST_SUBJECTS; unset fails the test, with the command that fetches
// them (a skip would hide that hub was never tried on a real project), but
// in make check's fast lane (-short), which installs nothing.
func Subjects(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("HUB_TEST_SUBJECTS")
	if dir == "" {
		installsNothing(t, "the real projects")
		t.Fatalf("HUB_TEST_SUBJECTS is not set: run the tests with `make test` (it fetches the real projects), " +
			"or export HUB_TEST_SUBJECTS=$(./scripts/subjects.sh)")
	}
	return dir
}

// FetchedSubject is subject slug, fetched whole.
func FetchedSubject(t testing.TB, slug string) Subject {
	t.Helper()
	d := filepath.Join(Subjects(t), slug)
	if _, err := os.Stat(filepath.Join(d, ".done")); err != nil {
		t.Fatalf("subject %s is not fetched in %s: run ./scripts/subjects.sh", slug, filepath.Dir(d))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return Subject{Slug: slug, Kind: read("KIND"), Dir: d, Test: read("TEST")}
}

// UseSubjectCaches points the test's environment (and so the daemon's, and
// every job's) at the subjects' warm npm cache and Go module cache, with no
// Go proxy: a real project's install and tests run from them, offline for
// Go. Call it before the daemon starts.
func UseSubjectCaches(t testing.TB) {
	t.Helper()
	dir := Subjects(t)
	t.Setenv("NPM_CONFIG_CACHE", filepath.Join(dir, "npm-cache"))
	t.Setenv("GOMODCACHE", filepath.Join(dir, "gomod"))
	t.Setenv("GOCACHE", filepath.Join(dir, "gocache")) // a user's build cache is warm too
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("GOPROXY", "off")
}

// Checkout makes a user's checkout of s at dir: its source committed on
// main with a .gitignore of ignore (what the project's own repository
// ignores), and — for an npm project when installed — its dependencies
// installed, as a user who ran npm install has them. It returns dir.
func (s Subject) Checkout(t testing.TB, dir string, installed bool, ignore ...string) string {
	t.Helper()
	cp := func(from, to string) {
		if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", from, err, out)
		}
	}
	cp(filepath.Join(s.Dir, "src"), dir)
	if len(ignore) > 0 {
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(strings.Join(ignore, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "the published "+s.Slug)
	if installed && s.Kind == "npm" {
		cp(filepath.Join(s.Dir, "node_modules"), filepath.Join(dir, "node_modules"))
	}
	return dir
}
