package shim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestDecodeStrict: the shim refuses params with a key the method does not
// take, as the daemon does.
func TestDecodeStrict(t *testing.T) {
	raw := json.RawMessage(`{"job": "j1", "question": "which?", "kidn": "blocker"}`)
	var p protocol.AskParams
	err := decode(&jsonrpc2.Request{Method: protocol.MethodWorkerAsk, Params: &raw}, &p)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != protocol.CodeInvalidParams {
		t.Fatalf("got %v, want InvalidParams", err)
	}
	if want := `bad params for worker/ask: unknown key "kidn" (did you mean "kind"? the keys are: job, question, context, kind)`; je.Message != want {
		t.Errorf("message\n got %s\nwant %s", je.Message, want)
	}
	var d protocol.ErrorData
	if je.Data == nil || json.Unmarshal(*je.Data, &d) != nil || d.Field != "kidn" || !strings.HasPrefix(d.Hint, `rename "kidn" to "kind"`) {
		t.Errorf("error data %s", *je.Data)
	}
	if p != (protocol.AskParams{}) {
		t.Errorf("decoded %+v despite the unknown key", p)
	}

	raw = json.RawMessage(`{"job": "j1", "note": "half way"}`)
	var pp protocol.ProgressParams
	if err := decode(&jsonrpc2.Request{Method: protocol.MethodWorkerProgress, Params: &raw}, &pp); err != nil || pp.Note != "half way" {
		t.Errorf("known keys: %v, %+v", err, pp)
	}
}
