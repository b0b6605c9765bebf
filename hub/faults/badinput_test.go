//go:build linux

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// answerLimit is how long hub may take to answer any bad input: a clear
// error at once, never a wait on something that will not come.
const answerLimit = 5 * time.Second

// answer is what one hub command said.
type answer struct {
	args        []string
	code        int
	out, errOut string
	took        time.Duration
}

// hub runs the hub binary with the case's environment plus env.
func (w *world) hub(ctx context.Context, env []string, args ...string) answer {
	w.t.Helper()
	return w.run(ctx, env, w.bin, args...)
}

// run runs a program with the case's environment plus env.
func (w *world) run(ctx context.Context, env []string, prog string, args ...string) answer {
	w.t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, prog, args...)
	cmd.Env = append(slices.Clone(w.vars), env...)
	cmd.Dir = w.dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	began := time.Now()
	err := cmd.Run()
	a := answer{args: args, out: o.String(), errOut: e.String(), took: time.Since(began)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		a.code = ee.ExitCode()
	case err != nil:
		w.t.Fatalf("hub %v: %v", args, err)
	}
	return a
}

// plainRepo makes the case's repository at w.dir/repo: two files on main.
func (w *world) plainRepo() string {
	w.t.Helper()
	dir := filepath.Join(w.dir, "repo")
	hubtest.WriteFiles(w.t, dir, map[string]string{"README.md": "# sample\n", "src/a.txt": "a\n"})
	w.git(dir, "init", "-q", "-b", "main")
	w.git(dir, "add", "-A")
	w.git(dir, "commit", "-q", "-m", "initial")
	w.repo = dir
	return dir
}

// configDir is the case's hub config folder (XDG_CONFIG_HOME/hub).
func (w *world) configDir() string { return filepath.Join(w.dir, "home", ".config", "hub") }

// writeConfig writes a file of the config folder.
func (w *world) writeConfig(name, body string) {
	w.t.Helper()
	if err := os.MkdirAll(w.configDir(), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.configDir(), name), []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// made is what a refused input must not leave behind: branches, worktrees,
// job folders, job records and reservations.
type made struct {
	branches, worktrees, jobDirs, treeDirs []string
	jobs, open                             int
	problems                               []string
}

func (w *world) made(ctx context.Context) made {
	w.t.Helper()
	var m made
	if w.repo != "" {
		if out, err := w.gitErr(w.repo, "for-each-ref", "--format=%(refname)", "refs/heads/hub/"); err == nil && out != "" {
			m.branches = strings.Split(out, "\n")
		}
		if out, err := w.gitErr(w.repo, "worktree", "list", "--porcelain"); err == nil {
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "worktree ") {
					m.worktrees = append(m.worktrees, l)
				}
			}
		}
	}
	for dir, dst := range map[string]*[]string{w.paths.JobsDir(): &m.jobDirs, w.paths.WorktreesDir(): &m.treeDirs} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			*dst = append(*dst, e.Name())
		}
	}
	if _, err := os.Stat(w.paths.DB()); err == nil {
		if st, err := store.Open(w.paths.DB()); err == nil {
			jobs, _ := st.ListJobs(ctx, nil, "", 0)
			m.jobs = len(jobs)
			m.problems, _ = st.CheckInvariants(ctx)
			st.Close()
		}
	}
	return m
}

// diff says what b has that a did not, or "".
func (a made) diff(b made) string {
	var d []string
	for _, p := range []struct {
		what string
		a, b []string
	}{{"branch", a.branches, b.branches}, {"worktree", a.worktrees, b.worktrees},
		{"job folder", a.jobDirs, b.jobDirs}, {"worktree folder", a.treeDirs, b.treeDirs}} {
		for _, x := range p.b {
			if !slices.Contains(p.a, x) {
				d = append(d, p.what+" "+x)
			}
		}
	}
	if b.jobs > a.jobs {
		d = append(d, fmt.Sprintf("%d job records", b.jobs-a.jobs))
	}
	if len(b.problems) > 0 {
		d = append(d, "store: "+strings.Join(b.problems, "; "))
	}
	return strings.Join(d, ", ")
}

// badCase is one input of the corpus: what is given, how it is given, and
// what hub must answer.
type badCase struct {
	name, given string
	// prepare shapes the world (repository, config, store) and returns the
	// environment the command runs with beyond the case's own.
	prepare func(ctx context.Context, w *world) []string
	// args is the command, given the repository; or call gives the input
	// to the daemon straight, as a protocol client would.
	args func(w *world) []string
	call func(ctx context.Context, w *world) answer
	// refuse is what the refusal says (stderr); "" marks a shape hub
	// accepts, whose job must then end as then checks.
	refuse string
	// then runs after the answer: the next command works, the job's branch
	// holds what it should. It returns a description of what it saw.
	then func(ctx context.Context, w *world, a answer) (string, error)
}

// startArgs is a plain exec job on the case's repository.
func startArgs(extra ...string) func(w *world) []string {
	return func(w *world) []string {
		return append([]string{"start", "--repo", w.repo, "--engine", "exec", "--exec", "echo done > done.txt", "--task", "t"}, extra...)
	}
}

// badCases is the corpus; each row of docs/reliability.md's bad-input table
// is one of them.
var badCases = []badCase{
	{
		name: "start-many key", given: "`hub start-many` with a job spelled `\"verfy\": \"false\"`",
		prepare: func(ctx context.Context, w *world) []string {
			body := fmt.Sprintf(`{"jobs": [{"task": "a", "repo": %q, "engine": "exec", "exec": "true"},
				{"task": "b", "repo": %q, "engine": "exec", "exec": "true", "verfy": "false"}]}`, w.repo, w.repo)
			if err := os.WriteFile(filepath.Join(w.dir, "jobs.json"), []byte(body), 0o644); err != nil {
				w.t.Fatal(err)
			}
			return nil
		},
		args:   func(w *world) []string { return []string{"start-many", filepath.Join(w.dir, "jobs.json")} },
		refuse: `job #2.*unknown key "verfy".*did you mean "verify"`,
	},
	{
		name: "profiles.json key", given: "`profiles.json` with `\"modle\"` in a profile",
		prepare: func(ctx context.Context, w *world) []string {
			w.writeConfig("profiles.json", `{"default": "cheap", "profiles": {"cheap": {"provider": "openai", "modle": "gpt-4.1-mini"}}}`)
			return nil
		},
		args: func(w *world) []string {
			return []string{"start", "--repo", w.repo, "--engine", "builtin", "--profile", "cheap", "--task", "t"}
		},
		refuse: `profiles.json: unknown key "modle" in profiles.cheap \(did you mean "model"`,
	},
	{
		name: "RPC params key", given: "`job/start` over the socket with `\"verfy\": \"false\"`",
		prepare: func(ctx context.Context, w *world) []string {
			if a := w.hub(ctx, nil, "jobs"); a.code != 0 { // a daemon to talk to
				w.t.Fatalf("hub jobs: %s", a.errOut)
			}
			return nil
		},
		call: func(ctx context.Context, w *world) answer {
			began := time.Now()
			c, err := client.Connect(ctx, w.paths, client.Options{ClientName: "faults"})
			if err != nil {
				w.t.Fatal(err)
			}
			defer c.Close()
			params := json.RawMessage(fmt.Sprintf(`{"task": "t", "repo": %q, "engine": "exec", "exec": "true", "verfy": "false"}`, w.repo))
			err = c.Call(ctx, protocol.MethodJobStart, params, nil)
			a := answer{args: []string{protocol.MethodJobStart}, took: time.Since(began)}
			if err != nil {
				a.code = 1
				a.errOut = "hub: " + err.Error() + "\nhint: " + rpc.HintOf(err)
			}
			return a
		},
		refuse: `code -32602 .*unknown key "verfy" \(did you mean "verify"`,
	},
	{
		name: "config.json key", given: "`config.json` with `max_runing`",
		prepare: func(ctx context.Context, w *world) []string {
			w.writeConfig("config.json", `{"max_runing": 2}`)
			return nil
		},
		args:   startArgs(),
		refuse: `config.json.*unknown key "max_runing".*did you mean "max_running"`,
	},
	{
		name: "environment value", given: "`HUB_MONTHLY_CAP_USD=abc hub start …`, then the same command without it",
		prepare: func(ctx context.Context, w *world) []string { return []string{"HUB_MONTHLY_CAP_USD=abc"} },
		args:    startArgs(),
		refuse:  `HUB_MONTHLY_CAP_USD="abc", set in this command's environment, is not a number of dollars`,
		then: func(ctx context.Context, w *world, a answer) (string, error) {
			// The daemon never took the value: without it, all is well.
			if b := w.hub(ctx, nil, "engines"); b.code != 0 {
				return "", fmt.Errorf("hub engines after the variable was unset: exit %d: %s", b.code, b.errOut)
			}
			return "the next command, without it, is served", nil
		},
	},
	{
		name: "truncated store", given: "`hub.db` cut to 3000 bytes",
		prepare: func(ctx context.Context, w *world) []string {
			if a := w.hub(ctx, nil, "jobs"); a.code != 0 {
				w.t.Fatalf("hub jobs: %s", a.errOut)
			}
			if a := w.hub(ctx, nil, "shutdown"); a.code != 0 {
				w.t.Fatalf("hub shutdown: %s", a.errOut)
			}
			if err := os.Truncate(w.paths.DB(), 3000); err != nil {
				w.t.Fatal(err)
			}
			os.Remove(w.paths.DB() + "-wal")
			os.Remove(w.paths.DB() + "-shm")
			return nil
		},
		args:   func(w *world) []string { return []string{"jobs"} },
		refuse: `the hub daemon could not start: hub's store .* cannot be read`,
		then: func(ctx context.Context, w *world, a answer) (string, error) {
			if !strings.Contains(a.errOut, "mv "+w.paths.DB()) {
				return "", fmt.Errorf("the hint does not say how to move it away: %s", a.errOut)
			}
			d := w.hub(ctx, nil, "doctor", "--client", "claude")
			if !strings.Contains(d.out, "cannot be read") {
				return "", fmt.Errorf("hub doctor does not say the store cannot be read:\n%s", d.out)
			}
			return "hub doctor says the same", nil
		},
	},
}

// waitJob waits for the job a start printed and returns its id and how it
// ended (hub wait's line).
func waitJob(ctx context.Context, w *world, a answer) (string, string, error) {
	id := strings.TrimSpace(a.out)
	if a.code != 0 || id == "" {
		return "", "", fmt.Errorf("hub %v: exit %d:\n%s", a.args, a.code, a.errOut)
	}
	b := w.hub(ctx, nil, "wait", id, "--timeout", "60s")
	if b.code != 0 {
		return id, "", fmt.Errorf("hub wait %s: exit %d:\n%s%s", id, b.code, b.out, b.errOut)
	}
	// "<id> succeeded · exec · 91ms · $0.00 · verified": the state and the
	// verdict, without what differs from run to run.
	parts := strings.Split(strings.TrimSpace(b.out), " · ")
	end := strings.TrimSpace(strings.TrimPrefix(parts[0], id))
	if slices.Contains(parts, "verified") {
		end += ", verified"
	}
	return id, end, nil
}

// repoShapes are the repository shapes checked at start.
var repoShapes = []badCase{
	{
		name: "branch named hub", given: "a repository with a branch `hub`, so `hub/<id>` cannot exist",
		prepare: func(ctx context.Context, w *world) []string {
			w.git(w.repo, "branch", "hub")
			return nil
		},
		args:   startArgs(),
		refuse: `has a branch named "hub", which leaves no room for hub.s job branches`,
	},
	{
		name: "read-only repository", given: "the repository on a read-only bind mount (a mount namespace of its own)",
		prepare: func(ctx context.Context, w *world) []string {
			if os.Geteuid() != 0 {
				w.t.Fatal("the read-only case bind-mounts the repository read-only, which needs root (CAP_SYS_ADMIN); run the suite as root")
			}
			return nil
		},
		call: func(ctx context.Context, w *world) answer {
			script := fmt.Sprintf(`mount --bind %[1]q %[1]q && mount -o remount,bind,ro %[1]q || exit 99
%[2]q start --repo %[1]q --engine exec --exec true --task t; code=$?; %[2]q shutdown >/dev/null; exit $code`, w.repo, w.bin)
			return w.run(ctx, nil, "unshare", "-m", "--propagation", "private", "sh", "-c", script)
		},
		refuse: `/.git/objects is not writable \(it is on a read-only file system\)`,
	},
	{
		name: "orphan HEAD", given: "HEAD on a branch with no commits (`git checkout --orphan`), no base given",
		prepare: func(ctx context.Context, w *world) []string {
			w.git(w.repo, "checkout", "-q", "--orphan", "new")
			return nil
		},
		args:   startArgs(),
		refuse: `is on branch new, which has no commits yet; pass a base to start from`,
	},
	{
		name: "orphan HEAD, a base", given: "the same, with `--base main`",
		prepare: func(ctx context.Context, w *world) []string {
			w.git(w.repo, "checkout", "-q", "--orphan", "new")
			return nil
		},
		args: startArgs("--base", "main", "--verify", "test -f done.txt && test -f src/a.txt"),
		then: func(ctx context.Context, w *world, a answer) (string, error) {
			_, end, err := waitJob(ctx, w, a)
			if err != nil {
				return "", err
			}
			return "works: " + end, nil
		},
	},
	{
		name: "sparse checkout", given: "a sparse checkout in cone mode (`extensions.worktreeConfig`), a change inside the cone and one outside",
		prepare: func(ctx context.Context, w *world) []string {
			hubtest.WriteFiles(w.t, w.repo, map[string]string{"in/a.txt": "a\n", "out/b.txt": "b\n"})
			w.git(w.repo, "add", "-A")
			w.git(w.repo, "commit", "-q", "-m", "in and out")
			w.git(w.repo, "sparse-checkout", "set", "--cone", "in")
			return nil
		},
		args: func(w *world) []string {
			return []string{"start", "--repo", w.repo, "--engine", "exec", "--exec", "echo a2 >> in/a.txt && echo b2 >> out/b.txt",
				"--verify", "grep -q b2 out/b.txt && test -f src/a.txt", "--task", "t"}
		},
		then: func(ctx context.Context, w *world, a answer) (string, error) {
			id, end, err := waitJob(ctx, w, a)
			if err != nil {
				return "", err
			}
			if d := w.git(w.repo, "diff", "--name-status", "main", "hub/"+id); d != "M\tin/a.txt\nM\tout/b.txt" {
				return "", fmt.Errorf("the branch's changes are\n%s\nwant exactly the two edits", d)
			}
			return "works: " + end + ", the branch holds exactly the two edits", nil
		},
	},
	{
		name: "nested repository", given: "the worker runs `git init sub` (no commit) and writes files in it",
		args: func(w *world) []string {
			return []string{"start", "--repo", w.repo, "--engine", "exec", "--exec", "git init -q sub && echo s > sub/s.txt && echo t > top.txt", "--task", "t"}
		},
		then: func(ctx context.Context, w *world, a answer) (string, error) {
			id, end, err := waitJob(ctx, w, a)
			if err != nil {
				return "", err
			}
			tree := w.git(w.repo, "ls-tree", "-r", "hub/"+id)
			if !strings.Contains(tree, "100644 blob") || !strings.Contains(tree, "\tsub/s.txt") || strings.Contains(tree, "160000") || strings.Contains(tree, "sub/.git") {
				return "", fmt.Errorf("the branch's tree:\n%s\nwant sub/s.txt as a plain file and no gitlink", tree)
			}
			return "works: " + end + ", sub/ committed as plain files", nil
		},
	},
}

// TestBadInput runs the bad-input corpus: each input ends in a clear error
// with a hint within answerLimit and leaves nothing half-made, or — for a
// repository shape hub supports — a job that ends as it should.
func TestBadInput(t *testing.T) {
	for _, bc := range append(slices.Clone(badCases), repoShapes...) {
		t.Run(strings.ReplaceAll(bc.name, " ", "_"), func(t *testing.T) {
			for i := 0; i < repeat(t); i++ {
				badInputCase(t, bc)
			}
		})
	}
}

func badInputCase(t *testing.T, bc badCase) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 3*time.Minute)
	w.plainRepo()
	var env []string
	if bc.prepare != nil {
		env = bc.prepare(ctx, w)
	}
	before := w.made(ctx)
	var a answer
	if bc.call != nil {
		a = bc.call(ctx, w)
	} else {
		a = w.hub(ctx, env, bc.args(w)...)
	}
	var f figures
	var ends []string
	if a.took > answerLimit {
		f.Hung++
		t.Errorf("%s: hub %v took %s (at most %s)", bc.name, a.args, a.took, answerLimit)
	}
	if bc.refuse != "" {
		switch {
		case a.code == 0:
			f.Unhinted++
			t.Errorf("%s: hub %v was not refused:\n%s%s", bc.name, a.args, a.out, a.errOut)
		case !strings.Contains(a.errOut, "hint: "):
			f.Unhinted++
			t.Errorf("%s: hub %v refused with no hint:\n%s", bc.name, a.args, a.errOut)
		case !regexp.MustCompile(bc.refuse).MatchString(a.errOut):
			t.Errorf("%s: hub %v refused, but not with %q:\n%s", bc.name, a.args, bc.refuse, a.errOut)
		}
		if d := before.diff(w.made(ctx)); d != "" {
			f.HalfMade++
			t.Errorf("%s: the refusal left %s", bc.name, d)
		}
		ends = append(ends, "refused: "+firstLine(a.errOut, w))
	}
	if bc.then != nil {
		saw, err := bc.then(ctx, w, a)
		if err != nil {
			t.Errorf("%s: %v", bc.name, err)
			f.HalfMade++
		}
		if saw != "" {
			ends = append(ends, saw)
		}
	}
	t.Logf("%s: %s", bc.name, strings.Join(ends, "; "))
	record(outcome{Test: "TestBadInput", Fault: bc.name, Step: bc.given, Ends: ends, Figures: f, Took: a.took})
	if b := w.hub(ctx, nil, "shutdown"); b.code != 0 && !strings.Contains(b.errOut, "cannot be read") {
		t.Errorf("hub shutdown: exit %d: %s", b.code, b.errOut)
	}
}

// firstLine is the answer's first line with the case's folder taken out,
// for the table.
func firstLine(s string, w *world) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimPrefix(line, "hub: ")
	line = strings.ReplaceAll(line, w.dir, "…")
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	return line
}
