package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// hostile is a worker that tries, one by one, what a worker must not do, and
// writes what each attempt got into report.txt (hub commits it). Each line
// is "<attempt>: <exit code> <output>".
const hostile = `try() { name=$1; shift; out=$( ( "$@" ) 2>&1 ); printf '%s: %s %s\n' "$name" "$?" "$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)" >> report.txt; }
try ssh cat "$CANARY_HOME/.ssh/id_ed25519"
try keyfile cat "$CANARY_HOME/.config/hub/env"
try other-repo cat "$CANARY_OTHER/secret.txt"
try write-outside sh -c 'echo pwned > "$CANARY_OTHER/secret.txt" && echo pwned > "$CANARY_HOME/pwned.txt"'
try move-main sh -c 'git commit -q --allow-empty -m hostile && git update-ref refs/heads/main HEAD'
try push git push -q origin HEAD:refs/heads/pushed
try network git ls-remote "http://127.0.0.1:$CANARY_PORT/x"
try proc-environ sh -c 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\000" "\n" | grep HUB_CANARY_ENV'
`

// TestHostileWorker runs the hostile worker under isolated and untrusted
// (each attempt fails: no secret read, nothing written outside the
// worktree, main unmoved, nothing pushed, no connection under untrusted),
// and under worktree, where it reaches them and the start result says so.
func TestHostileWorker(t *testing.T) {
	w := newWorld(t)
	ctx := deadline(t, 120*time.Second)
	secret := fmt.Sprintf("canary-%d", time.Now().UnixNano())
	home := w.env.UserDir
	for path, body := range map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):     "ssh " + secret,
		filepath.Join(home, ".config", "hub", "env"):  "HUB_TEST_KEY=key" + secret + "\n",
		filepath.Join(t.TempDir(), "placeholder.txt"): "",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := hubtest.Repo(t, filepath.Join(t.TempDir(), "other"), map[string]string{"secret.txt": "other " + secret})
	// A listener the worker tries to reach: under untrusted nothing may connect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connections atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// The daemon (and so the shim) carries a secret in its environment.
	t.Setenv("HUB_CANARY_ENV", "env"+secret)
	c := w.connect(ctx)

	for _, level := range []string{protocol.IsolationIsolated, protocol.IsolationUntrusted, protocol.IsolationWorktree} {
		t.Run(level, func(t *testing.T) {
			repo := sampleRepo(t, "repo")
			bare := filepath.Join(t.TempDir(), "origin.git")
			hubtest.Git(t, t.TempDir(), "init", "-q", "--bare", bare)
			hubtest.Git(t, repo, "remote", "add", "origin", bare)
			mainBefore := hubtest.Git(t, repo, "rev-parse", "main")
			exports := fmt.Sprintf("CANARY_HOME=%s CANARY_OTHER=%s CANARY_PORT=%d; export CANARY_HOME CANARY_OTHER CANARY_PORT; ", home, other, port)
			connections.Store(0)
			r := call[protocol.StartResult](t, ctx, c, protocol.MethodJobStart, protocol.StartParams{Task: "hostile", Repo: repo,
				Engine: "exec", Isolation: level, Exec: exports + hostile})
			st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
			report := hubtest.Git(t, repo, "show", "hub/"+r.ID+":report.txt")
			t.Logf("%s (%s):\n%s", level, st.State, report)
			lines := map[string]string{}
			for _, l := range strings.Split(report, "\n") {
				k, v, _ := strings.Cut(l, ": ")
				lines[k] = v
			}
			reached := map[string]bool{
				"ssh":           strings.Contains(lines["ssh"], secret),
				"keyfile":       strings.Contains(lines["keyfile"], secret),
				"other-repo":    strings.Contains(lines["other-repo"], secret),
				"write-outside": !strings.Contains(readFile(t, filepath.Join(other, "secret.txt")), secret) || exists(filepath.Join(home, "pwned.txt")),
				"move-main":     hubtest.Git(t, repo, "rev-parse", "main") != mainBefore,
				"push":          hubtest.Git(t, bare, "for-each-ref", "--format=%(refname)") != "",
				"network":       connections.Load() > 0,
				"proc-environ":  strings.Contains(lines["proc-environ"], secret),
			}
			// Put things back for the next level.
			hubtest.Git(t, other, "checkout", "--", "secret.txt")
			os.Remove(filepath.Join(home, "pwned.txt"))

			var want map[string]bool
			switch level {
			case protocol.IsolationUntrusted:
				want = map[string]bool{}
			case protocol.IsolationIsolated:
				// The network stays (engines need their model endpoint); a push
				// still fails: the remote is not there and no credentials are.
				want = map[string]bool{"network": true}
			case protocol.IsolationWorktree:
				// Not a sandbox: the worker runs as you. The start result says so.
				want = map[string]bool{"ssh": true, "keyfile": true, "other-repo": true, "write-outside": true, "move-main": true, "push": true,
					"network": true, "proc-environ": os.Getuid() == 0}
				note := strings.Join(r.Notes, " ")
				for _, s := range []string{"not a sandbox", "~/.ssh", "other repositories", "network"} {
					if !strings.Contains(note, s) {
						t.Errorf("a worktree job's notes should say %q: %v", s, r.Notes)
					}
				}
			}
			for attempt, got := range reached {
				if got != want[attempt] {
					t.Errorf("%s: %s reached = %v, want %v (report: %s)", level, attempt, got, want[attempt], lines[attempt])
				}
			}
			if level != protocol.IsolationWorktree && st.State != protocol.StateSucceeded {
				t.Errorf("the job ended %s (%s); the sandbox should still let it commit its report", st.State, st.Error)
			}
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
