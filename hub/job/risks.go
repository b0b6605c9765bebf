package job

import (
	"bufio"
	"bytes"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
)

// Risk flags a review packet shows, each worth a reviewer's second look.
const (
	RiskOutside     = "outside" // files outside the job's declared files
	RiskTestDeleted = "tests-deleted"
	RiskTestSkipped = "tests-skipped"
	RiskLockfile    = "lockfile"
	RiskCI          = "ci"
	RiskSecret      = "secret" // an added line that looks like a credential
	// RiskRefs: refs of the user's repository moved while the job ran, or
	// its stash was taken (view.Alerts says which, and how to put them back).
	RiskRefs = "refs-moved"
)

// lockfiles are the dependency lockfiles a job rarely has reason to change.
var lockfiles = map[string]bool{
	"go.sum": true, "package-lock.json": true, "yarn.lock": true, "pnpm-lock.yaml": true, "bun.lockb": true,
	"Cargo.lock": true, "poetry.lock": true, "Pipfile.lock": true, "uv.lock": true, "Gemfile.lock": true,
	"composer.lock": true, "mix.lock": true, "pubspec.lock": true, "Podfile.lock": true, "gradle.lockfile": true,
}

// isCI reports whether p configures a CI service.
func isCI(p string) bool {
	switch {
	case strings.HasPrefix(p, ".github/workflows/"), strings.HasPrefix(p, ".circleci/"), strings.HasPrefix(p, ".buildkite/"),
		strings.HasPrefix(p, ".gitlab/ci/"):
		return true
	}
	switch p {
	case ".gitlab-ci.yml", ".travis.yml", "Jenkinsfile", "azure-pipelines.yml", "bitbucket-pipelines.yml", ".drone.yml", "appveyor.yml":
		return true
	}
	return false
}

var testPath = regexp.MustCompile(`(^|/)(tests?|__tests__|spec)/|_test\.go$|(^|/)test_[^/]*\.py$|_test\.py$|\.(test|spec)\.[cm]?[jt]sx?$|Test\.java$|_spec\.rb$`)

// skipMarker matches a line that skips a test, in the common frameworks.
var skipMarker = regexp.MustCompile(`\bt\.Skip(f|Now)?\(|\b(it|describe|test)\.skip\(|\bx(it|describe)\(|@pytest\.mark\.skip|@unittest\.skip|@(Ignore|Disabled)\b|#\[ignore\]|\bskip\(\s*["']`)

// Risks flags what in a job's change deserves a second look: files outside
// the ones it was pointed at (declared, when it was), tests deleted or
// skipped, a lockfile or CI configuration changed, an added line that looks
// like a credential. patch is base..head's unified diff (nil: not read).
func Risks(files []protocol.FileChange, declared []string, patch []byte) []string {
	var risks []string
	add := func(r string) {
		if !slices.Contains(risks, r) {
			risks = append(risks, r)
		}
	}
	for _, f := range files {
		switch {
		case f.Change == "deleted" && testPath.MatchString(f.Path):
			add(RiskTestDeleted)
		case lockfiles[path.Base(f.Path)]:
			add(RiskLockfile)
		case isCI(f.Path):
			add(RiskCI)
		}
		if len(declared) > 0 && !under(f.Path, declared) {
			add(RiskOutside)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Bytes()
		if len(l) < 2 || l[0] != '+' || bytes.HasPrefix(l, []byte("+++ ")) {
			continue
		}
		s := string(l[1:])
		if skipMarker.MatchString(s) {
			add(RiskTestSkipped)
		}
		if redact.String(s) != s {
			add(RiskSecret)
		}
	}
	order := []string{RiskSecret, RiskTestDeleted, RiskTestSkipped, RiskOutside, RiskLockfile, RiskCI}
	slices.SortFunc(risks, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	return risks
}

// under reports whether p is one of dirs or files, or inside one of them.
func under(p string, declared []string) bool {
	for _, d := range declared {
		d = strings.TrimSuffix(strings.TrimPrefix(path.Clean(strings.ReplaceAll(d, "\\", "/")), "./"), "/")
		if d == "." || d == "" || p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
