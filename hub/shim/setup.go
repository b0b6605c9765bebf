package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// job's own fields say. forVerify is verify's checkout: it journals only
// what fails. Every step's output goes to the job's setup log.
func (s *shim) setUp(ctx context.Context, c *gitx.Checkout, rev string, forVerify bool) error {
	where := "the job's checkout"
	if forVerify {
		where = "verify's checkout"
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
	run := func(ctx context.Context, command string) deps.Step {
		st := s.setupStep(ctx, c, command, log)
		lastOut = st.Output
		return st
	}
	env := deps.Env{Repo: s.repo, Rev: rev, Dir: c.Dir, Cache: deps.Cache{Dir: s.o.Paths.EnvsDir()}, Run: run,
		Version: s.toolVersion, Progress: func(line string) {
			if !forVerify {
				s.record(ctx, protocol.EventProgress, line, nil)
			}
		}}
	outs, err := deps.Make(ctx, env, trees)
	for _, o := range outs {
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
		if !forVerify {
			s.env = append(s.env, step)
			s.record(ctx, protocol.EventNote, s.red.String(o.Line()), step)
		}
	}
	if err != nil {
		return &setupFailure{where: where, err: err, out: lastOut}
	}
	if set.Setup == "" {
		s.keep(env, outs)
		return nil
	}
	if !forVerify {
		s.record(ctx, protocol.EventProgress, "setting up: "+view.FirstLine(set.Setup, 80), nil)
	}
	st := run(ctx, set.Setup)
	step := protocol.EnvStep{What: "setup", Command: set.Setup, DurationMS: st.Took.Milliseconds(), Failed: st.Failed()}
	if st.Failed() {
		step.OutputTail = st.Output
	}
	if !forVerify {
		s.env = append(s.env, step)
	}
	if st.Failed() {
		return &setupFailure{where: where, out: st.Output, err: &deps.Failure{What: "the setup command", Command: set.Setup, Step: st,
			Fix: fmt.Sprintf("fix the setup command (the job's setup, or \"setup\" in %s); its whole output is in %s", deps.RepoFile, s.o.Paths.SetupLog(s.job.ID))}}
	}
	if !forVerify {
		s.record(ctx, protocol.EventNote, fmt.Sprintf("setup: `%s` exited 0 in %s", view.FirstLine(set.Setup, 120), st.Took.Round(time.Millisecond)), step)
	}
	s.keep(env, outs)
	return nil
}

// keep fills hub's cache in the background from what Make did, once the
// checkout's whole setup succeeded: the tree it installed or copied from
// the user's checkout, and ready copies for the next jobs of the same
// lockfile. What it did goes to the shim's log and the
// setup log (the job's journal may have ended by then).
func (s *shim) keep(env deps.Env, outs []deps.Outcome) {
	for _, o := range outs {
		s.keeps.Add(1)
		go func() {
			defer s.keeps.Done()
			if line := env.Keep(o); line != "" {
				s.o.Log.Info().Str("tree", strings.Join(o.Tree.Dirs, ",")).Msg(line)
				if f, err := os.OpenFile(s.o.Paths.SetupLog(s.job.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
					fmt.Fprintf(f, "# %s\n", line)
					f.Close()
				}
			}
		}()
	}
}

// keepWait bounds how long a shim stays after its job ended, filling the
// cache; what it leaves unfinished is a scratch folder hub gc removes.
const keepWait = 10 * time.Minute

// waitKeeps waits for the background cache fills, up to keepWait.
func (s *shim) waitKeeps() {
	done := make(chan struct{})
	go func() { s.keeps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(keepWait):
		s.o.Log.Warn().Msg("cache fills still running; leaving them")
	}
}

// setupStep runs one command of a checkout's setup: in the job's sandbox at
// the isolated levels — with the network, even at untrusted, since an
// install needs it (the worker's own commands and verify get none there)
// — bounded by the setup timeout, stopped with the job, its output in log.
func (s *shim) setupStep(ctx context.Context, c *gitx.Checkout, command string, log *lineRedactor) deps.Step {
	j := s.job
	env := workerEnv(s.o.HubBinary, append(s.ownEnv(ctx), "HUB_JOB="+j.ID, "HUB_SETUP=1", "HUB_HOME="+s.o.Paths.Home)...)
	argv := []string{"sh", "-c", command}
	if engine.Sandboxed(s.params.Isolation) {
		scratch := s.o.Paths.SetupHome(j.ID)
		if err := os.MkdirAll(scratch, 0o700); err != nil {
			return deps.Step{ExitCode: -1, Err: err}
		}
		p := s.params
		p.Isolation = protocol.IsolationIsolated // the network, for the install
		var err error
		argv, err = engine.SandboxCommand(engine.Spec{JobID: j.ID, Dir: c.Dir, Checkout: c, Params: p, Scratch: scratch, Cache: s.cacheDir(),
			HubBinary: s.o.HubBinary, Env: env}, argv, s.o.HubBinary)
		if err != nil {
			return deps.Step{ExitCode: -1, Err: fmt.Errorf("sandbox it: %w", err)}
		}
	}
	fmt.Fprintf(log, "$ %s\n", command)
	stop, cancel := s.watchStop(ctx)
	defer cancel()
	res := engine.RunCommand(ctx, engine.Command{Argv: argv, Dir: c.Dir, Env: env, Timeout: time.Duration(s.params.SetupTimeoutS) * time.Second,
		Stop: stop, Grace: s.o.StopGrace, OutputMax: 8192, Log: log, Marker: "HUB_JOB=" + j.ID, Subreaper: s.subreaper})
	cancel()
	s.noteLeftovers(ctx, "setup", res.Leftovers)
	st := deps.Step{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Stopped: res.Stopped, Err: res.Err,
		Output: s.red.String(res.Output), Took: res.Duration}
	if res.Cancelled != nil && st.Stopped == "" {
		st.Stopped = "the job's shim was told to stop"
	}
	fmt.Fprintf(log, "# exit %d in %s\n", res.ExitCode, res.Duration.Round(time.Millisecond))
	code := res.ExitCode
	oc := protocol.ObservedCommand{Command: s.red.String(command), Role: "setup", Signal: res.Signal, DurationMS: res.Duration.Milliseconds()}
	if res.Err == nil && res.Signal == "" {
		oc.ExitCode = &code
	}
	s.observed = append(s.observed, oc)
	return st
}

// toolVersion is what `tool --version` prints first, once per shim; ""
// when the tool is not on the worker's PATH.
func (s *shim) toolVersion(ctx context.Context, tool string) string {
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
func (s *shim) toolsFile() string { return filepath.Join(s.o.Paths.EnvsDir(), "tools.json") }

type toolStamp struct {
	Size    int64  `json:"size"`
	MTime   int64  `json:"mtime"`
	Version string `json:"version"`
}

// knownVersion is bin's version: from toolsFile when bin is as it was,
// else asked and remembered.
func (s *shim) knownVersion(ctx context.Context, tool, bin string, env []string) string {
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
