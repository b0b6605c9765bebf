package daemon

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestDecodeStrict: params with a key the method does not take are refused
// (InvalidParams), naming the key, the keys there are and the closest one,
// with the key's path as the error's field; nothing is decoded then.
func TestDecodeStrict(t *testing.T) {
	req := func(method, params string) *jsonrpc2.Request {
		r := &jsonrpc2.Request{Method: method}
		if params != "" {
			raw := json.RawMessage(params)
			r.Params = &raw
		}
		return r
	}
	for _, tc := range []struct {
		name, method, params string
		v                    any
		msg, field, hint     string // msg "" takes the params
	}{
		{"known keys", protocol.MethodJobStart, `{"task": "t", "verify": "make test", "max_usd": 0}`, &protocol.StartParams{}, "", "", ""},
		{"no params", protocol.MethodJobList, ``, &protocol.ListParams{}, "", "", ""},
		{"null params", protocol.MethodJobList, `null`, &protocol.ListParams{}, "", "", ""},
		{"misspelled", protocol.MethodJobStart, `{"task": "t", "verfy": "false"}`, &protocol.StartParams{},
			`bad params for job/start: unknown key "verfy" (did you mean "verify"? the keys are: task, repo, cwd,`, "verfy",
			`rename "verfy" to "verify": job/start takes only the parameters docs/protocol.md lists`},
		{"in a batch", protocol.MethodStartMany, `{"jobs": [{"task": "a"}, {"task": "b", "verfy": "false"}]}`, &protocol.StartManyParams{},
			`bad params for job/startMany: unknown key "verfy" in jobs[1] (did you mean "verify"?`, "jobs[1].verfy", `rename "verfy" to "verify"`},
		{"far from any key", protocol.MethodJobStatus, `{"id": "abc", "colour": 1}`, &protocol.IDParams{},
			`bad params for job/status: unknown key "colour" (the keys are: id)`, "colour",
			`drop "colour": job/status takes only the parameters docs/protocol.md lists`},
		{"a method that takes none", protocol.MethodSummary, `{"x": 1}`, &protocol.Empty{},
			`bad params for hub/summary: unknown key "x" (it takes no keys)`, "x", `drop "x"`},
		{"wrong type", protocol.MethodJobStart, `{"task": 3}`, &protocol.StartParams{},
			"bad params for job/start: json: cannot unmarshal number", "", "send the parameters documented in docs/protocol.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decode(req(tc.method, tc.params), tc.v)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var je *jsonrpc2.Error
			if !errors.As(err, &je) || je.Code != protocol.CodeInvalidParams {
				t.Fatalf("got %v, want InvalidParams", err)
			}
			if !strings.HasPrefix(je.Message, tc.msg) {
				t.Errorf("message %q, want it to start %q", je.Message, tc.msg)
			}
			var d protocol.ErrorData
			if je.Data == nil || json.Unmarshal(*je.Data, &d) != nil {
				t.Fatalf("no error data in %v", je)
			}
			if d.Field != tc.field || !strings.HasPrefix(d.Hint, tc.hint) {
				t.Errorf("field %q hint %q, want %q and a hint starting %q", d.Field, d.Hint, tc.field, tc.hint)
			}
		})
	}
	// Nothing of a refused batch is decoded.
	var p protocol.StartManyParams
	_ = decode(req(protocol.MethodStartMany, `{"jobs": [{"task": "a"}, {"verfy": ""}]}`), &p)
	if len(p.Jobs) != 0 {
		t.Errorf("a refused batch decoded %d jobs", len(p.Jobs))
	}
}
