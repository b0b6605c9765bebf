//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
)

// TestFallbackAtStart: engine auto picks claude (routing.json puts it
// first), but by the time the job gets its slot the claude binary is gone,
// so claude fails to start. The shim falls back to the next candidate, the
// built-in worker, which does the job; the job's engine, its journal and
// its recorded decision all say what happened.
func TestFallbackAtStart(t *testing.T) {
	ctx := hubtest.Deadline(t, 90*time.Second)
	t.Setenv("HUB_MAX_RUNNING", "1")
	fake := claudeFirst(t)

	u := scripted.Usage{Input: 100, Output: 10}
	const verify = "grep -qx fixed bug.txt"
	b := newBuiltinWorld(t, ctx, wires[1], false, // anthropic: a profile claude can take too
		toolTurn(u, "edit_file", map[string]any{"path": "bug.txt", "old_text": "broken", "new_text": "fixed"}),
		textTurn(u, "Fixed bug.txt."))

	// Hold the only slot so the routed job waits in the queue.
	gate := filepath.Join(t.TempDir(), "gate")
	hold := hubtest.Daemon(t, b.c).JobStart(ctx, protocol.StartParams{
		Task: "hold the slot", Repo: b.repo, Engine: "exec", Exec: gated(gate, "hold.txt")})
	b.until(ctx, hold.ID, func(st protocol.JobStatus) bool { return st.Progress == "waiting for the gate" })

	r := hubtest.Daemon(t, b.c).JobStart(ctx, protocol.StartParams{
		Task: "bug.txt says broken; make it say fixed", Repo: b.repo, Profile: "t", Verify: verify})
	if r.Engine != "claude" {
		ex := hubtest.Daemon(t, b.c).RouteExplain(ctx, protocol.StartParams{Repo: b.repo, Profile: "t"})
		t.Fatalf("auto picked %s; routing.json puts claude first:\n%s", r.Engine, ex.Text)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "auto chose claude") || !strings.Contains(strings.Join(r.Notes, "\n"), "falls back to builtin") {
		t.Errorf("start notes do not say why claude and what next: %q", r.Notes)
	}
	if err := os.Remove(fake); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	st := b.waitEnd(ctx, r.ID)
	if st.State != protocol.StateSucceeded || st.Engine != "builtin" {
		t.Fatalf("job ended %s on %s (%s); want succeeded on builtin after the fallback", st.State, st.Engine, st.Error)
	}
	ev := hubtest.Daemon(t, b.c).JobEvents(ctx, protocol.EventsParams{ID: r.ID})
	found := false
	for _, e := range ev.Events {
		if e.Kind == protocol.EventNote && strings.HasPrefix(e.Text, "fallback: engine claude did not start") && strings.Contains(e.Text, "trying builtin") {
			found = true
		}
	}
	if !found {
		t.Errorf("no fallback note in the journal")
	}
	res := hubtest.Daemon(t, b.c).JobResult(ctx, protocol.ResultParams{ID: r.ID, Evidence: true})
	if res.Evidence == nil || res.Evidence.Engine != "builtin" {
		t.Errorf("evidence names engine %v, want builtin", res.Evidence)
	}
}

// TestRouteReadsQuota: a quota window an engine reported as exhausted
// (stored as a run would store it) keeps engine auto off that engine until
// the window resets, and route explain and engines say so with the source.
func TestRouteReadsQuota(t *testing.T) {
	ctx := hubtest.Deadline(t, 60*time.Second)
	claudeFirst(t)
	b := newBuiltinWorld(t, ctx, wires[1], false, textTurn(scripted.Usage{}, "unused"))

	explain := func() protocol.RouteExplainResult {
		return hubtest.Daemon(t, b.c).RouteExplain(ctx, protocol.StartParams{Repo: b.repo, Profile: "t"})
	}
	if ex := explain(); ex.Decision.Chosen != "claude" {
		t.Fatalf("before any quota signal auto picks %s:\n%s", ex.Decision.Chosen, ex.Text)
	}

	st, err := store.Open(b.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	resets := time.Now().UTC().Add(90 * time.Minute).Truncate(time.Minute)
	if err := st.PutQuota(ctx, []protocol.QuotaSignal{{Engine: "claude", Name: "five_hour", UsedPct: 100, Exhausted: true,
		ResetsAt: resets, Source: "claude rate_limit_event", ReadAt: time.Now().UTC(), Confidence: protocol.ConfidenceHigh}}); err != nil {
		t.Fatal(err)
	}
	ex := explain()
	if ex.Decision.Chosen != "builtin" {
		t.Fatalf("with claude's window exhausted auto picks %s:\n%s", ex.Decision.Chosen, ex.Text)
	}
	// (The reset may fall tomorrow, when the date is given too.)
	for _, want := range []string{"claude    quota five_hour exhausted until ", resets.Format("15:04") + " UTC (claude rate_limit_event, read just now)"} {
		if !strings.Contains(ex.Text, want) {
			t.Errorf("explain does not say %q:\n%s", want, ex.Text)
		}
	}
	eng := hubtest.Daemon(t, b.c).EngineList(ctx, protocol.Empty{})
	for _, e := range eng.Engines {
		if e.Name == "claude" && (!strings.Contains(e.Capacity, "five_hour exhausted, resets ") ||
			!strings.Contains(e.Capacity, resets.Format("15:04")+" UTC (claude rate_limit_event, read just now, high confidence)")) {
			t.Errorf("claude's capacity: %q", e.Capacity)
		}
	}
	// A start names the same reason when the caller insists on claude.
	_, err = b.c.Daemon().JobStart(ctx, protocol.StartParams{Task: "t", Repo: b.repo, Profile: "t", Engine: "claude"})
	if err == nil || !strings.Contains(err.Error(), "quota five_hour exhausted") || !strings.Contains(err.Error(), "engine auto would pick builtin") {
		t.Errorf("start on claude with its quota exhausted: %v", err)
	}
}

// TestFallbackWhenProviderRefuses: engine auto picks claude, the real
// Claude Code starts, and the provider refuses its key (401) before any
// model answers. The run did no work, so the next candidate, the built-in
// worker (whose calls the provider accepts), takes the job and does it.
func TestFallbackWhenProviderRefuses(t *testing.T) {
	ctx := hubtest.Deadline(t, 120*time.Second)
	t.Setenv("HUB_CLAUDE", hubtest.AgentCLI(t, "claude"))
	routing := filepath.Join(t.TempDir(), "routing.json")
	if err := os.WriteFile(routing, []byte(`{"mode":"legacy","order":["claude","builtin"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_ROUTING", routing)
	var claudeCalls atomic.Int32
	b := newCLIWorld(t, ctx, wires[1], func(r *scripted.Request) (scripted.Turn, bool) {
		if strings.HasPrefix(r.Header.Get("User-Agent"), "claude-cli") {
			claudeCalls.Add(1)
			return scripted.Turn{Error: &scripted.HTTPError{Status: 401, Message: "invalid x-api-key"}}, true
		}
		if lastMessage(r).Role == "tool" {
			return scripted.Turn{Text: "Fixed bug.txt."}, true
		}
		return toolTurn(scripted.Usage{Input: 100, Output: 10}, "edit_file",
			map[string]any{"path": "bug.txt", "old_text": "broken", "new_text": "fixed"}), true
	})
	r := hubtest.Daemon(t, b.c).JobStart(ctx, protocol.StartParams{
		Task: "bug.txt says broken; make it say fixed", Repo: b.repo, Profile: "t", Verify: "grep -qx fixed bug.txt"})
	if r.Engine != "claude" {
		t.Fatalf("auto picked %s; routing.json puts claude first", r.Engine)
	}
	st := b.waitEnd(ctx, r.ID)
	if st.State != protocol.StateSucceeded || st.Engine != "builtin" {
		t.Fatalf("job ended %s on %s (%s); want succeeded on builtin after claude's refusal\n%s",
			st.State, st.Engine, st.Error, readFile(t, b.paths.WorkerLog(r.ID)))
	}
	if claudeCalls.Load() == 0 {
		t.Error("Claude Code never called the provider; the fallback did not come from its refusal")
	}
	ev := hubtest.Daemon(t, b.c).JobEvents(ctx, protocol.EventsParams{ID: r.ID})
	var note string
	for _, e := range ev.Events {
		if e.Kind == protocol.EventNote && strings.HasPrefix(e.Text, "fallback: ") {
			note = e.Text
		}
	}
	if !strings.HasPrefix(note, "fallback: engine claude failed before any model answered") || !strings.HasSuffix(note, "; trying builtin") {
		t.Errorf("fallback note %q", note)
	}
	if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
		t.Errorf("bug.txt on the branch: %q", got)
	}
}

// claudeFirst routes legacy, claude first then the built-in worker, with
// a claude that only says its version (so its runs fail at once); it
// returns that claude.
func claudeFirst(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	routing := filepath.Join(dir, "routing.json")
	if err := os.WriteFile(routing, []byte(`{"mode":"legacy","order":["claude","builtin"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_ROUTING", routing)
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'claude 0.0.0 (fake)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_CLAUDE", fake)
	return fake
}
