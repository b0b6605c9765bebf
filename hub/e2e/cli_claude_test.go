package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// lastMessage is the last entry of a request's history.
func lastMessage(r *scripted.Request) scripted.Message {
	if len(r.Messages) == 0 {
		return scripted.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

func hasTool(r *scripted.Request, name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// newCLIWorld is a world whose profile "t" (the default) reaches a model
// played by respond, for an agent CLI worker.
func newCLIWorld(t *testing.T, ctx context.Context, wr wire, respond scripted.Responder) *builtinWorld {
	t.Helper()
	w := newWorld(t)
	b := &builtinWorld{world: w, keyEnv: keyEnvName}
	b.key = newModelKey(t, keyEnvName)
	b.model = &fakeModel{t: t, changed: make(chan struct{}), Server: scripted.New(nil)}
	b.model.SetResponder("", respond)
	if err := b.model.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.model.Close() })
	w.setModelProfile(wr, b.model, keyEnvName)
	w.setModelPrices(1, 1)
	b.c = w.connect(ctx)
	b.repo = sampleRepo(t, "repo")
	return b
}

// claudeWorld is a CLI world for Claude Code, on the Anthropic wire; its
// requests without the Bash tool (side requests) get a short text.
func claudeWorld(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld {
	t.Helper()
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	return newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		if !hasTool(r, "Bash") {
			return scripted.Turn{Text: "ok"}, true
		}
		return respond(r)
	})
}

// claudeBash is a call of Claude Code's Bash tool.
func claudeBash(command string) scripted.ToolCall {
	return scriptCall("Bash", map[string]any{"command": command, "description": "run it"})
}

// answerOf finds the supervisor's answer in the tool result a worker got
// from hub's worker MCP server.
func answerOf(r *scripted.Request) string {
	for _, tr := range lastMessage(r).ToolResults {
		if _, a, ok := strings.Cut(tr.Content, "Supervisor's answer: "); ok {
			return strings.TrimSpace(strings.SplitN(a, "\n", 2)[0])
		}
	}
	return ""
}
