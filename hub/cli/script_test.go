package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

// TestScripts runs the CLI's behaviour as testscript scripts against the
// real hub binary: a daemon per script in its own HUB_HOME, real git, real
// exec jobs. Each script's $WORK is its HOME too.
func TestScripts(t *testing.T) {
	bin := hubtest.MustBinary(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
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
