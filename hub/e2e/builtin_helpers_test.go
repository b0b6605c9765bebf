package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The builtin engine's end-to-end tests run the real daemon, shims and hub
// binary; the model is a scripted server in the test process on loopback,
// reached by the shim over real HTTP.

// modelName is the model every test profile names (and the script is set for).
const modelName = "m"

// wire is one provider's wire format, as a profile names it.
type wire struct {
	provider string
	// key returns the credential the client sent, as the provider expects it.
	key func(h http.Header) string
}

var wires = []wire{
	{provider: profile.OpenAI, key: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") }},
	{provider: profile.Anthropic, key: func(h http.Header) string { return h.Get("X-Api-Key") }},
}

// openaiWire is the wire of the tests that need only one.
var openaiWire = wires[0]

// eachWire runs f once per wire, as subtests named after the provider.
func eachWire(t *testing.T, f func(t *testing.T, wr wire)) {
	for _, wr := range wires {
		t.Run(wr.provider, func(t *testing.T) { f(t, wr) })
	}
}

// fakeModel is a scripted model server that counts the turns it handed out.
type fakeModel struct {
	*scripted.Server
	t *testing.T

	mu      sync.Mutex
	taken   int
	changed chan struct{}
}

// startModel serves turns on loopback until the test ends.
func startModel(t *testing.T, turns ...scripted.Turn) *fakeModel {
	t.Helper()
	m := &fakeModel{t: t, changed: make(chan struct{})}
	m.Server = scripted.New(&scripted.Options{Logf: func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if !strings.Contains(line, ": turn ") {
			return
		}
		m.mu.Lock()
		m.taken++
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	}})
	if err := m.SetScript(modelName, &scripted.Script{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// waitTurns waits until the server has handed out n turns (the n-th request
// arrived and is being answered, possibly still in its delay).
func (m *fakeModel) waitTurns(ctx context.Context, n int) {
	m.t.Helper()
	for {
		m.mu.Lock()
		taken, ch := m.taken, m.changed
		m.mu.Unlock()
		if taken >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			m.t.Fatalf("the model got %d requests, want %d before the deadline", taken, n)
		}
	}
}

// request returns the i-th request (0-based), failing the test when there is none.
func (m *fakeModel) request(i int) scripted.Request {
	m.t.Helper()
	reqs := m.Requests()
	if i >= len(reqs) {
		m.t.Fatalf("the model got %d requests; wanted request %d", len(reqs), i+1)
	}
	return reqs[i]
}

// lastToolResults joins the tool results of a request's last message, which
// must be the tool message answering the previous turn.
func lastToolResults(t *testing.T, r scripted.Request) string {
	t.Helper()
	if len(r.Messages) == 0 {
		t.Fatal("request has no messages")
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != "tool" {
		t.Fatalf("the request's last message is %s, not a tool result: %q", last.Role, last.Text)
	}
	var parts []string
	for _, tr := range last.ToolResults {
		parts = append(parts, tr.Content)
	}
	return strings.Join(parts, "\n")
}

// scriptCall builds a scripted tool call.
func scriptCall(name string, args map[string]any) scripted.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return scripted.ToolCall{Name: name, Args: b}
}

// toolTurn is a turn that makes one tool call, with the usage given.
func toolTurn(u scripted.Usage, name string, args map[string]any) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{scriptCall(name, args)}, Usage: &u}
}

// textTurn is a final answer.
func textTurn(u scripted.Usage, text string) scripted.Turn {
	return scripted.Turn{Text: text, Usage: &u}
}

// configDir is hub's config directory in w (HOME/.config/hub).
func (w *world) hubConfigDir() string { return filepath.Join(w.env.UserDir, ".config", "hub") }

// setModelProfile writes profile "t" (the default) for provider at the model's
// address, reading its key from keyEnv.
func (w *world) setModelProfile(wr wire, m *fakeModel, keyEnv string) {
	w.t.Helper()
	st := profile.Store{Dir: w.hubConfigDir()}
	if err := st.Set(profile.Profile{Name: "t", Provider: wr.provider, BaseURL: m.URL() + "/v1", Model: modelName, KeyEnv: keyEnv}); err != nil {
		w.t.Fatal(err)
	}
}

// setModelPrices writes prices.json: model → dollars per million input and output tokens.
func (w *world) setModelPrices(in, out float64) {
	w.t.Helper()
	b, _ := json.Marshal(map[string]any{"models": map[string]any{modelName: map[string]float64{"input": in, "output": out}}})
	if err := os.MkdirAll(w.hubConfigDir(), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.hubConfigDir(), "prices.json"), b, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// newModelKey makes a fresh fake API key and sets it in the test's environment
// under name, so the daemon (started by the next connect) and its shims
// inherit it. It must run before the first connect.
func newModelKey(t *testing.T, name string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	key := "sk-e2e-" + hex.EncodeToString(b[:])
	t.Setenv(name, key)
	return key
}

// builtinWorld is a world with a scripted model behind profile "t", its key
// in the daemon's environment, and a connected client.
type builtinWorld struct {
	*world
	c      *client.Client
	model  *fakeModel
	key    string
	keyEnv string
	repo   string
}

// keyEnvName is the variable profile "t" reads its key from.
const keyEnvName = "HUB_E2E_MODEL_KEY"

func newBuiltinWorld(t *testing.T, ctx context.Context, wr wire, priced bool, turns ...scripted.Turn) *builtinWorld {
	t.Helper()
	w := newWorld(t)
	b := &builtinWorld{world: w, keyEnv: keyEnvName}
	b.key = newModelKey(t, keyEnvName)
	b.model = startModel(t, turns...)
	w.setModelProfile(wr, b.model, keyEnvName)
	if priced {
		w.setModelPrices(1, 1) // a micro-dollar a token
	}
	b.c = w.connect(ctx)
	b.repo = sampleRepo(t, "repo")
	return b
}

// start starts a builtin job on the world's repo with profile "t".
func (b *builtinWorld) start(ctx context.Context, p protocol.StartParams) protocol.StartResult {
	b.t.Helper()
	if p.Repo == "" {
		p.Repo = b.repo
	}
	p.Engine, p.Profile = "builtin", "t"
	r := hubtest.Daemon(b.t, b.c).JobStart(ctx, p)
	if r.Engine != "builtin" {
		b.t.Fatalf("job %s runs on %s", r.ID, r.Engine)
	}
	return r
}

// waitEnd waits until the job has ended and returns its status.
func (b *builtinWorld) waitEnd(ctx context.Context, id string) protocol.JobStatus {
	b.t.Helper()
	var since int64
	for {
		// As long as the test's deadline allows (a loaded machine starts an
		// agent CLI slowly), not a fixed 30 s of its own.
		limit := 30.0
		if dl, ok := ctx.Deadline(); ok {
			limit = max(1, time.Until(dl).Seconds()-2)
		}
		wr := hubtest.Daemon(b.t, b.c).JobWait(ctx, protocol.WaitParams{IDs: []string{id}, TimeoutS: limit, Since: since})
		if len(wr.Jobs) != 1 {
			b.t.Fatalf("wait: %+v", wr)
		}
		if st := wr.Jobs[0]; st.State.Terminal() {
			return st
		} else if !wr.Done {
			b.t.Fatalf("job %s did not end: %+v", id, st)
		}
		since = wr.Cursor
	}
}

// evidence returns the job's result with its evidence.
func (b *builtinWorld) evidence(ctx context.Context, id string) protocol.ResultResult {
	b.t.Helper()
	rr := hubtest.Daemon(b.t, b.c).JobResult(ctx, protocol.ResultParams{ID: id, Evidence: true})
	if rr.Evidence == nil {
		b.t.Fatalf("job %s has no evidence", id)
	}
	return rr
}

// events returns the job's journal.
func (b *builtinWorld) events(ctx context.Context, id string) []protocol.Event {
	b.t.Helper()
	return hubtest.Daemon(b.t, b.c).JobEvents(ctx, protocol.EventsParams{ID: id, Limit: 1000}).Events
}

// rubricCriterion finds a rubric criterion by kind.
func rubricCriterion(r *protocol.Rubric, kind string) *protocol.RubricCriterion {
	if r == nil {
		return nil
	}
	for i := range r.Criteria {
		if r.Criteria[i].Kind == kind {
			return &r.Criteria[i]
		}
	}
	return nil
}

// exitText shows an optional exit code.
func exitText(code *int) string {
	if code == nil {
		return "none"
	}
	return fmt.Sprint(*code)
}
