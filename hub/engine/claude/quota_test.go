package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

var readAt = time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC)

func fixedClock() time.Time { return readAt }

// sig is a signal as the engine reports it, read at readAt.
func sig(name string, pct float64, exhausted bool, resets int64) protocol.QuotaSignal {
	s := protocol.QuotaSignal{Engine: "claude", Name: name, UsedPct: pct, Exhausted: exhausted,
		Source: "claude rate_limit_event", ReadAt: readAt, Confidence: protocol.ConfidenceHigh}
	if resets != 0 {
		s.ResetsAt = time.Unix(resets, 0).UTC()
	}
	return s
}

// TestParseRateLimitEvent reads the rate_limit_events Claude Code 2.1.328
// wrote against hub's scripted model server sending
// anthropic-ratelimit-unified-* headers (see TestRealClaudeCodeRateLimits),
// and variants it might write one day.
func TestParseRateLimitEvent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		line  string
		known bool // the parser read the line
		want  []protocol.QuotaSignal
	}{
		{"past the five-hour warning",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796257709,"rateLimitType":"five_hour","utilization":0.85,"isUsingOverage":false,"surpassedThreshold":0.75,"unifiedWindows":{"five_hour":{"utilization":0.85,"resetsAt":1796257709,"status":"allowed_warning","surpassedThreshold":0.75},"seven_day":{"utilization":0.3,"resetsAt":1796513309,"status":"allowed"}}},"uuid":"ffc3c10c-93a2-4e99-b6aa-2e0613802a0c","session_id":"s"}`,
			true, []protocol.QuotaSignal{sig("five_hour", 85, false, 1796257709), sig("seven_day", 30, false, 1796513309)}},
		{"five-hour limit reached",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796257997,"rateLimitType":"five_hour","isUsingOverage":false,"unifiedWindows":{"five_hour":{"utilization":1,"resetsAt":1796257997,"status":"rejected","surpassedThreshold":1},"seven_day":{"utilization":0.3,"resetsAt":1796513597,"status":"allowed"}}},"uuid":"8a723ded-af5b-4cb4-850a-787960ea70fe","session_id":"s"}`,
			true, []protocol.QuotaSignal{sig("five_hour", 100, true, 1796257997), sig("seven_day", 30, false, 1796513597)}},
		{"allowed, below every warning",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796257998,"isUsingOverage":false,"unifiedWindows":{"five_hour":{"utilization":0.2,"resetsAt":1796257998,"status":"allowed"},"seven_day":{"utilization":0.3,"resetsAt":1796513598,"status":"allowed"}}},"uuid":"25405857-7760-42e1-82fd-2b44f3bc6e96","session_id":"s"}`,
			true, []protocol.QuotaSignal{sig("five_hour", 20, false, 1796257998), sig("seven_day", 30, false, 1796513598)}},
		{"the refused answer's own record",
			`{"type":"assistant","message":{"id":"m1","model":"<synthetic>","content":[{"type":"text","text":"You've hit your 5-hour limit"}]},"session_id":"s","error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error":"usage_limit_reached","api_error_params":{"rate_limit_info":{"status":"rejected","resetsAt":1796257997,"rateLimitType":"five_hour","isUsingOverage":false}},"api_error_type":"rate_limit_error"}`,
			true, []protocol.QuotaSignal{sig("five_hour", 100, true, 1796257997)}},
		{"a binding limit without windows",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796257997,"rateLimitType":"seven_day_opus"}}`,
			true, []protocol.QuotaSignal{sig("seven_day_opus", 100, true, 1796257997)}},
		{"past a window's cap",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","unifiedWindows":{"five_hour":{"utilization":1.3,"resetsAt":1796257709}}}}`,
			true, []protocol.QuotaSignal{sig("five_hour", 100, true, 1796257709)}},
		{"new values, new fields, numbers as strings, a window it cannot read",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_later","rateLimitType":"seven_day_sonnet","utilization":"0.5","resetsAt":"1796257709","grace":{"x":1},"unifiedWindows":{"five_hour":{"utilization":0.1,"resetsAt":1796257709,"status":"paused"},"weird":{"utilization":"high"},"bad":7}}}`,
			true, []protocol.QuotaSignal{sig("five_hour", 10, false, 1796257709), sig("seven_day_sonnet", 50, false, 1796257709)}},
		{"a member of an unexpected type",
			`{"type":"rate_limit_event","rate_limit_info":{"status":1,"rateLimitType":"five_hour","utilization":0.5,"unifiedWindows":[]}}`,
			true, []protocol.QuotaSignal{sig("five_hour", 50, false, 0)}},
		{"nothing it can weigh",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","utilization":null}}`, true, nil},
		{"no info", `{"type":"rate_limit_event","session_id":"s"}`, false, nil},
		{"info not an object", `{"type":"rate_limit_event","rate_limit_info":"five_hour"}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuotaLog(fixedClock)
			if known := newParser(q)([]byte(tc.line), &events{}); known != tc.known {
				t.Errorf("known = %v, want %v", known, tc.known)
			}
			if diff := cmp.Diff(tc.want, q.signals()); diff != "" {
				t.Errorf("signals (-want +got):\n%s", diff)
			}
		})
	}
}

// The outcome carries the newest signal of each window, newest last, on
// top of what the run itself reported.
func TestOutcomeQuota(t *testing.T) {
	q := newQuotaLog(fixedClock)
	parse := newParser(q)
	for _, l := range []string{
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","unifiedWindows":{"five_hour":{"utilization":0.2,"resetsAt":1},"seven_day":{"utilization":0.3,"resetsAt":2}}}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","rateLimitType":"five_hour","resetsAt":3}}`,
	} {
		if !parse([]byte(l), &events{}) {
			t.Fatalf("not read: %s", l)
		}
	}
	other := protocol.QuotaSignal{Engine: "claude", Name: "monthly_cap", Source: "hub ledger"}
	o := run{Run: doneRun{engine.Outcome{Quota: []protocol.QuotaSignal{other}}}, quota: q}.Wait()
	want := []protocol.QuotaSignal{other, sig("seven_day", 30, false, 2), sig("five_hour", 100, true, 3)}
	if diff := cmp.Diff(want, o.Quota); diff != "" {
		t.Errorf("outcome quota (-want +got):\n%s", diff)
	}
}

// doneRun is a run that has ended with its outcome.
type doneRun struct{ o engine.Outcome }

func (r doneRun) PGID() int            { return 0 }
func (r doneRun) Wait() engine.Outcome { return r.o }
func (r doneRun) Stop(time.Duration)   {}
func (r doneRun) Heartbeat() bool      { return false }

// unifiedHeaders are the anthropic-ratelimit-unified-* headers of a
// subscription past its five-hour warning.
func unifiedHeaders(fiveHourReset, weekReset int64) map[string]string {
	return map[string]string{
		"anthropic-ratelimit-unified-status":                 "allowed_warning",
		"anthropic-ratelimit-unified-reset":                  strconv.FormatInt(fiveHourReset, 10),
		"anthropic-ratelimit-unified-representative-claim":   "five_hour",
		"anthropic-ratelimit-unified-5h-utilization":         "0.85",
		"anthropic-ratelimit-unified-5h-reset":               strconv.FormatInt(fiveHourReset, 10),
		"anthropic-ratelimit-unified-5h-status":              "allowed_warning",
		"anthropic-ratelimit-unified-5h-surpassed-threshold": "0.75",
		"anthropic-ratelimit-unified-7d-utilization":         "0.3",
		"anthropic-ratelimit-unified-7d-reset":               strconv.FormatInt(weekReset, 10),
		"anthropic-ratelimit-unified-7d-status":              "allowed",
	}
}

// TestRealClaudeCodeRateLimits pins what the real Claude Code does with a
// model endpoint's anthropic-ratelimit-unified-* headers. Under an API key,
// which is how the engine runs it, it reads none of them and reports no
// quota. With a Claude gateway token (a bearer JWT whose audience is
// claude-gateway; Claude Code reads the claim without checking the
// signature) it reads them and writes rate_limit_events, which the parser
// turns into the signals the router weighs.
func TestRealClaudeCodeRateLimits(t *testing.T) {
	bin := hubtest.AgentCLI(t, "claude")
	now := time.Now().Unix()
	fiveHour, week := now+3600, now+3*86400
	srv := scripted.New(nil)
	srv.SetResponder("", func(r *scripted.Request) (scripted.Turn, bool) {
		return scripted.Turn{Text: "Done.", Headers: unifiedHeaders(fiveHour, week)}, true
	})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	t.Run("api key", func(t *testing.T) {
		t.Setenv(PathEnv, bin)
		cfg := t.TempDir()
		st := profile.Store{Dir: cfg, Environ: func(string) (string, bool) { return "", false }}
		if err := st.Set(profile.Profile{Name: "a", Provider: profile.Anthropic, BaseURL: srv.URL() + "/v1", Model: "claude-sonnet-4-5", KeyEnv: "TEST_KEY"}); err != nil {
			t.Fatal(err)
		}
		if err := st.SetKey("TEST_KEY", "sk-test-engine-key"); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		log := &hubtest.Buffer{}
		spec := engine.Spec{JobID: "j", Dir: dir, Scratch: t.TempDir(), HubBinary: "/bin/true", Mailbox: &hubtest.Mailbox{}, Output: log,
			Params: protocol.StartParams{Task: "say done", Profile: "a", AskTimeoutS: 60},
			Env:    []string{"PATH=" + os.Getenv("PATH"), "HUB_JOB=j", "HUB_SOCKET=/nonexistent"}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := New(Options{ConfigDir: cfg}).Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		o := r.Wait()
		if o.ExitCode != 0 || o.Summary != "Done." {
			t.Fatalf("outcome %+v\n%s", o, log.String())
		}
		if len(o.Quota) != 0 || strings.Contains(log.String(), "rate_limit") {
			t.Errorf("Claude Code now reports rate limits under an API key (quota %+v); say so in quota.go:\n%s", o.Quota, log.String())
		}
	})

	t.Run("gateway token", func(t *testing.T) {
		enc := base64.RawURLEncoding
		token := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
			enc.EncodeToString([]byte(`{"aud":"claude-gateway","exp":`+strconv.FormatInt(now+3600, 10)+`}`)) + ".unsigned"
		home := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-p", "say done", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5")
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_AUTH_TOKEN=" + token, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		q := newQuotaLog(fixedClock)
		parse := newParser(q)
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var e struct{ Type string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "rate_limit_event" {
				n++
				if !parse(sc.Bytes(), &events{}) {
					t.Errorf("the parser does not read %s", sc.Bytes())
				}
			}
		}
		if n == 0 {
			t.Fatalf("Claude Code wrote no rate_limit_event:\n%s", out)
		}
		want := []protocol.QuotaSignal{sig("five_hour", 85, false, fiveHour), sig("seven_day", 30, false, week)}
		if diff := cmp.Diff(want, q.signals()); diff != "" {
			t.Errorf("signals (-want +got):\n%s\n%s", diff, out)
		}
	})
}
