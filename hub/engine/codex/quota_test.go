package codex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// codexSig is a signal as LocalQuota reports it.
func codexSig(name string, pct float64, resets int64, readAt time.Time, confidence string) protocol.QuotaSignal {
	s := protocol.QuotaSignal{Engine: "codex", Name: name, UsedPct: pct, Exhausted: pct >= 100,
		Source: "codex session rollout", ReadAt: readAt, Confidence: confidence}
	if resets != 0 {
		s.ResetsAt = time.Unix(resets, 0).UTC()
	}
	return s
}

// writeRollout puts a rollout with lines into home's sessions, modified at mod.
func writeRollout(t *testing.T, home, name string, mod time.Time, lines ...string) {
	t.Helper()
	dir := filepath.Join(home, "sessions", "2026", "12", "02")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// tokenCount is a token_count line of a rollout, as Codex 0.169.0 writes it.
func tokenCount(at time.Time, limit, primary, secondary string) string {
	return `{"timestamp":"` + at.Format("2006-01-02T15:04:05.000Z") + `","type":"event_msg","payload":{"type":"token_count","info":null,` +
		`"rate_limits":{"limit_id":"` + limit + `","limit_name":null,"primary":` + primary + `,"secondary":` + secondary +
		`,"credits":null,"plan_type":null,"rate_limit_reached_type":null}}}`
}

func TestLocalQuota(t *testing.T) {
	recorded := func() []string {
		b, err := os.ReadFile(filepath.Join("testdata", "rollout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// When testdata/rollout.jsonl recorded its readings.
	mainAt := time.Date(2026, 12, 2, 23, 35, 53, 720e6, time.UTC)
	otherAt := time.Date(2026, 12, 2, 23, 35, 53, 733e6, time.UTC)
	fromRecorded := func(confidence string) []protocol.QuotaSignal {
		return []protocol.QuotaSignal{
			codexSig("5h", 42.5, 1796257796, mainAt, confidence),
			codexSig("weekly", 12, 1796513396, mainAt, confidence),
			codexSig("codex_other:1h", 99, 1796255152, otherAt, confidence),
		}
	}
	t0 := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, home string)
		now   time.Time
		want  []protocol.QuotaSignal
	}{
		{"no codex home", func(*testing.T, string) {}, t0, nil},
		{"no sessions", func(t *testing.T, home string) {
			if err := os.MkdirAll(home, 0o700); err != nil {
				t.Fatal(err)
			}
		}, t0, nil},
		{"a session that recorded none", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-a.jsonl", t0, `{"type":"event_msg","payload":{"type":"task_started"}}`,
				tokenCount(t0, "codex", "null", "null"))
		}, t0, nil},
		// Codex's own windows and another limit's, each as last recorded;
		// lines it cannot read are passed over.
		{"a recorded session, just now", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-2026-12-02T23-35-53-01a2391d.jsonl", otherAt, recorded()...)
		}, otherAt.Add(time.Minute), fromRecorded(protocol.ConfidenceHigh)},
		{"a recorded session, an hour ago", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-2026-12-02T23-35-53-01a2391d.jsonl", otherAt, recorded()...)
		}, otherAt.Add(time.Hour), fromRecorded(protocol.ConfidenceMedium)},
		{"the newest session that recorded any", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-old.jsonl", t0.Add(-time.Hour),
				tokenCount(t0.Add(-time.Hour), "codex", `{"used_percent":1.0,"window_minutes":300,"resets_at":1}`, "null"))
			writeRollout(t, home, "rollout-b.jsonl", t0.Add(-time.Minute),
				tokenCount(t0.Add(-2*time.Minute), "codex", `{"used_percent":20.0,"window_minutes":300,"resets_at":1796257796}`, "null"),
				tokenCount(t0.Add(-time.Minute), "codex", `{"used_percent":25.0,"window_minutes":300,"resets_at":1796257796}`, "null"),
				tokenCount(t0.Add(-time.Minute), "codex", "null", "null"))
			writeRollout(t, home, "rollout-newest.jsonl", t0, `{"type":"event_msg","payload":{"type":"task_started"}}`)
		}, t0, []protocol.QuotaSignal{codexSig("5h", 25, 1796257796, t0.Add(-time.Minute), protocol.ConfidenceHigh)}},
		{"used up, windows of one length, an older Codex's reset", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-c.jsonl", t0,
				tokenCount(t0.Add(-time.Minute), "", `{"used_percent":100.0,"window_minutes":60,"resets_in_seconds":90}`,
					`{"used_percent":130.0,"window_minutes":60}`))
		}, t0, []protocol.QuotaSignal{
			codexSig("primary", 100, t0.Add(30*time.Second).Unix(), t0.Add(-time.Minute), protocol.ConfidenceHigh),
			codexSig("secondary", 100, 0, t0.Add(-time.Minute), protocol.ConfidenceHigh),
		}},
		// Lines longer than the reader's buffer are passed over, and only
		// the last megabytes are read: the window recorded at the start is not seen.
		{"a long session", func(t *testing.T, home string) {
			long := `{"type":"response_item","payload":{"type":"function_call_output","output":"` + strings.Repeat("x", 100<<10) + `"}}`
			lines := []string{tokenCount(t0.Add(-time.Hour), "codex", `{"used_percent":1.0,"window_minutes":300}`, "null")}
			for range 30 {
				lines = append(lines, long)
			}
			lines = append(lines, tokenCount(t0, "codex", "null", `{"used_percent":7.0,"window_minutes":10080}`))
			writeRollout(t, home, "rollout-e.jsonl", t0, lines...)
		}, t0, []protocol.QuotaSignal{codexSig("weekly", 7, 0, t0, protocol.ConfidenceHigh)}},
		{"a line without its time: the file's", func(t *testing.T, home string) {
			writeRollout(t, home, "rollout-d.jsonl", t0.Add(-time.Hour),
				`{"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":null,"secondary":{"used_percent":3}}}}`)
		}, t0, []protocol.QuotaSignal{codexSig("secondary", 3, 0, t0.Add(-time.Hour), protocol.ConfidenceMedium)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "codex")
			tc.setup(t, home)
			got, err := LocalQuota(home, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("signals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindowName(t *testing.T) {
	for minutes, want := range map[int64]string{300: "5h", 60: "1h", 1440: "daily", 10080: "weekly", 43200: "monthly",
		2880: "2d", 90: "90m"} {
		if got := windowName(minutes); got != want {
			t.Errorf("windowName(%d) = %q, want %q", minutes, got, want)
		}
	}
}

// TestUserHome finds the user's own Codex home as Codex does.
func TestUserHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	if got, err := UserHome(); err != nil || got != filepath.Join(home, ".codex") {
		t.Errorf("UserHome() = %q, %v", got, err)
	}
	t.Setenv("CODEX_HOME", "/elsewhere")
	if got, err := UserHome(); err != nil || got != "/elsewhere" {
		t.Errorf("UserHome() with CODEX_HOME = %q, %v", got, err)
	}
}

// The outcome of a run carries what Codex recorded in the job's CODEX_HOME.
func TestStartReadsQuota(t *testing.T) {
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "codex")
	script := `#!/bin/sh
mkdir -p "$CODEX_HOME/sessions/2026/12/02"
cp "` + td + `/rollout.jsonl" "$CODEX_HOME/sessions/2026/12/02/rollout-2026-12-02T23-35-53-01a2391d.jsonl"
exec cat "` + td + `/edit.jsonl"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := New(Options{ConfigDir: setup(t, bin)})
	r, err := e.Start(context.Background(), spec(t, protocol.StartParams{Task: "fix", Profile: "o"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 {
		t.Fatalf("outcome %+v", o)
	}
	var names []string
	for _, q := range o.Quota {
		names = append(names, q.Name)
		if q.Source != "codex session rollout" || q.Engine != "codex" {
			t.Errorf("signal %+v", q)
		}
	}
	if diff := cmp.Diff([]string{"5h", "weekly", "codex_other:1h"}, names); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
}

// TestRealCodexRecordsRateLimits runs the real Codex against a scripted
// model whose responses carry Codex's rate-limit headers: Codex records
// them in the job's own session rollout (an API key is enough), and the
// outcome carries the latest.
func TestRealCodexRecordsRateLimits(t *testing.T) {
	t.Setenv(PathEnv, hubtest.AgentCLI(t, "codex"))
	now := time.Now().Unix()
	fiveHour, week := now+3600, now+3*86400
	headers := func(used string) map[string]string {
		return map[string]string{
			"x-codex-primary-used-percent":     used,
			"x-codex-primary-window-minutes":   "300",
			"x-codex-primary-reset-at":         strconv.FormatInt(fiveHour, 10),
			"x-codex-secondary-used-percent":   "12",
			"x-codex-secondary-window-minutes": "10080",
			"x-codex-secondary-reset-at":       strconv.FormatInt(week, 10),
		}
	}
	srv := scripted.New(nil)
	srv.SetResponder("", func(r *scripted.Request) (scripted.Turn, bool) {
		for _, m := range r.Messages {
			if len(m.ToolResults) > 0 {
				return scripted.Turn{Text: "Done.", Headers: headers("42.5")}, true
			}
		}
		args, _ := json.Marshal(map[string]string{"cmd": "true"})
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Args: args}}, Headers: headers("40")}, true
	})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := t.TempDir()
	st := profile.Store{Dir: cfg, Environ: func(string) (string, bool) { return "", false }}
	if err := st.Set(profile.Profile{Name: "o", Provider: profile.OpenAI, BaseURL: srv.URL() + "/v1", Model: "m", KeyEnv: "TEST_KEY"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetKey("TEST_KEY", "sk-test-codex-key"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	log := &lockedLog{}
	// Codex will not start without hub's worker MCP server: the hub binary.
	sp := engine.Spec{JobID: "j", Dir: dir, Scratch: t.TempDir(), HubBinary: hubtest.MustBinary(t), Output: log,
		Params: protocol.StartParams{Task: "say done", Profile: "o", AskTimeoutS: 60},
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HUB_JOB=j", "HUB_SOCKET=/nonexistent"}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	r, err := New(Options{ConfigDir: cfg}).Start(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 || o.Summary != "Done." {
		t.Fatalf("outcome %+v\n%s", o, log.String())
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	for _, q := range o.Quota {
		if q.ReadAt.Before(t0.Add(-time.Second)) || q.ReadAt.After(time.Now()) {
			t.Errorf("%s read at %s, not during the run", q.Name, q.ReadAt)
		}
	}
	want := []protocol.QuotaSignal{
		codexSig("5h", 42.5, fiveHour, time.Time{}, protocol.ConfidenceHigh),
		codexSig("weekly", 12, week, time.Time{}, protocol.ConfidenceHigh),
	}
	if diff := cmp.Diff(want, o.Quota, cmp.Transformer("noReadAt", func(q protocol.QuotaSignal) protocol.QuotaSignal {
		q.ReadAt = time.Time{}
		return q
	})); diff != "" {
		t.Errorf("quota (-want +got):\n%s\n%s", diff, log.String())
	}
}

// lockedLog is a worker log its CLI's stdout and stderr may write at once.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
