package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
)

// Codex's shell tool (unified exec) and hub's question tool, as Codex offers
// them on the Responses wire: MCP tools sit in namespace mcp__<server>.
const (
	codexShell = "exec_command"
	codexAsk   = "ask_supervisor"
	codexHubNS = "mcp__hub"
)

// codexCall is a call of Codex's shell tool; codexRun the turn making it.
func codexCall(cmd string) scripted.ToolCall {
	return scriptCall(codexShell, map[string]any{"cmd": cmd})
}

func codexRun(cmd string) scripted.Turn { return turnOf(codexCall(cmd)) }

// codexToolResults counts the tool results in a request's history.
func codexToolResults(r *scripted.Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.ToolResults)
	}
	return n
}

func newCodexWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	t.Setenv("HUB_CODEX", hubtest.AgentCLI(t, "codex"))
	return newCLIWorld(t, ctx, openaiWire, respond)
}

// codexWorld is newCodexWorld whose requests without Codex's shell tool
// (side requests) get a short text.
func codexWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	return newCodexWorld(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, codexShell) {
			return scripted.Turn{Text: "ok"}, true
		}
		return respond(r)
	})
}

// codexNoKeyOnDisk fails when the model key is in any file under dir.
func codexNoKeyOnDisk(t *testing.T, dir, key string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), key) {
			t.Errorf("the model key is written in %s", p)
		}
		return nil
	})
}

// codexEdit: a write job asking for isolation sandbox goes to codex (the
// engine whose own sandbox enforces it): besides the fix, the model tries to
// write outside the worktree, which the sandbox refuses. Every answer
// carries Codex's rate-limit headers, as OpenAI's do, and the key is
// checked: the quota Codex recorded reaches the router, and the key is
// written nowhere.
func codexEdit(t *testing.T, e cliEngine, x *cliEdit) {
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	// A five-hour window 37% used. Codex records it in its session files,
	// hub reads them after the run, and the router sees it.
	resets := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	quota := map[string]string{"x-codex-primary-used-percent": "37", "x-codex-primary-window-minutes": "300",
		"x-codex-primary-reset-at": fmt.Sprint(resets.Unix())}
	x.steps = append(x.steps, codexCall("echo escaped > "+outside))
	x.start = func(p *protocol.StartParams) {
		p.Engine, p.Isolation = "", protocol.IsolationSandbox
	}
	x.respond = func(respond scripted.Responder) scripted.Responder {
		return withHeaders(quota, func(r *scripted.Request) (scripted.Turn, bool) {
			if got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); got != os.Getenv(keyEnvName) {
				return scripted.Turn{Error: &scripted.HTTPError{Status: 401, Message: "wrong key"}}, true
			}
			return respond(r)
		})
	}
	x.check = func(t *testing.T, j cliJob, ev *protocol.Evidence) {
		// Codex reports no command_execution for a command its sandbox
		// refused: the model's tool result says what happened.
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("a command wrote %s, outside the worktree, through Codex's sandbox", outside)
		}
		refused := false
		for _, r := range j.b.model.Requests() {
			if toolCallsIn(&r) == 2 && len(lastMessage(&r).ToolResults) > 0 {
				out := lastMessage(&r).ToolResults[0].Content
				refused = true
				if !strings.Contains(out, "Read-only file system") {
					t.Errorf("the write outside the worktree gave the model %q, not the sandbox's refusal", out)
				}
				break
			}
		}
		if !refused {
			t.Error("the model never saw the result of its write outside the worktree")
		}
		// Prices are a dollar a million tokens: the cost in
		// micro-dollars is the token count.
		if c := ev.Cost; micros.FromUSD(c.USD) != micros.Micros(c.Tokens) {
			t.Errorf("cost %+v, want priced from the tokens", c)
		}
		codexNoKeyOnDisk(t, j.b.env.Home, j.b.key)
		// The quota Codex recorded is the router's now, with its source.
		var capacity string
		for _, e := range hubtest.Daemon(t, j.b.c).EngineList(j.ctx, protocol.Empty{}).Engines {
			if e.Name == "codex" {
				capacity = e.Capacity
			}
		}
		if !strings.Contains(capacity, "5h 37% used, resets ") || !strings.Contains(capacity, "(codex session rollout, read just now, high confidence)") {
			t.Errorf("codex's capacity after the run: %q", capacity)
		}
		ex := hubtest.Daemon(t, j.b.c).RouteExplain(j.ctx, protocol.StartParams{Repo: j.b.repo, Profile: "t", Isolation: protocol.IsolationSandbox})
		if !strings.Contains(ex.Text, "codex: 5h 37% used") || !strings.Contains(ex.Text, "−$0.74") {
			t.Errorf("route explain does not weigh codex's quota (37%% of $2.00 = $0.74):\n%s", ex.Text)
		}
	}
}

// withHeaders sends headers with every answer of respond.
func withHeaders(h map[string]string, respond scripted.Responder) scripted.Responder {
	return func(r *scripted.Request) (scripted.Turn, bool) {
		t, ok := respond(r)
		t.Headers = h
		return t, ok
	}
}

// codexAsked: the question went through hub's MCP server, in namespace
// mcp__hub.
func codexAsked(t *testing.T, j cliJob) {
	if !strings.Contains(j.log, "[tool] mcp__hub__ask_supervisor") {
		t.Errorf("the worker log lacks the question's tool call:\n%s", j.log)
	}
}
