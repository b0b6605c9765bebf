package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
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
try other-branch git branch -f hub/other HEAD
try take-stash git stash drop
try push git push -q origin HEAD:refs/heads/pushed
try network git ls-remote "http://127.0.0.1:$CANARY_PORT/x"
try proc-environ sh -c 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\000" "\n" | grep HUB_CANARY_ENV'
cat > .daemon.pl <<'PERL'
use IO::Socket::UNIX;
my $s = IO::Socket::UNIX->new(Peer => "$ENV{HUB_HOME}/hub.sock") or die "connect: $!\n";
sub call { my ($id, $m, $p) = @_; my $b = qq({"jsonrpc":"2.0","id":$id,"method":"$m","params":$p});
  print $s "Content-Length: " . length($b) . "\r\n\r\n$b"; local $/ = "\r\n\r\n"; my $h = <$s>;
  my ($n) = $h =~ /Content-Length: (\d+)/ or die "no answer\n"; read($s, my $r, $n); return $r; }
my $r = call(1, "job/start", qq({"task":"escape","repo":"$ENV{CANARY_OTHER}","engine":"exec","exec":"echo pwned > $ENV{CANARY_HOME}/daemon.txt"}));
print "$r\n";
my ($id) = $r =~ /"id":"([a-z0-9]+)"/ or die "refused\n";
print call(2, "job/wait", qq({"ids":["$id"],"timeout_s":30})), "\n";
PERL
try daemon perl .daemon.pl
try signal kill -0 "$CANARY_PID"
try gitdir-mount sh -c 'echo planted > "$CANARY_OTHER/.git/objects/planted"'
try gitdir-rewrite sh -c 'mkdir -p .fake && echo "$CANARY_OTHER/.git" > .fake/commondir && printf "gitdir: %s/.fake\n" "$PWD" > .git'
`

// hostileWorld is what the hostile worker goes after: a secret planted in
// ~/.ssh, in hub's key file, in another repository and in the daemon's
// environment, and a listener on loopback.
type hostileWorld struct {
	secret, home, other string
	net                 *hubtest.Listener
}

// newHostileWorld sets the daemon's environment canary (call it before the
// daemon starts) and opens the listener; plant puts the files in place.
func newHostileWorld(t *testing.T) *hostileWorld {
	h := &hostileWorld{secret: fmt.Sprintf("canary-%d", time.Now().UnixNano())}
	t.Setenv("HUB_CANARY_ENV", "env"+h.secret)
	h.net = hubtest.Listen(t)
	return h
}

func (h *hostileWorld) plant(t *testing.T, home string) {
	h.home = home
	for path, body := range map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):    "ssh " + h.secret,
		filepath.Join(home, ".config", "hub", "env"): "HUB_TEST_KEY=key" + h.secret + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(body)
		f.Close()
	}
	h.other = hubtest.Repo(t, filepath.Join(t.TempDir(), "other"), map[string]string{"secret.txt": "other " + h.secret})
}

// script is the hostile worker's shell script, with the paths it goes after.
func (h *hostileWorld) script() string {
	return fmt.Sprintf("CANARY_HOME=%s CANARY_OTHER=%s CANARY_PORT=%d CANARY_PID=%d; export CANARY_HOME CANARY_OTHER CANARY_PORT CANARY_PID; ",
		h.home, h.other, h.net.Port, os.Getpid()) + hostile
}

// target is a repository with a bare remote, ready for one hostile job.
type target struct{ repo, bare, main, stash string }

func (h *hostileWorld) target(t *testing.T) target {
	repo := sampleRepo(t, "repo")
	bare := filepath.Join(t.TempDir(), "origin.git")
	hubtest.Git(t, t.TempDir(), "init", "-q", "--bare", bare)
	hubtest.Git(t, repo, "remote", "add", "origin", bare)
	hubtest.Git(t, repo, "branch", "hub/other") // another job's branch
	// Work the user put aside: the stash is shared by every worktree.
	if err := os.WriteFile(filepath.Join(repo, "bug.txt"), []byte("half a fix\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hubtest.Git(t, repo, "stash", "push", "-q", "-m", "my half fix")
	h.net.Reset()
	return target{repo: repo, bare: bare, main: hubtest.Git(t, repo, "rev-parse", "main"), stash: hubtest.Git(t, repo, "rev-parse", "refs/stash")}
}

// reached reads job id's report and the world, says which attempts got
// through, and puts the world back for the next job.
func (h *hostileWorld) reached(t *testing.T, tg target, id string) map[string]bool {
	report := hubtest.Git(t, tg.repo, "show", "hub/"+id+":report.txt")
	t.Logf("report of %s:\n%s", id, report)
	lines := map[string]string{}
	for _, l := range strings.Split(report, "\n") {
		k, v, _ := strings.Cut(l, ": ")
		lines[k] = v
	}
	got := map[string]bool{
		"ssh":           strings.Contains(lines["ssh"], h.secret),
		"keyfile":       strings.Contains(lines["keyfile"], h.secret),
		"other-repo":    strings.Contains(lines["other-repo"], h.secret),
		"write-outside": !strings.Contains(readFile(t, filepath.Join(h.other, "secret.txt")), h.secret) || exists(filepath.Join(h.home, "pwned.txt")),
		"move-main":     hubtest.Git(t, tg.repo, "rev-parse", "main") != tg.main,
		"other-branch":  hubtest.Git(t, tg.repo, "rev-parse", "hub/other") != tg.main,
		"take-stash":    gitOut(tg.repo, "rev-parse", "-q", "--verify", "refs/stash") != tg.stash,
		"push":          hubtest.Git(t, tg.bare, "for-each-ref", "--format=%(refname)") != "",
		"network":       h.net.Connections() > 0,
		"proc-environ":  strings.Contains(lines["proc-environ"], h.secret),
		// A job started through the daemon on the worker's behalf, out of
		// its sandbox.
		"daemon": exists(filepath.Join(h.home, "daemon.txt")),
		// A signal to a process outside the sandbox (this test's).
		"signal": strings.TrimSpace(lines["signal"]) == "0" || strings.HasPrefix(lines["signal"], "0 "),
		// A write into another repository's objects, which a sandbox built
		// from the worktree's .git (rewritten by the run before, its git
		// dir's commondir naming that repository: the built-in worker's
		// shell runs the script twice) would have mounted writable.
		"gitdir-mount": exists(filepath.Join(h.other, ".git", "objects", "planted")),
	}
	// The worker's own commit is on its branch, sandboxed or not.
	if log := hubtest.Git(t, tg.repo, "log", "--format=%s", "hub/"+id); !strings.Contains(log, "hostile") {
		t.Errorf("the worker's own commit is not on hub/%s:\n%s", id, log)
	}
	hubtest.Git(t, h.other, "checkout", "--", "secret.txt")
	os.Remove(filepath.Join(h.home, "pwned.txt"))
	os.Remove(filepath.Join(h.home, "daemon.txt"))
	os.Remove(filepath.Join(h.other, ".git", "objects", "planted"))
	return got
}

func expectReached(t *testing.T, level protocol.Isolation, got, want map[string]bool) {
	t.Helper()
	for attempt, g := range got {
		if g != want[attempt] {
			t.Errorf("%s: %s reached = %v, want %v", level, attempt, g, want[attempt])
		}
	}
}

// sandboxWant is what gets through at a sandboxed level: under isolated the
// network stays (engines need their model endpoint); a push still fails,
// the remote is not there and no credentials are.
func sandboxWant(level protocol.Isolation) map[string]bool {
	if level == protocol.IsolationIsolated {
		return map[string]bool{"network": true}
	}
	return map[string]bool{}
}

// TestHostileWorker runs the hostile worker on the exec engine under
// isolated and untrusted (each attempt fails: no secret read, nothing
// written outside the worktree, main unmoved, nothing pushed, no connection
// under untrusted), and under worktree, where it reaches them and the start
// result says so.
func TestHostileWorker(t *testing.T) {
	for _, mech := range []string{sandbox.MechBwrap, sandbox.MechLandlock} {
		t.Run(mech, func(t *testing.T) { testHostileWorker(t, mech) })
	}
}

func testHostileWorker(t *testing.T, mech string) {
	t.Setenv(sandbox.EnvMechanism, mech) // the daemon and its shims inherit it
	h := newHostileWorld(t)
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 120*time.Second)
	h.plant(t, w.env.UserDir)
	c := w.connect(ctx)
	levels := []protocol.Isolation{protocol.IsolationIsolated, protocol.IsolationUntrusted}
	if mech == sandbox.MechBwrap {
		levels = append(levels, protocol.IsolationWorktree) // it does not depend on the mechanism
	}
	for _, level := range levels {
		t.Run(string(level), func(t *testing.T) {
			tg := h.target(t)
			r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "hostile", Repo: tg.repo,
				Engine: "exec", Isolation: level, Exec: h.script()})
			st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
			got := h.reached(t, tg, r.ID)
			moved := refChanges(t, ctx, c, r.ID)
			if moved["refs/heads/hub/"+r.ID] {
				t.Errorf("the job's own branch is reported as moved by someone else")
			}
			if level != protocol.IsolationWorktree {
				// The checkout's git dir is private under either mechanism:
				// the worker's refs are its own, the user's are out of reach.
				expectReached(t, level, got, sandboxWant(level))
				if len(moved) > 0 {
					t.Errorf("refs of the user's repository moved under %s: %v", mech, moved)
				}
				// What the sandbox still lets it read is said.
				if note := strings.Join(r.Notes, " "); !strings.Contains(note, "object store") {
					t.Errorf("a sandboxed job's notes should say the object store is readable: %v", r.Notes)
				}
				if st.State != protocol.StateSucceeded {
					t.Errorf("the job ended %s (%s); the sandbox should still let it commit its report", st.State, st.Error)
				}
				return
			}
			// Not a sandbox: the worker runs as you, and the start result says so.
			expectReached(t, level, got, map[string]bool{"ssh": true, "keyfile": true, "other-repo": true, "write-outside": true,
				"move-main": true, "other-branch": true, "take-stash": true, "push": true, "network": true, "proc-environ": os.Getuid() == 0, "daemon": true, "signal": true, "gitdir-mount": true})
			// hub saw the refs move, and says so in the evidence.
			if !moved["refs/heads/main"] || !moved["refs/heads/hub/other"] || !moved["refs/stash"] {
				t.Errorf("evidence ref changes: %v; want main, hub/other and the stash", moved)
			}
			// … and in the job's status, its result and --full, with how to put each back.
			now := hubtest.Daemon(t, c).JobStatus(ctx, protocol.IDParams{ID: r.ID})
			res := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Full: true})
			alerts := strings.Join(now.Alerts, "\n")
			for _, want := range []string{"branch main moved while it ran: " + tg.main[:10], "git update-ref refs/heads/main " + tg.main,
				"branch hub/other moved", "your stash " + tg.stash[:10] + " was taken", "git stash store -m restored " + tg.stash} {
				if !strings.Contains(alerts, want) || !strings.Contains(res.Full, want) {
					t.Errorf("%q is not in the status's alerts or the full result:\nalerts:\n%s\nfull:\n%s", want, alerts, res.Full)
				}
			}
			rv := hubtest.Daemon(t, c).JobReview(ctx, protocol.ReviewParams{IDs: []string{r.ID}})
			if len(rv.Jobs) != 1 || !slices.Contains(rv.Jobs[0].Risks, "refs-moved") || !strings.HasPrefix(rv.Jobs[0].Next, "put back what moved") {
				t.Errorf("the review packet does not flag the moved refs: %+v", rv.Jobs)
			}
			if !strings.Contains(res.Summary, "⚠ ") || !strings.Contains(res.Summary, "stash") && !strings.Contains(res.Summary, "⚠ +") {
				t.Errorf("the summary does not name what moved:\n%s", res.Summary)
			}
			note := strings.Join(r.Notes, " ")
			for _, s := range []string{"not a sandbox", "~/.ssh", "other repositories", "network"} {
				if !strings.Contains(note, s) {
					t.Errorf("a worktree job's notes should say %q: %v", s, r.Notes)
				}
			}
		})
	}
}

// refChanges are the refs job id's evidence says moved while it ran.
func refChanges(t *testing.T, ctx context.Context, c *client.Client, id string) map[string]bool {
	t.Helper()
	res := hubtest.Daemon(t, c).JobResult(ctx, protocol.ResultParams{ID: id, Evidence: true})
	moved := map[string]bool{}
	if res.Evidence != nil {
		for _, rc := range res.Evidence.Observed.RefChanges {
			moved[rc.Ref] = true
		}
	}
	return moved
}

// TestHostileBuiltin: the built-in worker's shell tool runs the hostile
// script under isolated and untrusted. Every attempt fails, while the model
// calls, made by the shim outside the sandbox, still go through (the job
// ends with the model's answer).
func TestHostileBuiltin(t *testing.T) {
	for _, mech := range []string{sandbox.MechBwrap, sandbox.MechLandlock} {
		t.Run(mech, func(t *testing.T) { testHostileBuiltin(t, mech) })
	}
}

func testHostileBuiltin(t *testing.T, mech string) {
	t.Setenv(sandbox.EnvMechanism, mech)
	h := newHostileWorld(t)
	ctx := hubtest.Deadline(t, 120*time.Second)
	u := scripted.Usage{Input: 100, Output: 10}
	// The script names paths known only once the world exists: the model
	// that plays it replaces this placeholder after planting.
	b := newBuiltinWorld(t, ctx, openaiWire, false, textTurn(u, "placeholder"))
	h.plant(t, b.env.UserDir)
	var turns []scripted.Turn
	for range 2 {
		turns = append(turns, toolTurn(u, "run_shell", map[string]any{"command": h.script()}), textTurn(u, "Tried everything."))
	}
	b.model = startModel(t, turns...)
	b.setModelProfile(openaiWire, b.model, keyEnvName)
	for _, level := range []protocol.Isolation{protocol.IsolationIsolated, protocol.IsolationUntrusted} {
		t.Run(string(level), func(t *testing.T) {
			tg := h.target(t)
			r := b.start(ctx, protocol.StartParams{Task: "hostile", Repo: tg.repo, Isolation: level})
			st := b.waitEnd(ctx, r.ID)
			if st.State != protocol.StateSucceeded {
				t.Fatalf("the job ended %s (%s); the model should still be reachable", st.State, st.Error)
			}
			expectReached(t, level, h.reached(t, tg, r.ID), sandboxWant(level))
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestHostileCLI: each agent CLI at isolated runs the hostile script with its
// own shell tool, inside the sandbox, its model on loopback still reachable.
// Every attempt fails but the network, which isolated keeps for the model.
func TestHostileCLI(t *testing.T) {
	for _, mech := range []string{sandbox.MechBwrap, sandbox.MechLandlock} {
		t.Run(mech, func(t *testing.T) { testHostileCLI(t, mech) })
	}
}

func testHostileCLI(t *testing.T, mech string) {
	t.Setenv(sandbox.EnvMechanism, mech)
	for _, cli := range []string{"claude", "codex", "opencode", "gemini", "qwen"} {
		t.Run(cli, func(t *testing.T) {
			h := newHostileWorld(t)
			ctx := hubtest.Deadline(t, 150*time.Second)
			var b *builtinWorld
			switch cli {
			case "claude":
				t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
				b = newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
					if !hasTool(r, "Bash") || lastMessage(r).Role == "tool" {
						return scripted.Turn{Text: "Tried everything."}, true
					}
					args, _ := json.Marshal(map[string]string{"command": h.script(), "description": "try"})
					return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Args: args}}}, true
				})
			case "codex":
				b = newCodexWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
					if !hasTool(r, codexShell) || codexToolResults(r) > 0 {
						return scripted.Turn{Text: "Tried everything."}, true
					}
					return codexRun(h.script()), true
				})
			case "opencode":
				b = newOpenCodeWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
					if ocLastCall(r) != "" {
						return scripted.Turn{Text: "Tried everything."}, true
					}
					return ocCall("bash", map[string]any{"command": h.script(), "description": "try"}), true
				})
			case "gemini", "qwen":
				a := map[string]acpAgent{"gemini": acpGemini, "qwen": acpQwen}[cli]
				shell := a.shell(h.script())
				var write []scripted.ToolCall
				if cli == "gemini" {
					// Gemini CLI refuses a command with $(…) in it: the
					// script goes into a file first, then runs.
					args, _ := json.Marshal(map[string]string{"file_path": "hostile.sh", "content": h.script() + "\n"})
					write = []scripted.ToolCall{{Name: "write_file", Args: args}}
					shell = a.shell("sh hostile.sh")
				}
				b = newACPWorld(t, ctx, a, "", func(r *scripted.Request) (scripted.Turn, bool) {
					switch {
					case acpCalled(r, shell.Name):
						return scripted.Turn{Text: "Tried everything."}, true
					case len(write) > 0 && !acpCalled(r, "write_file"):
						return scripted.Turn{ToolCalls: write}, true
					}
					return scripted.Turn{ToolCalls: []scripted.ToolCall{shell}}, true
				})
			}
			h.plant(t, b.env.UserDir)
			tg := h.target(t)
			if mech == sandbox.MechLandlock && cli == "opencode" {
				// It cannot run under Landlock: refused, with the reason.
				_, err := b.c.Daemon().JobStart(ctx, protocol.StartParams{Repo: tg.repo, Engine: cli, Profile: "t",
					Isolation: protocol.IsolationIsolated, Task: "hostile"})
				if err == nil || !strings.Contains(err.Error(), "aborts without /proc") {
					t.Errorf("isolated on OpenCode under Landlock: %v; want a refusal that says why", err)
				}
				return
			}
			r := hubtest.Daemon(t, b.c).JobStart(ctx, protocol.StartParams{Repo: tg.repo, Engine: cli, Profile: "t",
				Isolation: protocol.IsolationIsolated, Task: "hostile"})
			st := b.waitEnd(ctx, r.ID)
			if st.State != protocol.StateSucceeded {
				t.Fatalf("job ended %s: %s\n%s", st.State, st.Error, readFile(t, b.paths.WorkerLog(r.ID)))
			}
			expectReached(t, protocol.IsolationIsolated, h.reached(t, tg, r.ID), sandboxWant(protocol.IsolationIsolated))
			// untrusted is refused for it, with the reason.
			_, err := b.c.Daemon().JobStart(ctx, protocol.StartParams{Repo: tg.repo, Engine: cli, Profile: "t",
				Isolation: protocol.IsolationUntrusted, Task: "hostile"})
			if err == nil || !strings.Contains(err.Error(), "calls its model from inside the sandbox") {
				t.Errorf("untrusted on %s: %v; want a refusal that says why", cli, err)
			}
		})
	}
}

// gitOut is git's trimmed output in dir, "" when it fails (a ref that is gone).
func gitOut(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
