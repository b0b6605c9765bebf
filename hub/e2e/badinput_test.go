//go:build unix

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// TestStartRefusals: each bad start gets a clear error with a hint, and
// leaves no worktree, branch, record or reservation behind.
func TestStartRefusals(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	tmp := t.TempDir()
	notRepo := filepath.Join(tmp, "plain")
	empty := filepath.Join(tmp, "empty")
	bare := filepath.Join(tmp, "bare.git")
	for _, d := range []string{notRepo, empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hubtest.Git(t, empty, "init", "-q")
	hubtest.Git(t, tmp, "clone", "-q", "--bare", repo, bare)
	f := func(v float64) *float64 { return &v }
	ok := protocol.StartParams{Task: "t", Repo: repo, Engine: "exec", Exec: "true"}
	with := func(mod func(*protocol.StartParams)) protocol.StartParams { p := ok; mod(&p); return p }
	for _, tc := range []struct {
		name  string
		p     protocol.StartParams
		code  int64
		field string
		msg   string
	}{
		{"not a repo", with(func(p *protocol.StartParams) { p.Repo = notRepo }), protocol.CodeInvalidParams, "repo", "not a git repository"},
		{"no commits", with(func(p *protocol.StartParams) { p.Repo = empty }), protocol.CodeInvalidParams, "repo", "no commits"},
		{"bare", with(func(p *protocol.StartParams) { p.Repo = bare }), protocol.CodeInvalidParams, "repo", "bare"},
		{"relative repo", with(func(p *protocol.StartParams) { p.Repo = "repo" }), protocol.CodeInvalidParams, "repo", "absolute"},
		{"unknown base", with(func(p *protocol.StartParams) { p.Base = "no-such-branch" }), protocol.CodeInvalidParams, "base", "unknown revision"},
		{"unknown engine", with(func(p *protocol.StartParams) { p.Engine = "gpt-9" }), protocol.CodeInvalidParams, "engine", "unknown engine"},
		{"unknown isolation", with(func(p *protocol.StartParams) { p.Isolation = "airtight" }), protocol.CodeInvalidParams, "isolation", "unknown isolation"},
		{"a sandbox without a repo", with(func(p *protocol.StartParams) {
			p.Repo, p.Cwd, p.Kind, p.Isolation = "", tmp, protocol.KindRead, protocol.IsolationIsolated
		}), protocol.CodeInvalidParams, "isolation", "needs a repo"},
		{"isolation the engine cannot give", with(func(p *protocol.StartParams) { p.Isolation = "sandbox" }), protocol.CodeRefused, "isolation", "cannot enforce"},
		{"negative max_usd", with(func(p *protocol.StartParams) { p.MaxUSD = f(-1) }), protocol.CodeInvalidParams, "max_usd", "negative"},
		{"absurd max_usd", with(func(p *protocol.StartParams) { p.MaxUSD = f(1e9) }), protocol.CodeRefused, "max_usd", "ceiling"},
		{"empty task", with(func(p *protocol.StartParams) { p.Task = "  \n" }), protocol.CodeInvalidParams, "task", "empty"},
		{"huge task", with(func(p *protocol.StartParams) { p.Task = strings.Repeat("x", 5<<20) }), protocol.CodeInvalidParams, "task", "limit"},
		{"exec without command", with(func(p *protocol.StartParams) { p.Exec = "" }), protocol.CodeInvalidParams, "engine", "needs a command"},
		// sh -c gets the command as one argument, and Linux runs none of 128 KiB or more (E2BIG).
		{"exec too long to run", with(func(p *protocol.StartParams) { p.Exec = ": " + strings.Repeat("x", 128<<10) }), protocol.CodeInvalidParams, "exec", "at most 131071 bytes"},
		{"verify too long to run", with(func(p *protocol.StartParams) { p.Verify = "true " + strings.Repeat("x", 200<<10) }), protocol.CodeInvalidParams, "verify", "at most 131071 bytes"},
		{"negative timeout", with(func(p *protocol.StartParams) { p.TimeoutS = -5 }), protocol.CodeInvalidParams, "timeout_s", "negative"},
		{"unknown kind", with(func(p *protocol.StartParams) { p.Kind = "delete" }), protocol.CodeInvalidParams, "kind", "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Daemon().JobStart(ctx, tc.p)
			assertErr(t, err, tc.code, tc.msg)
			if d := errData(err); d.Field != tc.field || d.Hint == "" {
				t.Errorf("error data %+v, want field %q and a hint", d, tc.field)
			}
		})
	}
	// Nothing was created by any of them.
	list := hubtest.Daemon(t, c).JobList(ctx, protocol.ListParams{})
	if len(list.Jobs) != 0 {
		t.Errorf("refused starts left %d job records", len(list.Jobs))
	}
	if br := hubtest.Git(t, repo, "branch", "--list", "hub/*"); br != "" {
		t.Errorf("refused starts left branches: %s", br)
	}
	if ents, _ := os.ReadDir(w.paths.WorktreesDir()); len(ents) != 0 {
		t.Errorf("refused starts left worktrees: %v", ents)
	}
	eng := hubtest.Daemon(t, c).EngineList(ctx, protocol.Empty{})
	if eng.ReservedUSD != 0 || eng.SpentUSD != 0 {
		t.Errorf("refused starts left money booked: %+v", eng)
	}
}

// TestJobRefusals: operations on unknown, running and ended jobs.
func TestJobRefusals(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	gate := filepath.Join(t.TempDir(), "gate")
	running := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
		Task: "run until the gate opens", Repo: repo, Engine: "exec", Exec: gated(gate, "r.txt")})
	w.until(ctx, running.ID, func(st protocol.JobStatus) bool { return st.Progress == "waiting for the gate" })
	ended := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{
		Task: "end at once", Repo: repo, Engine: "exec", Exec: "true"})
	hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{ended.ID}, TimeoutS: 30})

	for _, tc := range []struct {
		name   string
		method string
		params any
		code   int64
		msg    string
	}{
		{"status of unknown id", protocol.MethodJobStatus, protocol.IDParams{ID: "zzzzzzzz"}, protocol.CodeNotFound, "unknown job"},
		{"result of unknown id", protocol.MethodJobResult, protocol.ResultParams{ID: "zzzzzzzz"}, protocol.CodeNotFound, "unknown job"},
		{"reply to unknown id", protocol.MethodJobReply, protocol.ReplyParams{ID: "zzzzzzzz", Text: "x"}, protocol.CodeNotFound, "unknown job"},
		{"steer unknown id", protocol.MethodJobSteer, protocol.SteerParams{ID: "zzzzzzzz", Text: "x"}, protocol.CodeNotFound, "unknown job"},
		{"stop unknown id", protocol.MethodJobStop, protocol.IDParams{ID: "zzzzzzzz"}, protocol.CodeNotFound, "unknown job"},
		{"cleanup unknown id", protocol.MethodJobCleanup, protocol.CleanupParams{ID: "zzzzzzzz"}, protocol.CodeNotFound, "unknown job"},
		{"wait on unknown ids", protocol.MethodJobWait, protocol.WaitParams{IDs: []string{"zzzzzzzz"}}, protocol.CodeNotFound, "no job"},
		{"reply with no pending question", protocol.MethodJobReply, protocol.ReplyParams{ID: running.ID, Text: "x"}, protocol.CodeWrongState, "no pending question"},
		{"reply with empty text", protocol.MethodJobReply, protocol.ReplyParams{ID: running.ID, Text: " "}, protocol.CodeInvalidParams, "empty"},
		{"steer with empty text", protocol.MethodJobSteer, protocol.SteerParams{ID: running.ID, Text: ""}, protocol.CodeInvalidParams, "empty"},
		{"reply to an ended job", protocol.MethodJobReply, protocol.ReplyParams{ID: ended.ID, Text: "x"}, protocol.CodeWrongState, "ended"},
		{"steer an ended job", protocol.MethodJobSteer, protocol.SteerParams{ID: ended.ID, Text: "x"}, protocol.CodeWrongState, "ended"},
		{"stop an ended job", protocol.MethodJobStop, protocol.IDParams{ID: ended.ID}, protocol.CodeWrongState, "ended"},
		{"cleanup of a running job", protocol.MethodJobCleanup, protocol.CleanupParams{ID: running.ID}, protocol.CodeWrongState, "running"},
		{"unknown method", "job/frobnicate", struct{}{}, protocol.CodeMethodNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Call(ctx, tc.method, tc.params, nil)
			assertErr(t, err, tc.code, tc.msg)
		})
	}
	// The running job is untouched by all of that and ends well.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wr := hubtest.Daemon(t, c).JobWait(ctx, protocol.WaitParams{IDs: []string{running.ID}, TimeoutS: 30})
	if wr.Jobs[0].State != protocol.StateSucceeded {
		t.Errorf("running job ended %s: %s", wr.Jobs[0].State, wr.Jobs[0].Error)
	}
	// Edits made in the worktree after the job ended are not thrown away.
	wt := w.paths.Worktree(running.ID)
	if err := os.WriteFile(filepath.Join(wt, "late.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := c.Daemon().JobCleanup(ctx, protocol.CleanupParams{ID: running.ID})
	assertErr(t, err, protocol.CodeWrongState, "uncommitted changes")
	if err := os.Remove(filepath.Join(wt, "late.txt")); err != nil {
		t.Fatal(err)
	}
	cl := hubtest.Daemon(t, c).JobCleanup(ctx, protocol.CleanupParams{ID: running.ID})
	if !cl.WorktreeRemoved || cl.BranchDeleted {
		t.Errorf("cleanup: %+v", cl)
	}
	if br := hubtest.Git(t, repo, "branch", "--list", "hub/"+running.ID); br == "" {
		t.Error("cleanup deleted the branch without being asked")
	}
}

// TestBadFrames: malformed and oversized frames on the daemon's socket get
// JSON-RPC errors; the daemon keeps serving.
func TestBadFrames(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 30*time.Second)
	c := w.connect(ctx) // starts the daemon
	nc, err := rpc.Dial(ctx, w.paths.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	send := func(body string) {
		fmt.Fprintf(nc, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":`)
	if got := readFrame(t, r); !strings.Contains(got, "-32700") {
		t.Errorf("malformed JSON: got %s", got)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`)
	if got := readFrame(t, r); !strings.Contains(got, `"server_version"`) {
		t.Errorf("after a bad frame the connection should still serve: %s", got)
	}
	fmt.Fprintf(nc, "Content-Length: %d\r\n\r\n", 1<<30)
	if got := readFrame(t, r); !strings.Contains(got, "-32600") {
		t.Errorf("oversized frame: got %s", got)
	}
	// The daemon still serves others.
	hubtest.Daemon(t, c).EngineList(ctx, protocol.Empty{})
}

func readFrame(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var n int
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read header: %v", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if strings.HasPrefix(strings.ToLower(line), "content-length:") {
			fmt.Sscan(strings.TrimSpace(line[len("content-length:"):]), &n)
		}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertErr(t *testing.T, err error, code int64, msg string) {
	t.Helper()
	je, ok := err.(*jsonrpc2.Error)
	if !ok {
		t.Fatalf("got %v (%T), want a JSON-RPC error %d", err, err, code)
	}
	if je.Code != code || !strings.Contains(strings.ToLower(je.Message), strings.ToLower(msg)) {
		t.Errorf("got error %d %q, want %d containing %q", je.Code, je.Message, code, msg)
	}
}

func errData(err error) protocol.ErrorData {
	var d protocol.ErrorData
	if je, ok := err.(*jsonrpc2.Error); ok && je.Data != nil {
		_ = jsonUnmarshal(*je.Data, &d)
	}
	return d
}
