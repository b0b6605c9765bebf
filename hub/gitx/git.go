package gitx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// safeConfig goes before every subcommand: hub never runs the user's hooks or
// fsmonitor daemon and never signs the commits it makes.
var safeConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "commit.gpgsign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
}

// locationEnv are variables that would point git somewhere other than the
// directory gitx names, or add configuration to it (they are set, for
// instance, inside a git hook). gitx always works on the directory it is
// given, with the configuration its repository has, so it drops them (and
// GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>).
var locationEnv = map[string]bool{
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_INDEX_FILE":                   true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_COMMON_DIR":                   true,
	"GIT_NAMESPACE":                    true,
	"GIT_PREFIX":                       true,
	"GIT_CEILING_DIRECTORIES":          true,
	"GIT_CONFIG":                       true,
	"GIT_CONFIG_PARAMETERS":            true,
	"GIT_CONFIG_COUNT":                 true,
	"GIT_REPLACE_REF_BASE":             true,
	"GIT_SHALLOW_FILE":                 true,
	"GIT_QUARANTINE_PATH":              true,
}

// waitDelay bounds how long a cancelled git may keep its output pipes open
// (through a child that outlived it) before Wait gives up on it.
const waitDelay = 5 * time.Second

// Git runs the git CLI in dir and returns its standard output. It runs with
// GIT_TERMINAL_PROMPT=0 and LC_ALL=C, and with hooks, fsmonitor and commit
// signing switched off, and without GIT_DIR, GIT_WORK_TREE and the like from
// hub's own environment. A failure is an *Error whose message is
// "git <args>: <stderr>". Cancelling ctx kills git and the processes it
// started.
func Git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return runGit(ctx, dir, runOpts{}, args...)
}

// runOpts are the extras some commands need.
type runOpts struct {
	config []string  // more "-c key=value" pairs, already split ("-c", "k=v")
	env    []string  // more KEY=value entries; they override the inherited ones
	stdin  io.Reader // nil: no input
	stdout io.Writer // nil: returned by runGit
}

func runGit(ctx context.Context, dir string, o runOpts, args ...string) ([]byte, error) {
	argv := make([]string, 0, len(safeConfig)+len(o.config)+len(args))
	argv = append(argv, safeConfig...)
	argv = append(argv, o.config...)
	argv = append(argv, args...)

	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = dir
	cmd.Env = gitEnv(o.env)
	cmd.Stdin = o.stdin
	cmd.WaitDelay = waitDelay
	killGroupOnCancel(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.stdout != nil {
		cmd.Stdout = o.stdout
	}

	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	e := &Error{Args: append([]string(nil), args...), Stderr: strings.TrimSpace(stderr.String()), ExitCode: -1, err: err}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		e.ExitCode = exit.ExitCode()
	}
	if ctx.Err() != nil {
		e.ExitCode, e.err = -1, ctx.Err()
	}
	return stdout.Bytes(), e
}

func gitEnv(extra []string) []string {
	base := os.Environ()
	env := make([]string, 0, len(base)+len(extra)+2)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !locationEnv[k] && !strings.HasPrefix(k, "GIT_CONFIG_KEY_") && !strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			env = append(env, kv)
		}
	}
	// Replacement refs (`git replace`) never change what hub reads or
	// commits: hub's view of a commit is the object itself.
	env = append(env, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_NO_REPLACE_OBJECTS=1")
	return append(env, extra...) // exec keeps the last value of a duplicated key
}

// exitCode reports git's exit code if err is a git failure, else -1.
func exitCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.ExitCode
	}
	return -1
}

// readOnly is the environment for commands that only read: git must not take
// optional locks (such as refreshing the index during status), so it never
// races an agent's git in the same worktree.
var readOnly = runOpts{env: []string{"GIT_OPTIONAL_LOCKS=0"}}
