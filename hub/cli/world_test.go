package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest/world"
	"github.com/hub-agents/hub/hub/rpc"
)

// runIn runs one command line against w's daemon, in this process, and
// returns what it printed and its exit code.
func runIn(t *testing.T, w *world.World, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut,
		Daemon: func(ctx context.Context, h rpc.Handler) (Daemon, error) {
			return client.Connect(ctx, w.Paths, client.Options{ClientName: "cli-test", Handler: h})
		}}
	code = Run(w.Ctx, ios, args)
	return out.String(), errOut.String(), code
}

// TestCommandsInProcess: the commands' logic — what they send, what they
// print, their exit codes — run against a daemon in this process, without
// the hub binary.
func TestCommandsInProcess(t *testing.T) {
	w := world.New(t, world.Options{})
	repo := w.Repo(map[string]string{"a.txt": "a\n"})

	out, errOut, code := runIn(t, w, "start", "--repo", repo, "--engine", "exec", "--exec", "echo b > a.txt", "--verify", "grep -q b a.txt", "--task", "fix a")
	id := strings.TrimSpace(out)
	if code != ExitOK || !regexp.MustCompile(`^[0-9a-z]{8}$`).MatchString(id) {
		t.Fatalf("start: exit %d, out %q, err %q", code, out, errOut)
	}
	out, _, code = runIn(t, w, "wait", id, "--timeout", "60s")
	if code != ExitOK || !strings.Contains(out, id+" succeeded · exec · ") || !strings.Contains(out, " · verified") {
		t.Errorf("wait: exit %d:\n%s", code, out)
	}
	out, _, code = runIn(t, w, "result", id)
	for _, want := range []string{"files: 1 changed (+1 -1): a.txt", "verify: `grep -q b a.txt` exit 0", "left: review hub/" + id + ", then land it (hub land " + id + "), then cleanup"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("result: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	out, _, code = runIn(t, w, "events", id, "--kind", "state")
	if code != ExitOK || strings.Count(out, "\tstate\t") != 5 {
		t.Errorf("events: exit %d:\n%s", code, out)
	}
	out, _, code = runIn(t, w, "--json", "status", id)
	if code != ExitOK || !strings.Contains(out, `"state": "succeeded"`) || !strings.Contains(out, `"known": true`) {
		t.Errorf("status --json: exit %d:\n%s", code, out)
	}

	// A job that fails: wait says so with exit 3.
	out, _, _ = runIn(t, w, "start", "--repo", repo, "--engine", "exec", "--exec", "exit 7", "--task", "fail")
	failed := strings.TrimSpace(out)
	out, _, code = runIn(t, w, "wait", failed, "--timeout", "60s")
	if code != ExitJobFail || !strings.Contains(out, "failed") {
		t.Errorf("wait on a failed job: exit %d:\n%s", code, out)
	}

	// Bad input: an unknown job is exit 5 with a hint; a bad flag exit 2.
	_, errOut, code = runIn(t, w, "status", "zzzzzzzz")
	if code != ExitNotFound || !strings.Contains(errOut, `unknown job id "zzzzzzzz"`) || !strings.Contains(errOut, "hint: ") {
		t.Errorf("status of an unknown job: exit %d: %s", code, errOut)
	}
	_, errOut, code = runIn(t, w, "events", id, "--kind", "bogus")
	if code != ExitUsage || !strings.Contains(errOut, `no event kind "bogus"`) {
		t.Errorf("events --kind bogus: exit %d: %s", code, errOut)
	}
	_, errOut, code = runIn(t, w, "stop", id)
	if code != ExitError || !strings.Contains(errOut, "has already ended") {
		t.Errorf("stop of an ended job: exit %d: %s", code, errOut)
	}
}
