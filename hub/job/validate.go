package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
	"github.com/hub-agents/hub/internal/micros"
	"github.com/hub-agents/hub/router"
)

// MaxTaskBytes bounds a task's text. It also travels to exec workers as
// HUB_TASK, and Linux refuses a single environment string over 128 KiB.
const MaxTaskBytes = 100 << 10

// MaxCommandBytes bounds exec and verify: each runs as `sh -c <command>`,
// one argument, and Linux refuses a single argument of MAX_ARG_STRLEN
// (128 KiB, its terminating NUL included) or more.
const MaxCommandBytes = 128<<10 - 1

// Limits on timeouts a caller may ask for.
const maxTimeoutS = 7 * 24 * 3600

// FieldError is a refused start: what is wrong, with which field, and what to do.
type FieldError struct {
	Field string
	Msg   string
	Hint  string
	// Refused marks a valid request hub cannot grant (capability, cap), as
	// opposed to a malformed one.
	Refused bool
}

func (e *FieldError) Error() string { return e.Msg }

func bad(field, hint, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

func refused(field, hint, format string, args ...any) *FieldError {
	e := bad(field, hint, format, args...)
	e.Refused = true
	return e
}

// Request is a validated start: everything the daemon needs to create the job.
type Request struct {
	Params  protocol.StartParams // normalized: defaults filled in
	Repo    *gitx.Repo           // nil for a cwd read job
	BaseSHA string
	// Target is the branch the base was on: where the job's work lands by default.
	Target    string
	Engine    engine.Engine
	MaxMicros micros.Micros
	Notes     []string
	// Decision is the router's: why this engine, and the fallbacks.
	Decision router.Decision
}

// Validate checks a start request completely before anything is created.
// It reads the repo in-process (no git process) so start stays fast.
func Validate(ctx context.Context, p protocol.StartParams, s config.Settings, reg *engine.Registry, in RouteInputs) (*Request, error) {
	r := &Request{}
	if strings.TrimSpace(p.Task) == "" {
		return nil, bad("task", "say what the worker should do, as you would to a colleague", "task is empty")
	}
	if len(p.Task) > MaxTaskBytes {
		return nil, bad("task", "put long material in a file in the repo and name it in the task and files",
			"task is %s; the limit is %s", byteSize(len(p.Task)), byteSize(MaxTaskBytes))
	}
	if !utf8.ValidString(p.Task) || strings.ContainsRune(p.Task, 0) {
		return nil, bad("task", "send the task as UTF-8 text", "task is not valid UTF-8 text")
	}
	askedBudget := p.MaxUSD != nil
	p, maxMicros, err := normalize(p, s)
	if err != nil {
		return nil, err
	}
	r.MaxMicros = maxMicros
	if p.MaxTurns < 0 {
		return nil, bad("max_turns", "pass a positive number of turns", "max_turns is negative")
	}
	if strings.ContainsRune(p.Verify, 0) {
		return nil, bad("verify", "pass a shell command", "verify contains a NUL byte")
	}
	if field, err := (deps.Settings{Deps: p.Deps, Setup: p.Setup}).Check(); err != nil {
		return nil, bad(field, "pass a shell command", "%v", err)
	}
	for _, c := range []struct{ field, cmd string }{{"exec", p.Exec}, {"verify", p.Verify}, {"setup", p.Setup}, {"deps", p.Deps}} {
		if err := commandSize(c.field, c.cmd); err != nil {
			return nil, err
		}
	}
	for _, f := range p.Files {
		if f == "" || filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			return nil, bad("files", "name files relative to the repo's top", "file %q is not a path inside the repo", f)
		}
	}

	// Where the job runs.
	switch {
	case p.Repo != "":
		if !filepath.IsAbs(p.Repo) {
			return nil, bad("repo", "pass an absolute path", "repo %q is not an absolute path", p.Repo)
		}
		repo, err := gitx.Open(p.Repo)
		if err != nil {
			return nil, bad("repo", repoHint(err), "%v", err)
		}
		sha, err := repo.Resolve(p.Base)
		if errors.Is(err, gitx.ErrNoCommits) {
			return nil, bad("base", "pass `base` (a branch, tag or commit) to start from, or commit something first; hub starts every job from a commit", "%v", err)
		}
		if err != nil {
			return nil, bad("base", "pass a branch, tag or commit of that repo, or leave `base` out for HEAD", "%v", err)
		}
		if err := checkRepoShape(repo, p); err != nil {
			return nil, err
		}
		// A .worktreeinclude hub would refuse at preparing is refused
		// now, before anything is made (in-process, like the rest).
		if err := repo.CheckInclude("HEAD", sha); err != nil {
			return nil, bad("repo", fmt.Sprintf("edit %s and start the job again", filepath.Join(repo.Top, gitx.IncludeFile)), "%v", err)
		}
		// So is a .hub.json hub could not use.
		if _, err := deps.ReadSettings(repo, sha); err != nil {
			return nil, bad("repo", fmt.Sprintf("fix %s and commit it, or start from a base without it", deps.RepoFile), "%v", err)
		}
		r.Repo, r.BaseSHA, r.Target = repo, sha, repo.BranchOf(p.Base)
		p.Repo = repo.Top
		if p.Base == "" {
			p.Base = "HEAD"
		}
	case p.Kind == protocol.KindRead && p.Cwd != "":
		if !filepath.IsAbs(p.Cwd) {
			return nil, bad("cwd", "pass an absolute path", "cwd %q is not an absolute path", p.Cwd)
		}
		fi, err := os.Stat(p.Cwd)
		if err != nil || !fi.IsDir() {
			return nil, bad("cwd", "pass an existing directory", "cwd %q is not a directory", p.Cwd)
		}
	default:
		if p.Kind == protocol.KindRead {
			return nil, bad("repo", "pass `repo` (a git checkout) or `cwd` (a directory) for a read job", "a read job needs repo or cwd")
		}
		return nil, bad("repo", "pass the absolute path of a git checkout", "repo is required for a write job")
	}

	if p.Queue != "" {
		q, ok := s.Queues[p.Queue]
		if !ok {
			return nil, bad("queue", "name a queue of config.json's queues, or leave queue out to run the job on this machine", "there is no queue %q", p.Queue)
		}
		if r.Repo == nil {
			return nil, bad("queue", "pass repo: a remote worker gets the repository from the queue's git remote", "a job on a remote queue needs a repo")
		}
		r.Notes = append(r.Notes, queueNote(p.Queue, q))
	}
	// Engine: the one named, or the router's pick.
	if err := knownEngine(p, reg); err != nil {
		return nil, err
	}
	d := Route(ctx, p, r.Repo != nil, r.MaxMicros, reg, in)
	if d.Chosen == "" {
		return nil, routeRefusal(d)
	}
	r.Decision = d
	r.Engine, _ = reg.Get(d.Chosen)
	p.Engine = d.Chosen
	// An engine that cannot spend books no money unless the caller set a
	// budget: the default reservation would only hold the monthly cap
	// against free work (at $2 a job, 50 exec jobs fill a $100 month).
	if !askedBudget && r.Engine.Capabilities().Pays == protocol.PaysFree {
		r.MaxMicros, p.MaxUSD = 0, new(float64)
	}
	if d.Request.Auto() {
		r.Notes = append(r.Notes, d.Summary())
	}
	if d.Where != nil && d.Where.Queue != "" {
		p.Queue = d.Where.Queue
		r.Notes = append(r.Notes, "engine auto: "+d.Where.Why, queueNote(p.Queue, s.Queues[p.Queue]))
	}
	r.Notes = append(r.Notes, d.Notes...)
	switch {
	case p.Isolation == protocol.IsolationWorktree:
		r.Notes = append(r.Notes, WorktreeNote)
	case engine.Sandboxed(p.Isolation) && r.Repo != nil:
		r.Notes = append(r.Notes, sandboxNote(p.Isolation))
	}
	r.Params = p
	return r, nil
}

// queueNote says where a job on a remote queue runs.
func queueNote(name string, q config.Queue) string {
	q = q.Defaulted(name)
	return fmt.Sprintf("runs on queue %s (%s, task queue %s), not on this machine; its branch comes back through %s",
		name, q.Runner, q.TaskQueue, q.Remote)
}

// WorktreeNote is what a job at isolation worktree can reach: everything its
// user can. The hostile-worker tests hold it to that.
const WorktreeNote = "isolation worktree: a separate checkout and branch, not a sandbox; the worker runs as you: " +
	"it can read ~/.ssh, hub's keys and other repositories, write outside its worktree, move other branches, push, " +
	"and use the network (ask for isolated or untrusted to stop that)"

// sandboxNote is what a sandboxed job's worker can still reach of the
// repository and the machine: said, since it is not nothing.
func sandboxNote(level protocol.Isolation) string {
	n := "isolation " + string(level) + ": the worker can read the repository's whole object store (any commit of it, other jobs' included, by its id), not its refs, config or other checkouts"
	switch level {
	case protocol.IsolationUntrusted:
		n += "; its setup (installing the base's dependencies, the setup command) runs in the same sandbox before the worker, but with the machine's network, all of it, as an install needs; " +
			"the worker, verify and landing's check have none, nor their installs and setup, which run what the worker committed: " +
			"dependencies the worker changed are installed without the network (from what the job's own cache holds), or verify says they could not be"
	case protocol.IsolationIsolated:
		n += "; verify's and landing's checks install the manifests the worker committed, and run their install scripts and the setup command, with the machine's network (ask for untrusted to check without it)"
	}
	if sandbox.Probe().Mechanism == sandbox.MechLandlock {
		n += "; under Landlock (bubblewrap cannot make namespaces here) it also sees the machine's process list and can connect to unix sockets it knows the path of (hub's daemon refuses it)"
	}
	return n
}

// normalize checks and fills in what start and route explain share: kind,
// isolation, budget and timeouts.
func normalize(p protocol.StartParams, s config.Settings) (protocol.StartParams, micros.Micros, error) {
	switch p.Kind {
	case "":
		p.Kind = protocol.KindWrite
	case protocol.KindWrite, protocol.KindRead:
	default:
		return p, 0, bad("kind", "use write (change code on a branch) or read (answer a question)", "unknown kind %q", p.Kind)
	}
	switch p.Isolation {
	case "":
		p.Isolation = protocol.IsolationWorktree
	case protocol.IsolationWorktree, protocol.IsolationSandbox, protocol.IsolationIsolated, protocol.IsolationUntrusted:
	default:
		return p, 0, bad("isolation", "use one of "+protocol.JoinIsolation(protocol.IsolationLevels, ", "), "unknown isolation level %q", p.Isolation)
	}
	if engine.Sandboxed(p.Isolation) && p.Repo == "" && p.Cwd != "" {
		return p, 0, bad("isolation", "pass `repo` instead of `cwd`, or ask for `isolation` worktree",
			"isolation %s needs a repo: the sandbox is built around the job's own checkout", p.Isolation)
	}

	// Money.
	maxUSD := s.DefaultMaxUSD
	if p.MaxUSD != nil {
		maxUSD = *p.MaxUSD
	}
	switch {
	case math.IsNaN(maxUSD) || math.IsInf(maxUSD, 0):
		return p, 0, bad("max_usd", "pass a dollar amount such as 2.5", "max_usd is not a number")
	case maxUSD < 0:
		return p, 0, bad("max_usd", "pass 0 for a job that may spend nothing, or a positive amount", "max_usd is negative (%g)", maxUSD)
	case maxUSD > s.MaxJobUSD:
		return p, 0, refused("max_usd", fmt.Sprintf("ask for at most $%.2f, or raise max_job_usd in hub's config", s.MaxJobUSD),
			"max_usd $%.2f is above the per-job ceiling of $%.2f", maxUSD, s.MaxJobUSD)
	case maxUSD > s.MonthlyCapUSD:
		return p, 0, refused("max_usd", "ask for less, or raise monthly_cap_usd", "max_usd $%.2f is above the monthly cap of $%.2f", maxUSD, s.MonthlyCapUSD)
	}
	p.MaxUSD = &maxUSD

	// Timeouts.
	for _, t := range []struct {
		name string
		v    *int
		def  int
	}{{"timeout_s", &p.TimeoutS, s.TimeoutS}, {"verify_timeout_s", &p.VerifyTimeoutS, s.VerifyTimeoutS},
		{"setup_timeout_s", &p.SetupTimeoutS, s.SetupTimeoutS},
		{"ask_timeout_s", &p.AskTimeoutS, s.AskTimeoutS}, {"stall_timeout_s", &p.StallTimeoutS, s.StallTimeoutS}} {
		switch {
		case *t.v < 0:
			return p, 0, bad(t.name, "pass a number of seconds, or leave it out for the default", "%s is negative", t.name)
		case *t.v > maxTimeoutS:
			return p, 0, bad(t.name, "at most a week (604800 s)", "%s of %d s is too long", t.name, *t.v)
		case *t.v == 0:
			*t.v = t.def
		}
	}
	// Limits: what the job leaves out comes from the config.
	l := protocol.Limits{}
	if p.Limits != nil {
		l = *p.Limits
	}
	for _, f := range []struct {
		name     string
		v        *int
		def, min int
	}{{"limits.processes", &l.Processes, s.LimitProcesses, 16}, {"limits.memory_mb", &l.MemoryMB, s.LimitMemoryMB, 16},
		{"limits.disk_mb", &l.DiskMB, s.LimitDiskMB, 1}, {"limits.file_mb", &l.FileMB, s.MaxFileMB, 1}} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < f.min:
			return p, 0, bad(f.name, fmt.Sprintf("pass at least %d, or leave it out for hub's config (%d)", f.min, f.def), "%s of %d is too small", f.name, *f.v)
		}
	}
	p.Limits = &l
	return p, micros.FromUSD(*p.MaxUSD), nil
}

// Explain is the router's decision for p, made as start would make it,
// without the checks that only matter to a real start (task, repo, base).
// A job with neither repo nor cwd is taken to have a repo.
func Explain(ctx context.Context, p protocol.StartParams, s config.Settings, reg *engine.Registry, in RouteInputs) (router.Decision, error) {
	p, maxMicros, err := normalize(p, s)
	if err != nil {
		return router.Decision{}, err
	}
	if err := knownEngine(p, reg); err != nil {
		return router.Decision{}, err
	}
	hasRepo := p.Repo != "" || p.Cwd == ""
	return Route(ctx, p, hasRepo, maxMicros, reg, in), nil
}

// knownEngine refuses an engine name hub does not have ("" and auto are the router's).
func knownEngine(p protocol.StartParams, reg *engine.Registry) *FieldError {
	if p.Engine == "" || p.Engine == router.Auto {
		return nil
	}
	if _, ok := reg.Get(p.Engine); !ok {
		return bad("engine", "use auto or one of: "+strings.Join(reg.Names(), ", "), "unknown engine %q", p.Engine)
	}
	return nil
}

// RouteInputs are what the router needs beyond the request and the
// engines: the month's money, quota signals, routing.json and the time.
type RouteInputs struct {
	// Live is the work in progress by repository (its top): what each live
	// job touched so far.
	Live    map[string][]router.Live
	Money   router.Money
	Quota   []protocol.QuotaSignal
	Weights router.Weights
	Now     time.Time
	// Places are where an auto job may run: this machine, then the remote
	// queues that take auto jobs (config queues.<name>.auto).
	Places []router.Place
}

// Route asks the router which engine takes p: it builds the snapshot from
// the registry (each engine's capabilities, whether it is available here,
// its own check of p) and in. hasRepo says the job has a repo (a read job
// without one runs in a plain directory, so it needs a read-only engine).
func Route(ctx context.Context, p protocol.StartParams, hasRepo bool, maxMicros micros.Micros, reg *engine.Registry, in RouteInputs) router.Decision {
	req := router.Request{Kind: string(p.Kind), Isolation: string(p.Isolation), ReadOnly: p.Kind == protocol.KindRead && !hasRepo,
		MaxMicros: maxMicros, Effort: p.Effort, Engine: p.Engine, Profile: p.Profile, Files: p.Files}
	snap := router.Snapshot{Now: in.Now, Money: in.Money, Live: in.Live[p.Repo]}
	if hasRepo && p.Queue == "" {
		snap.Places = in.Places // a job that names its queue, or has no repo to send, stays where it is
	}
	for _, e := range reg.All() {
		caps := e.Capabilities()
		re := router.Engine{Name: e.Name(), Isolation: strs(caps.Isolation), ReadOnly: caps.ReadOnly, Pays: string(caps.Pays)}
		if caps.IsolationWhyNot != nil {
			re.IsolationWhyNot = make(map[string]string, len(caps.IsolationWhyNot))
			for level, why := range caps.IsolationWhyNot {
				re.IsolationWhyNot[string(level)] = why
			}
		}
		if a := e.Probe(ctx); a.Available {
			re.Installed = true
		} else {
			re.Why = a.Reason
		}
		if re.Installed {
			if err := e.Check(p); err != nil {
				re.Refusal = err.Error()
			}
		}
		for _, q := range in.Quota {
			if q.Engine == e.Name() {
				re.Quota = append(re.Quota, q.Router())
			}
		}
		snap.Engines = append(snap.Engines, re)
	}
	return router.Decide(req, snap, in.Weights)
}

// routeRefusal turns a refused decision into a start error on the field a
// caller changes to fix it.
func routeRefusal(d router.Decision) *FieldError {
	hint := "hub route explain, with the same flags, shows every engine and why"
	codes := map[string]bool{}
	for _, r := range d.Rejected {
		if d.Request.Auto() || r.Engine == d.Request.Engine {
			codes[r.Code] = true
		}
	}
	if len(codes) == 1 {
		for code := range codes {
			switch code {
			case router.RejectRefused:
				// The engine's own check: the request is malformed for it.
				return bad("engine", "change the request as the message says, or pick another engine", "%s", d.Refusal)
			case router.RejectIsolation:
				return refused("isolation", "ask for a level an engine here can enforce; hub refuses rather than downgrade", "%s", d.Refusal)
			case router.RejectBudget, router.RejectCap:
				return refused("max_usd", hint, "%s", d.Refusal)
			case router.RejectReadOnly:
				return refused("cwd", "pass `repo` instead of `cwd`", "%s", d.Refusal)
			}
		}
	}
	return refused("engine", hint, "%s", d.Refusal)
}

// commandSize refuses a command too long to run: the shell gets it as one
// argument, which Linux caps, and would fail only after the worktree was made.
func commandSize(field, cmd string) *FieldError {
	if len(cmd) <= MaxCommandBytes {
		return nil
	}
	return bad(field, "put the commands in a script in the repository, commit it, and run that (for example `sh ./scripts/"+field+".sh`)",
		"%s is %s; a command may be at most %d bytes, the longest single argument Linux runs (sh -c gets it whole)",
		field, byteSize(len(cmd)), MaxCommandBytes)
}

// checkRepoShape refuses a repository hub could open but not make the
// job's checkout or branch in, before anything is made: a branch in the
// way of hub/<id>, a git dir hub cannot write.
func checkRepoShape(repo *gitx.Repo, p protocol.StartParams) *FieldError {
	w := gitx.Writes{Worktree: !PrivateGit(p.Isolation)}
	if p.Kind == protocol.KindWrite {
		w.Branch = BranchPrefix
		if err := repo.CheckBranchRoom(BranchPrefix); err != nil {
			hint := repoHint(err)
			if errors.Is(err, gitx.ErrBranchConflict) {
				hint = fmt.Sprintf("rename that branch, for example `git -C %s branch -m %s %s-old`, then start the job again",
					gitx.ShellQuote(repo.Top), BranchPrefix, BranchPrefix)
			}
			return bad("repo", hint, "%v", err)
		}
	}
	if err := repo.CheckWritable(w); err != nil {
		return bad("repo", repoHint(err), "%v", err)
	}
	return nil
}

func repoHint(err error) string {
	switch {
	case errors.Is(err, gitx.ErrNotRepo):
		return "pass the top of a git checkout (git init, then commit)"
	case errors.Is(err, gitx.ErrBare):
		return "pass a checkout with a work tree, not a bare repository"
	case errors.Is(err, gitx.ErrNoCommits):
		return "commit something first; hub starts every job from a commit"
	case errors.Is(err, gitx.ErrNotWritable):
		return "make it writable (remount it read-write, or fix its owner or mode), or clone the repository somewhere writable and start the job there"
	case errors.Is(err, gitx.ErrUnsupported):
		return "hub cannot work in a repository with that extension yet; use one without it"
	}
	return "pass the absolute path of a git checkout"
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// NoteDirty is the note a job carries when the user's checkout had
// uncommitted changes the job did not get.
const NoteDirty = "your checkout had uncommitted changes; the job started from the commit without them"

// strs is vs as plain strings, as the router (which cannot import
// protocol) spells kinds, isolation levels and ways to pay.
func strs[S ~string](vs []S) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
