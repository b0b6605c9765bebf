// Package deps makes a job's checkout ready to build and test without
// configuration: it recognises a project's dependency managers by the
// manifests and lockfiles at the checkout's commit (npm, pnpm, yarn, bun,
// Go, Python, Cargo) and puts in the dependency tree those files describe
// before the worker starts — from hub's environment cache when it has the
// tree, else from the user's own checkout when its lockfile is the
// commit's, else by installing from the lockfile (and then keeping the
// tree in the cache for the next job). A repository can say more in a
// committed .hub.json: a dependencies command of its own, or none, and a
// setup command run in every checkout after them.
//
// It must never put in a tree the commit does not pin (a lockfile that
// differs describes another tree), write into the user's checkout or into
// a cache entry through a job's checkout (files are copied, never
// hard-linked; a symlink that points into the source is pointed at the
// copy), or leave a half-made cache entry: an entry appears whole, by one
// rename, or not at all.
package deps

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/internal/strictjson"
	"github.com/hub-agents/hub/internal/text"
)

// RepoFile is the committed file at the top of a repository that sets how
// its jobs' environments are made, read at the job's base commit.
const RepoFile = ".hub.json"

// The values of Settings.Deps that are not a command.
const (
	DepsAuto = "auto" // recognise the managers by their lockfiles (the default)
	DepsOff  = "off"  // install nothing: the setup command, if any, does it all
)

// maxManifest bounds the manifests and lockfiles read (a lockfile of a
// large monorepo runs to a few MiB).
const maxManifest = 64 << 20

// Settings say how a checkout's environment is made. The job's own
// fields win over the repository's RepoFile, field by field.
type Settings struct {
	// Deps is "auto" (or empty), "off", or a shell command that installs
	// the dependencies in place of what hub would run; its output (what it
	// leaves in the checkout that git does not track) is cached like an
	// installed tree, keyed by the manifests and lockfiles and the command.
	Deps string `json:"deps,omitempty"`
	// Setup is a shell command run in every checkout (the worker's and
	// verify's) after the dependencies are in: code generation, a local
	// config from its template. It is not cached: it may read any file.
	Setup string `json:"setup,omitempty"`
}

// Check refuses settings hub cannot use, saying which field and why.
func (s Settings) Check() (field string, err error) {
	switch {
	case strings.ContainsRune(s.Deps, 0):
		return "deps", errors.New("deps contains a NUL byte")
	case strings.ContainsRune(s.Setup, 0):
		return "setup", errors.New("setup contains a NUL byte")
	case strings.TrimSpace(s.Deps) != s.Deps && strings.TrimSpace(s.Deps) == "":
		return "deps", errors.New(`deps is blank: use "auto", "off" or a command`)
	}
	return "", nil
}

// Over is s with what job sets put over it.
func (s Settings) Over(job Settings) Settings {
	if job.Deps != "" {
		s.Deps = job.Deps
	}
	if job.Setup != "" {
		s.Setup = job.Setup
	}
	return s
}

// ReadSettings reads RepoFile at commit rev: zero Settings when there is
// none, an error naming the file and the fix when it cannot be used.
func ReadSettings(r *gitx.Repo, rev string) (Settings, error) {
	var s Settings
	b, _, ok, err := gitx.ReadFile(r, rev, RepoFile, 1<<20)
	if err != nil || !ok {
		return s, err
	}
	if err := strictjson.Decode(b, &s); err != nil {
		return s, fmt.Errorf("%s at %s: %w (its keys are deps and setup)", RepoFile, text.ShortSHA(rev), err)
	}
	if field, err := s.Check(); err != nil {
		return s, fmt.Errorf("%s at %s: %s: %w", RepoFile, text.ShortSHA(rev), field, err)
	}
	return s, nil
}

// Tree is one dependency tree a commit pins: who installs it, from what,
// and where it lives.
type Tree struct {
	Manager  string // npm, pnpm, yarn, bun, go, pip, uv, cargo; "custom" for the repository's own deps command
	Lockfile string // the file that pins it ("package.json" for npm with no lockfile)
	Install  string // the shell command that installs it in a checkout
	Tool     string // the program the install needs on PATH
	// Dirs are what the install leaves in the checkout (node_modules,
	// .venv); none for managers that fill a cache shared by every checkout
	// (Go's module cache, Cargo's registry). A custom command's are found
	// after it ran.
	Dirs []string
	// Relocate: the tree names its own absolute path (a Python venv), so a
	// copy has that path rewritten to its new place.
	Relocate bool
	// Packages is how many packages the lockfile pins, when hub can count
	// them (0: unknown); for progress.
	Packages int
	// Committed names the tree's folder when the commit has it (vendored):
	// then nothing is put in.
	Committed string

	files []keyFile // what the cache key is made of, besides the command and the platform
}

type keyFile struct {
	name string
	data []byte
}

// Detect lists the dependency trees commit rev of r pins, by its top-level
// manifests and lockfiles, as s says (off: none; a command: that command
// alone). It reads in-process and runs nothing.
func Detect(r *gitx.Repo, rev string, s Settings) ([]Tree, error) {
	if s.Deps == DepsOff {
		return nil, nil
	}
	top, committed, err := gitx.TopEntries(r, rev)
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]byte, error) {
		b, _, _, err := gitx.ReadFile(r, rev, name, maxManifest)
		return b, err
	}
	// Every manifest and lockfile present, in a fixed order: what a
	// custom command is keyed by, and what each manager reads.
	var names []string
	for n := range top {
		if knownManifest(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	files := map[string][]byte{}
	for _, n := range names {
		b, err := read(n)
		if err != nil {
			return nil, err
		}
		files[n] = b
	}
	pick := func(ns ...string) []keyFile {
		var out []keyFile
		for _, n := range ns {
			if b, ok := files[n]; ok {
				out = append(out, keyFile{n, b})
			}
		}
		return out
	}

	if s.Deps != "" && s.Deps != DepsAuto {
		t := Tree{Manager: "custom", Lockfile: RepoFile, Install: s.Deps, Tool: "sh"}
		for _, n := range names {
			t.files = append(t.files, keyFile{n, files[n]})
		}
		return []Tree{t}, nil
	}

	var trees []Tree
	if _, ok := files["package.json"]; ok {
		trees = append(trees, nodeTree(files, pick))
	}
	if _, ok := files["go.mod"]; ok {
		trees = append(trees, Tree{Manager: "go", Lockfile: lockOr(files, "go.sum", "go.mod"), Install: "go mod download", Tool: "go",
			files: pick("go.mod", "go.sum"), Packages: countGoSum(files["go.sum"])})
	}
	if t, ok := pythonTree(files, names, pick); ok {
		trees = append(trees, t)
	}
	if _, ok := files["Cargo.toml"]; ok {
		t := Tree{Manager: "cargo", Lockfile: lockOr(files, "Cargo.lock", "Cargo.toml"), Install: "cargo fetch", Tool: "cargo",
			files: pick("Cargo.toml", "Cargo.lock")}
		if _, ok := files["Cargo.lock"]; ok {
			t.Install = "cargo fetch --locked"
		}
		trees = append(trees, t)
	}
	// A tree the repository commits (a vendored node_modules) is the
	// commit's own: hub never installs over it.
	for i, t := range trees {
		for _, d := range t.Dirs {
			if committed[d] || top[d] {
				trees[i].Committed = d
			}
		}
	}
	return trees, nil
}

// knownManifest says whether a top-level file is one a manager reads.
func knownManifest(n string) bool {
	switch n {
	case "package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lock", "bun.lockb",
		".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml",
		"go.mod", "go.sum", "go.work", "go.work.sum",
		"uv.lock", "pyproject.toml", "setup.py", "setup.cfg", "poetry.lock",
		"Cargo.toml", "Cargo.lock", RepoFile:
		return true
	}
	return strings.HasPrefix(n, "requirements") && strings.HasSuffix(n, ".txt")
}

func lockOr(files map[string][]byte, lock, manifest string) string {
	if _, ok := files[lock]; ok {
		return lock
	}
	return manifest
}

// nodeLocks are the Node lockfiles, each with its manager and the command
// that installs exactly what it pins, in the order they are looked for.
var nodeLocks = []struct{ file, manager, install string }{
	{"package-lock.json", "npm", "npm ci --prefer-offline --no-audit --no-fund"},
	{"npm-shrinkwrap.json", "npm", "npm ci --prefer-offline --no-audit --no-fund"},
	{"pnpm-lock.yaml", "pnpm", "pnpm install --frozen-lockfile"},
	{"yarn.lock", "yarn", "yarn install --frozen-lockfile"},
	{"bun.lock", "bun", "bun install --frozen-lockfile"},
	{"bun.lockb", "bun", "bun install --frozen-lockfile"},
}

func nodeTree(files map[string][]byte, pick func(...string) []keyFile) Tree {
	for _, l := range nodeLocks {
		lock, ok := files[l.file]
		if !ok {
			continue
		}
		t := Tree{Manager: l.manager, Lockfile: l.file, Install: l.install, Tool: l.manager, Dirs: []string{"node_modules"},
			files: pick("package.json", l.file, ".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml")}
		switch {
		case l.manager == "npm":
			t.Packages = countNpmLock(lock)
		case l.manager == "yarn" && (bytes.Contains(lock, []byte("__metadata:")) || files[".yarnrc.yml"] != nil):
			t.Install = "yarn install --immutable" // Yarn 2 and later
		}
		return t
	}
	// package.json alone: npm resolves the ranges now, and writes no
	// lockfile into the checkout (which hub would then have to keep out).
	return Tree{Manager: "npm", Lockfile: "package.json", Install: "npm install --no-package-lock --no-audit --no-fund", Tool: "npm",
		Dirs: []string{"node_modules"}, files: pick("package.json", ".npmrc")}
}

func pythonTree(files map[string][]byte, names []string, pick func(...string) []keyFile) (Tree, bool) {
	venv := func(install string) string {
		return "python3 -m venv .venv && .venv/bin/python -m pip install --disable-pip-version-check --no-input " + install
	}
	if _, ok := files["uv.lock"]; ok {
		return Tree{Manager: "uv", Lockfile: "uv.lock", Install: "uv sync --frozen", Tool: "uv", Dirs: []string{".venv"}, Relocate: true,
			files: pick("pyproject.toml", "uv.lock")}, true
	}
	var reqs []string
	for _, n := range names {
		if strings.HasPrefix(n, "requirements") && strings.HasSuffix(n, ".txt") {
			reqs = append(reqs, n)
		}
	}
	if len(reqs) > 0 {
		args := make([]string, 0, 2*len(reqs))
		for _, r := range reqs {
			args = append(args, "-r", r)
		}
		return Tree{Manager: "pip", Lockfile: strings.Join(reqs, ", "), Install: venv(strings.Join(args, " ")), Tool: "python3",
			Dirs: []string{".venv"}, Relocate: true, files: pick(reqs...)}, true
	}
	if _, ok := files["pyproject.toml"]; ok {
		return Tree{Manager: "pip", Lockfile: "pyproject.toml", Install: venv("-e ."), Tool: "python3", Dirs: []string{".venv"},
			Relocate: true, files: pick("pyproject.toml", "setup.py", "setup.cfg")}, true
	}
	return Tree{}, false
}

// countNpmLock counts the packages a package-lock.json pins (lockfile
// version 2 and 3: its "packages" other than the root), 0 when it cannot.
func countNpmLock(b []byte) int {
	var l struct {
		Packages map[string]struct{} `json:"packages"`
	}
	if err := jsonUnmarshal(b, &l); err != nil {
		return 0
	}
	n := 0
	for k := range l.Packages {
		if strings.Contains(k, "node_modules/") {
			n++
		}
	}
	return n
}

// countGoSum counts the module versions go.sum names (its /go.mod lines
// aside).
func countGoSum(b []byte) int {
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			n++
		}
	}
	return n
}

// offline is t's install with its manager's switch that keeps it off the
// network (packages only from the tool's own cache), for an install that
// runs where there is none: it then fails at once, saying why, rather
// than retrying for minutes. A custom command is run as it is.
func (t Tree) offline() string {
	switch t.Manager {
	case "npm", "pnpm", "cargo", "uv":
		return t.Install + " --offline"
	case "yarn":
		if strings.Contains(t.Install, "--immutable") {
			return "YARN_ENABLE_NETWORK=0 " + t.Install // Yarn 2 and later
		}
		return t.Install + " --offline"
	case "go":
		return "GOPROXY=off GOFLAGS=-mod=mod " + t.Install
	case "pip":
		return "PIP_NO_INDEX=1 " + t.Install
	}
	return t.Install
}

// Pins is what t is made from, apart from the toolchain: its manager,
// command and manifests. Two trees with the same Pins hold the same
// dependencies (verify tells the base's from a tree the worker changed).
func (t Tree) Pins() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", t.Manager, t.Install)
	for _, f := range t.files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Changed names the manifests and lockfiles of t that differ from base's
// (a tree of the same manager at another commit), in order.
func (t Tree) Changed(base Tree) []string {
	was := map[string][]byte{}
	for _, f := range base.files {
		was[f.name] = f.data
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range t.files {
		seen[f.name] = true
		if b, ok := was[f.name]; !ok || !bytes.Equal(b, f.data) {
			out = append(out, f.name)
		}
	}
	for _, f := range base.files {
		if !seen[f.name] {
			out = append(out, f.name)
		}
	}
	return out
}

// keyVersion changes when what a cache entry holds changes shape.
const keyVersion = "hub-env-1"

// Key is the cache key of t made ready with toolVersion: the manifests and
// lockfiles, the command, the platform and the toolchain.
func (t Tree) Key(toolVersion string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s/%s\x00%s\x00", keyVersion, t.Manager, t.Install, runtime.GOOS, runtime.GOARCH, toolVersion)
	for _, f := range t.files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// What is how the tree reads in a line: "npm ci (621 packages)".
func (t Tree) What() string {
	if t.Packages > 0 {
		return fmt.Sprintf("%s (%s packages)", t.Install, thousands(t.Packages))
	}
	return t.Install
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
