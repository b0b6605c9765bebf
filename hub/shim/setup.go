package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/errline"
)

// setupFailure is a checkout whose environment could not be made ready:
// the job ends failed with category setup, saying which command failed,
// its telling lines, and the fix.
type setupFailure struct {
	where string // "the job's checkout", "verify's checkout"
	err   error
	out   string // the failed command's output (head and tail), redacted
}

func (f *setupFailure) Error() string {
	msg := "setting up " + f.where + ": " + f.err.Error()
	if l := errline.Telling(f.out); l != "" {
		msg += ": " + view.FirstLine(l, 200)
	}
	var df *deps.Failure
	if errors.As(f.err, &df) && df.Fix != "" {
		msg += " — " + df.Fix
	}
	return msg
}

// setUp makes checkout c, of commit rev, ready to build and test: the
// dependency trees rev pins (from hub's cache, the user's checkout, or
// installed), then the setup command, as the base's .hub.json and the
// job's own fields say. forVerify is verify's checkout (and landing's): it
// journals only what fails, never fills the cache, and at untrusted
// installs without the network; what it got is said in s.verifyDeps.
// Every step's output goes to the job's setup log.
func (s *core) setUp(ctx context.Context, c *gitx.Checkout, rev string, forVerify bool) error {
	where := "the job's checkout"
	if forVerify {
		where = "verify's checkout"
		s.verifyDeps = nil
	}
	// The base's settings hold for verify too: the worker cannot change
	// what hub runs outside its own commands by committing a .hub.json.
	set, err := deps.ReadSettings(s.repo, s.job.BaseSHA)
	if err != nil {
		return &setupFailure{where: where, err: err}
	}
	set = set.Over(deps.Settings{Deps: s.params.Deps, Setup: s.params.Setup})
	trees, err := deps.Detect(s.repo, rev, set)
	if err != nil {
		return &setupFailure{where: where, err: fmt.Errorf("read the manifests at %s: %w", view.ShortSHA(rev), err)}
	}
	if len(trees) == 0 && set.Setup == "" {
		return nil
	}
	t0 := time.Now()
	defer func() {
		if !forVerify {
			s.setupTook = time.Since(t0)
		}
	}()
	logf, err := os.OpenFile(s.o.Paths.SetupLog(s.job.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return &setupFailure{where: where, err: fmt.Errorf("open the setup log: %w", err)}
	}
	defer logf.Close()
	log := &lineRedactor{w: logf, r: s.red}
	defer log.Flush()
	fmt.Fprintf(log, "# %s at %s\n", where, rev)

	var lastOut string
	run := func(ctx context.Context, w deps.Where, command string) deps.Step {
		st := s.setupStep(ctx, w, command, log, forVerify)
		if !w.ForCache {
			lastOut = st.Output
		}
		return st
	}
	env := deps.Env{Repo: s.repo, Rev: rev, Dir: c.Dir, Checkout: c, Cache: deps.Cache{Dir: s.o.Paths.EnvsDir()}, Run: run,
		Version: s.toolVersion, Progress: func(line string) {
			if !forVerify {
				s.record(ctx, protocol.EventProgress, line, nil)
			}
		},
		Include: func(ctx context.Context, pc *gitx.Checkout) error {
			plan, err := gitx.PlanInclude(ctx, s.repo, rev)
			if err == nil {
				err = s.include(ctx, pc, plan, false)
			}
			return err
		}}
	var changed map[int][]string
	if forVerify {
		// Verify's checkout and landing's hold the worker's manifests:
		// they never fill the cache, and at untrusted nothing is installed
		// with the network once the worker ran. A tree the base pins too
		// comes from the cache hub filled from its own install of the base
		// (this job's, once it is made) or from the user's checkout.
		env.NoKeep = true
		env.Offline = s.params.Isolation == protocol.IsolationUntrusted
		changed = s.changedTrees(ctx, set, trees)
	}
	outs, err := deps.Make(ctx, env, trees)
	for i, o := range outs {
		if err == nil || o.Source != "" {
			if kerr := c.KeepOut(o.Paths); kerr != nil && err == nil {
				err = fmt.Errorf("record the dependencies hub put in: %w", kerr)
			}
		}
		step := protocol.EnvStep{What: "dependencies", Manager: o.Tree.Manager, Lockfile: o.Tree.Lockfile, Command: o.Tree.Install,
			Dirs: o.Tree.Dirs, Source: o.Source, Skipped: o.Skipped, Files: o.Files, DurationMS: o.Took.Milliseconds()}
		if err != nil && o.Source == "" && o.Skipped == "" {
			step.Failed, step.OutputTail = true, lastOut
		}
		if forVerify {
			s.verifyDeps = append(s.verifyDeps, s.red.String(verifyDepsLine(o, changed[i], err != nil && o.Source == "" && o.Skipped == "")))
			continue
		}
		s.env = append(s.env, step)
		s.record(ctx, protocol.EventNote, s.red.String(o.Line()), step)
	}
	if err != nil {
		discard(outs)
		return &setupFailure{where: where, err: err, out: lastOut}
	}
	if set.Setup == "" {
		s.keep(ctx, env, outs)
		return nil
	}
	if !forVerify {
		s.record(ctx, protocol.EventProgress, "setting up: "+view.FirstLine(set.Setup, 80), nil)
	}
	st := run(ctx, deps.Where{Dir: c.Dir, Checkout: c}, set.Setup)
	step := protocol.EnvStep{What: "setup", Command: set.Setup, DurationMS: st.Took.Milliseconds(), Failed: st.Failed()}
	if st.Failed() {
		step.OutputTail = st.Output
	}
	if !forVerify {
		s.env = append(s.env, step)
	}
	if st.Failed() {
		discard(outs)
		return &setupFailure{where: where, out: st.Output, err: &deps.Failure{What: "the setup command", Command: set.Setup, Step: st,
			Fix: fmt.Sprintf("fix the setup command (the job's setup, or \"setup\" in %s); its whole output is in %s", deps.RepoFile, s.o.Paths.SetupLog(s.job.ID))}}
	}
	if !forVerify {
		s.record(ctx, protocol.EventNote, fmt.Sprintf("setup: `%s` exited 0 in %s", view.FirstLine(set.Setup, 120), st.Took.Round(time.Millisecond)), step)
	}
	s.keep(ctx, env, outs)
	return nil
}

// discard drops what Make made ready to fill the cache with, for a setup
// that failed.
func discard(outs []deps.Outcome) {
	for _, o := range outs {
		o.Discard()
	}
}

// changedTrees says, for each tree verify's commit pins (by its index in
// trees), which manifests and lockfiles the worker changed from the base's
// (none: the base's own tree). Before it answers, it waits for this job's
// own fill of the cache with the base's trees, so that an unchanged tree
// is the base's, ready, rather than installed again.
func (s *core) changedTrees(ctx context.Context, set deps.Settings, trees []deps.Tree) map[int][]string {
	changed := map[int][]string{}
	base, err := deps.Detect(s.repo, s.job.BaseSHA, set)
	if err != nil {
		return changed
	}
	for i, t := range trees {
		var was *deps.Tree
		for j := range base {
			if base[j].Manager == t.Manager {
				was = &base[j]
			}
		}
		switch {
		case was == nil:
			changed[i] = []string{t.Lockfile}
		case was.Pins() != t.Pins():
			changed[i] = t.Changed(*was)
		}
	}
	if len(changed) < len(trees) {
		s.waitStored(ctx)
	}
	return changed
}

// verifyDepsLine is what verify's checkout got of one tree, for its record.
func verifyDepsLine(o deps.Outcome, changed []string, failed bool) string {
	what := o.Tree.Manager + " (" + o.Tree.Lockfile + ")"
	if len(o.Tree.Dirs) > 0 {
		what = strings.Join(o.Tree.Dirs, ", ") + " (" + o.Tree.Manager + ", " + o.Tree.Lockfile + ")"
	}
	got := o.Source
	switch {
	case failed && o.Offline:
		got = "not installed: at untrusted nothing is installed with the network after the worker ran, and `" + o.Tree.Install + "` could not complete without it"
	case failed:
		got = "not installed: its install failed"
	case o.Source == "":
		got = "nothing put in: " + o.Skipped
	case o.Source == deps.SourceInstalled && o.Offline:
		got = "installed without the network"
	case o.Source == deps.SourceInstalled:
		got = "installed with `" + o.Tree.Install + "`"
	case o.Source == deps.SourceCache:
		got = "from hub's cache (hub's own install of those manifests)"
	case o.Source == deps.SourceCheckout:
		got = "copied from your checkout"
	}
	if len(changed) == 0 {
		return what + ": the base's, " + got
	}
	return what + ": changed by the worker (" + strings.Join(changed, ", ") + "), " + got
}

// keep fills hub's cache in the background from what Make did, once the
// checkout's whole setup succeeded: the entry of a tree it installed (from
// an install of hub's own in a private checkout of the base) or copied
// from the user's checkout, and ready copies for the next jobs of the same
// lockfile. What it did goes to the shim's log and the setup log (the
// job's journal may have ended by then). Verify waits for the entries
// (waitStored), never for the ready copies.
func (s *core) keep(ctx context.Context, env deps.Env, outs []deps.Outcome) {
	if env.NoKeep {
		return
	}
	for _, o := range outs {
		stored := make(chan struct{})
		s.storedMu.Lock()
		s.stored = append(s.stored, stored)
		s.storedMu.Unlock()
		s.keeps.Add(1)
		go func() {
			defer s.keeps.Done()
			line := env.Keep(ctx, o, func() { close(stored) })
			if line != "" {
				s.o.Log.Info().Str("tree", strings.Join(o.Tree.Dirs, ",")).Msg(line)
				if f, err := os.OpenFile(s.o.Paths.SetupLog(s.job.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
					fmt.Fprintf(f, "# %s\n", s.red.String(line))
					f.Close()
				}
			}
		}()
	}
}

// waitStored waits until every cache fill this shim started has made its
// entry, or failed to (not for their ready copies), bounded by the setup
// timeout.
func (s *core) waitStored(ctx context.Context) {
	s.storedMu.Lock()
	stored := slices.Clone(s.stored)
	s.storedMu.Unlock()
	limit := time.NewTimer(time.Duration(max(s.params.SetupTimeoutS, 1)) * time.Second)
	defer limit.Stop()
	for _, c := range stored {
		select {
		case <-c:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// keepWait bounds how long a shim stays after its job ended, filling the
// cache; what it leaves unfinished is a scratch folder hub gc removes.
const keepWait = 10 * time.Minute

// waitKeeps waits for the background cache fills, up to keepWait.
func (s *core) waitKeeps() {
	done := make(chan struct{})
	go func() { s.keeps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(keepWait):
		s.o.Log.Warn().Msg("cache fills still running; leaving them")
	}
}

// setupStep runs one command of a checkout's setup, in w: in the job's
// sandbox at the isolated levels, bounded by the setup timeout, its output
// in log.
//   - The job's own setup, before the worker exists, runs with the
//     network even at untrusted (an install needs it; the worker's own
//     commands get none there), stopped with the job.
//   - Verify's and landing's (forVerify) run the worker's manifests: with
//     the job's own network, none at untrusted.
//   - hub's own install for the cache (w.ForCache) runs in the background
//     beside the worker, in a private checkout of the base: not stopped
//     with the job (it is hub's, and the job's stop belongs to the
//     worker), never taken for the worker's leftovers (nor the worker's
//     for its), and with tools' caches no worker can write.
func (s *core) setupStep(ctx context.Context, w deps.Where, command string, log *lineRedactor, forVerify bool) deps.Step {
	j := s.job
	marker := "HUB_JOB=" + j.ID
	extra := []string{"HUB_JOB=" + j.ID, "HUB_SETUP=1", "HUB_HOME=" + s.o.Paths.Home}
	cacheDir := s.cacheDir()
	if w.ForCache {
		marker = "HUB_CACHE_FILL=" + j.ID
		extra = []string{"HUB_SETUP=1", "HUB_HOME=" + s.o.Paths.Home}
		cacheDir = ""
		if engine.Sandboxed(s.params.Isolation) {
			cacheDir = s.o.Paths.EnvToolsDir()
		}
	}
	env := workerEnv(s.o.HubBinary, append(s.envFor(ctx, cacheDir), extra...)...)
	argv := []string{"sh", "-c", command}
	if engine.Sandboxed(s.params.Isolation) {
		scratch := s.o.Paths.SetupHome(j.ID)
		if w.ForCache {
			scratch = filepath.Join(filepath.Dir(w.Dir), "home")
		}
		if err := os.MkdirAll(scratch, 0o700); err != nil {
			return deps.Step{ExitCode: -1, Err: err}
		}
		p := s.params
		if !forVerify {
			p.Isolation = protocol.IsolationIsolated // the network, for the install
		}
		var err error
		spec := engine.Spec{JobID: j.ID, Dir: w.Dir, Checkout: w.Checkout, Params: p, Scratch: scratch, Cache: cacheDir,
			HubBinary: s.o.HubBinary, Env: env}
		if !w.ForCache { // hub's own install is not the job's: none of its budget
			spec.Limits, spec.Ports = s.limitPlan(), s.portRange()
		}
		argv, err = engine.SandboxCommand(spec, argv, s.o.HubBinary)
		if err != nil {
			return deps.Step{ExitCode: -1, Err: fmt.Errorf("sandbox it: %w", err)}
		}
	}
	fmt.Fprintf(log, "$ %s\n", command)
	if w.ForCache {
		fmt.Fprintf(log, "# (hub's own install for its cache, in %s)\n", w.Dir)
	}
	cmd := engine.Command{Argv: argv, Dir: w.Dir, Env: env, Timeout: time.Duration(s.params.SetupTimeoutS) * time.Second,
		Grace: s.o.StopGrace, OutputMax: 8192, Log: log, Marker: marker, Subreaper: s.subreaper, Exclude: s.background}
	var cancel context.CancelFunc = func() {}
	if w.ForCache {
		var pid int
		cmd.Subreaper, cmd.Exclude = 0, nil
		cmd.Started = func(p int) { pid = p; s.addBackground(p) }
		defer func() { s.dropBackground(pid) }()
	} else {
		cmd.Stop, cancel = s.watchStop(ctx)
	}
	res := engine.RunCommand(ctx, cmd)
	cancel()
	if !w.ForCache {
		s.noteLeftovers(ctx, "setup", res.Leftovers)
		s.checkLimits(ctx)
		s.signalHit(ctx, res.Signal)
	}
	st := deps.Step{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Stopped: res.Stopped, Err: res.Err,
		Output: s.red.String(res.Output), Took: res.Duration}
	if res.Cancelled != nil && st.Stopped == "" {
		st.Stopped = "the job's shim was told to stop"
	}
	fmt.Fprintf(log, "# exit %d in %s\n", res.ExitCode, res.Duration.Round(time.Millisecond))
	if w.ForCache {
		return st
	}
	code := res.ExitCode
	oc := protocol.ObservedCommand{Command: s.red.String(command), Role: "setup", Signal: res.Signal, DurationMS: res.Duration.Milliseconds()}
	if res.Err == nil && res.Signal == "" {
		oc.ExitCode = &code
	}
	s.observed = append(s.observed, oc)
	return st
}

// addBackground, dropBackground and background keep the leaders of hub's
// own background commands (an install filling the cache), which run
// under the shim beside the job's: every command of the job leaves them
// alone when its leftovers are ended.
func (s *core) addBackground(pid int) {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	s.bg = append(s.bg, pid)
}

func (s *core) dropBackground(pid int) {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	s.bg = slices.DeleteFunc(s.bg, func(p int) bool { return p == pid })
}

func (s *core) background() []int {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	return slices.Clone(s.bg)
}

// toolVersion is what `tool --version` prints first, once per shim; ""
// when the tool is not on the worker's PATH.
func (s *core) toolVersion(ctx context.Context, tool string) string {
	if v, ok := s.versions[tool]; ok {
		return v
	}
	v := ""
	env := workerEnv(s.o.HubBinary)
	path := ""
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	if bin, err := lookPath(tool, path); err == nil {
		v = s.knownVersion(ctx, tool, bin, env)
	}
	if s.versions == nil {
		s.versions = map[string]string{}
	}
	s.versions[tool] = v
	return v
}

// toolsFile remembers tools' versions across jobs, by the program's path,
// size and modification time (an upgrade changes them): asking npm its
// version starts Node, a fifth of a second.
func (s *core) toolsFile() string { return filepath.Join(s.o.Paths.EnvsDir(), "tools.json") }

type toolStamp struct {
	Size    int64  `json:"size"`
	MTime   int64  `json:"mtime"`
	Version string `json:"version"`
}

// knownVersion is bin's version: from toolsFile when bin is as it was,
// else asked and remembered.
func (s *core) knownVersion(ctx context.Context, tool, bin string, env []string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ""
	}
	known := map[string]toolStamp{}
	if b, err := os.ReadFile(s.toolsFile()); err == nil {
		_ = json.Unmarshal(b, &known)
	}
	if k, ok := known[real]; ok && k.Size == fi.Size() && k.MTime == fi.ModTime().UnixNano() && k.Version != "" {
		return k.Version
	}
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	arg := "--version"
	if tool == "go" {
		arg = "version"
	}
	cmd := exec.CommandContext(vctx, bin, arg)
	cmd.Env, cmd.Dir = env, os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	v := bin + " " + strings.TrimSpace(view.FirstLine(string(out), 200))
	known[real] = toolStamp{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Version: v}
	if b, err := json.Marshal(known); err == nil && os.MkdirAll(filepath.Dir(s.toolsFile()), 0o700) == nil {
		// Whole or not at all: another shim may be reading it.
		if f, err := os.CreateTemp(filepath.Dir(s.toolsFile()), ".tools-*"); err == nil {
			_, werr := f.Write(b)
			if errors.Join(werr, f.Close()) == nil {
				_ = os.Rename(f.Name(), s.toolsFile())
			}
			_ = os.Remove(f.Name())
		}
	}
	return v
}

// lookPath finds tool on path (a PATH value), as the worker's shell would.
func lookPath(tool, path string) (string, error) {
	for _, dir := range strings.Split(path, string(os.PathListSeparator)) {
		if dir == "" {
			continue
		}
		p := dir + string(os.PathSeparator) + tool
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
