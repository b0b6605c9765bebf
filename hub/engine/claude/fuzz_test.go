package claude

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/model"
)

// checkedEvents fails the test on an event no stream may produce.
type checkedEvents struct{ t *testing.T }

func (e checkedEvents) Session(id string) {
	if id == "" {
		e.t.Fatal("Session with an empty id")
	}
}
func (e checkedEvents) Said(string)                     {}
func (e checkedEvents) Tool(string, string)             {}
func (e checkedEvents) Command(string, *int, time.Time) {}
func (e checkedEvents) Final(string)                    {}
func (e checkedEvents) Usage(u model.Usage)             { e.usage("Usage", u) }
func (e checkedEvents) Tokens(u model.Usage)            { e.usage("Tokens", u) }
func (e checkedEvents) Failed(msg string) {
	if msg == "" {
		e.t.Fatal("Failed with an empty message")
	}
}

func (e checkedEvents) Cost(usd float64) {
	if math.IsNaN(usd) || usd < 0 || usd >= 1e9 {
		e.t.Fatalf("Cost(%v): a cost must be an amount from 0 to under a billion dollars", usd)
	}
}

func (e checkedEvents) usage(what string, u model.Usage) {
	if u.Input < 0 || u.Output < 0 || u.CachedInput < 0 || u.CachedInput > u.Input {
		e.t.Fatalf("%s(%+v): token counts must not be negative, nor cached ones more than the input", what, u)
	}
}

// FuzzParse feeds arbitrary bytes, line by line, to one parser of Claude
// Code's stream-json, as the run's reader does. It must never panic; the
// events it reports hold token counts that are not negative (cached ones
// part of the input), a cost from 0 to under a billion dollars (so its
// micro-dollars fit an int64), a non-empty session id and failure message;
// the quota signals it keeps have a share used from 0 to 100 and a reset
// time that is unset or from 1970 to 9999 (JSON cannot carry a later one).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"system","subtype":"init","session_id":"s-1","model":"m","tools":["Bash"]}`,
		`{"type":"assistant","session_id":"s-1","message":{"id":"msg_1","content":[{"type":"text","text":"Looking."}],"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":40}}}
{"type":"assistant","session_id":"s-1","message":{"id":"msg_1","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":40}}}
{"type":"user","session_id":"s-1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"ok","is_error":false}]}}
{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s-1","total_cost_usd":0.0123,"usage":{"input_tokens":300,"output_tokens":12},"permission_denials":[{"tool_name":"WebFetch"}]}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"]}`,
		`{"type":"assistant","message":{"id":"a","content":[],"usage":{"input_tokens":100,"output_tokens":1}}}
{"type":"result","subtype":"success","result":"x","usage":{"input_tokens":10,"output_tokens":30,"cache_creation_input_tokens":5}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796257796,"rateLimitType":"five_hour","utilization":0.93,"unifiedWindows":{"five_hour":{"status":"allowed","resetsAt":"1796257796","utilization":"0.5"},"seven_day":{"status":"rejected"}}}}`,
		`{"type":"assistant","message":{"content":[],"usage":{"input_tokens":1}},"api_error_params":{"rate_limit_info":{"status":"rejected","rateLimitType":"seven_day","resetsAt":1e300}}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":3,"utilization":[1]}}`,
		`{"type":"system","subtype":"api_retry","attempt":1}` + "\nnot json\n{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		quota := newQuotaLog(func() time.Time { return readAt })
		parse := newParser(quota)
		ev := checkedEvents{t}
		for line := range bytes.Lines(data) {
			if len(bytes.TrimSpace(line)) > 0 {
				parse(line, ev)
			}
		}
		for _, s := range quota.signals() {
			if math.IsNaN(s.UsedPct) || s.UsedPct < 0 || s.UsedPct > 100 {
				t.Fatalf("quota signal %q: used %v%%, want 0 to 100", s.Name, s.UsedPct)
			}
			if !s.ResetsAt.IsZero() && (s.ResetsAt.Unix() <= 0 || s.ResetsAt.Year() > 9999) {
				t.Fatalf("quota signal %q: resets at %v, want after 1970 and before 10000 (which JSON can carry)", s.Name, s.ResetsAt)
			}
			if s.Name == "" {
				t.Fatal("quota signal without a name")
			}
		}
	})
}
