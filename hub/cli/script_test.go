package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/agent/oauth/oauthtest"
	"github.com/hub-agents/hub/hub/cli"
	"github.com/hub-agents/hub/hub/internal/hubtest"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

// TestScripts runs the CLI's behaviour as testscript scripts against the
// real hub binary: a daemon per script in its own HUB_HOME, real git, real
// exec jobs. Each script's $WORK is its HOME too.
func TestScripts(t *testing.T) {
	bin := hubtest.MustBinary(t)
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": exits, "jsonout": jsonout, "loginserver": loginserver},
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".hub")
			env.Setenv("HUB_HOME", home)
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_AUTHOR_NAME", "test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@localhost")
			env.Setenv("GIT_COMMITTER_NAME", "test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@localhost")
			env.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			// Every process of the script's world, the daemon of any
			// HUB_HOME under $WORK included (a stray one would be a bug).
			env.Defer(func() { stopDaemon(env.WorkDir + string(os.PathSeparator)) })
			return nil
		},
	})
}

// stopDaemon ends the daemons and shims whose environment names dir (or
// a path under it), so none outlives the test.
func stopDaemon(dir string) {
	e := &hubtest.Env{Home: dir}
	e.Shutdown(nil)
}

// exits N PROG ARGS... runs a program as exec does and fails unless it
// exits with code N: the CLI's documented exit codes, each checked exactly.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not an exit code", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// loginserver starts a scripted login server (GitHub's and ChatGPT's
// device flows) on loopback for the rest of the script, whose users approve
// every code, and sets $LOGIN_URL to it.
func loginserver(ts *testscript.TestScript, neg bool, args []string) {
	s, err := oauthtest.StartWith(&oauthtest.Server{Auto: func(int) string { return oauthtest.Approve }})
	if err != nil {
		ts.Fatalf("start the login server: %v", err)
	}
	ts.Defer(func() { s.Close() })
	ts.Setenv("LOGIN_URL", s.URL())
}

// jsonout fails unless the last command's stdout is JSON: one value, or
// (jsonout lines) one value per line.
func jsonout(ts *testscript.TestScript, neg bool, args []string) {
	out := []byte(ts.ReadFile("stdout"))
	docs := [][]byte{out}
	if len(args) == 1 && args[0] == "lines" {
		docs = bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	}
	for _, d := range docs {
		if ok := json.Valid(d) && len(bytes.TrimSpace(d)) > 0; ok == neg {
			ts.Fatalf("stdout is not JSON:\n%s", out)
		}
	}
}

// TestEveryCommandTakesJSON: testdata/script/json.txtar runs every command
// of the tree that prints a result with --json and checks its stdout is
// JSON; this fails for a command added without a line there. The commands
// that speak a protocol or a shell on stdout are the documented exceptions.
func TestEveryCommandTakesJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/script/json.txtar")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	except := map[string]bool{"serve": true, "mcp": true, "completion": true, "help": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "hub ")
		if c.Runnable() && !c.Hidden && c.HasParent() && !except[strings.Fields(path)[0]] {
			covered := false
			for _, line := range strings.Split(script, "\n") {
				if i := strings.Index(line, "hub "+path+" "); i >= 0 && strings.Contains(line[i:], "--json") {
					covered = true
				}
			}
			if !covered {
				t.Errorf("hub %s has no --json line in json.txtar", path)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.NewRoot(&cli.IO{}))
}
