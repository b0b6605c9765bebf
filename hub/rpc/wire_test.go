package rpc

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/protocol"
)

// wantAnswer is the part of an answer these tests compare.
type wantAnswer struct {
	ID        string // raw JSON
	Code      int64
	MsgPrefix string
}

func answerOf(m wireMsg) wantAnswer {
	a := wantAnswer{ID: string(m.ID)}
	if m.Error != nil {
		a.Code = m.Error.Code
		a.MsgPrefix = m.Error.Message
	}
	return a
}

// cmpPrefix compares answers with MsgPrefix as a prefix of the message.
func cmpPrefix(t *testing.T, want wantAnswer, m wireMsg) {
	t.Helper()
	got := answerOf(m)
	if strings.HasPrefix(got.MsgPrefix, want.MsgPrefix) {
		got.MsgPrefix = want.MsgPrefix
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s\nfull message: %+v", diff, *m.Error)
	}
	if m.Error != nil && (m.Error.Data == nil || m.Error.Data.Hint == "") {
		t.Errorf("error %q has no hint", m.Error.Message)
	}
}

// Bad frames are answered and the connection goes on.
func TestWireRecoverable(t *testing.T) {
	tests := []struct {
		name string
		body string
		want wantAnswer
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, wantAnswer{"null", protocol.CodeParseError, "parse error: "}},
		{"not utf8 json", "\xff\xfe", wantAnswer{"null", protocol.CodeParseError, "parse error: "}},
		{"two values", `{} {}`, wantAnswer{"null", protocol.CodeParseError, "parse error: "}},
		{"empty body", ``, wantAnswer{"null", protocol.CodeParseError, "parse error: "}},
		{"empty array", `[]`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: batch requests are not supported"}},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: batch requests are not supported"}},
		{"number", `3`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: a message must be a JSON object"}},
		{"string", `"hi"`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: a message must be a JSON object"}},
		{"foo", `{"foo":1}`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: a message needs"}},
		{"id only", `{"jsonrpc":"2.0","id":4}`, wantAnswer{"4", protocol.CodeInvalidRequest, "invalid request: a message needs"}},
		{"method not string", `{"jsonrpc":"2.0","id":4,"method":5}`, wantAnswer{"4", protocol.CodeInvalidRequest, `invalid request: "method" must be a string`}},
		{"empty method", `{"jsonrpc":"2.0","id":"x","method":""}`, wantAnswer{`"x"`, protocol.CodeInvalidRequest, `invalid request: "method" must not be empty`}},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"echo"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "id" must be`}},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"echo"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "id" must be`}},
		{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"echo"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "id" must be`}},
		{"huge id", `{"jsonrpc":"2.0","id":18446744073709551615,"method":"echo"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "id" must be`}},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"echo"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}},
		{"method and result", `{"jsonrpc":"2.0","id":2,"method":"echo","result":1}`, wantAnswer{"2", protocol.CodeInvalidRequest, "invalid request: a message cannot have both"}},
		{"result and error", `{"jsonrpc":"2.0","id":2,"result":1,"error":{"code":1,"message":"m"}}`, wantAnswer{"null", protocol.CodeInvalidRequest, "invalid request: a response cannot have both"}},
		{"bad error", `{"jsonrpc":"2.0","id":2,"error":"bad"}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: "error" must be`}},
		{"response without id", `{"jsonrpc":"2.0","result":1}`, wantAnswer{"null", protocol.CodeInvalidRequest, `invalid request: a response must have an "id"`}},
	}
	path := serve(t, mux{"echo": echo}.handle, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, path)
			rc.send(tt.body)
			cmpPrefix(t, tt.want, rc.read())
			rc.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":["still here"]}`)
			m := rc.read()
			if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage("9"), Result: json.RawMessage(`["still here"]`)}, m); diff != "" {
				t.Errorf("next request (-want +got):\n%s", diff)
			}
		})
	}
}

// Messages the server takes without an answer: an error response with a null
// id (the peer could not parse something), and a response to nothing.
func TestWireIgnored(t *testing.T) {
	path := serve(t, mux{"echo": echo}.handle, nil)
	rc := dialRaw(t, path)
	rc.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	rc.send(`{"jsonrpc":"2.0","id":12345,"result":true}`)
	rc.send(`{"jsonrpc":"2.0","method":"some/notification","params":{}}`)
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`)
	if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage("1"), Result: json.RawMessage(`[1]`)}, rc.read()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Frames that cannot be trusted are answered and the connection is closed.
func TestWireFatal(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want wantAnswer
	}{
		{"oversized", "Content-Length: 2048\r\n\r\n{\"jsonrpc\":", wantAnswer{"null", protocol.CodeInvalidRequest, "frame of 2048 bytes exceeds the limit of 1024 bytes; split the request"}},
		{"gigabytes", "Content-Length: 4000000000\r\n\r\n", wantAnswer{"null", protocol.CodeInvalidRequest, "frame of 4000000000 bytes exceeds the limit of 1024 bytes; split the request"}},
		{"garbage header", "hello there\r\n\r\n", wantAnswer{"null", protocol.CodeParseError, "parse error: garbled header line"}},
		{"bare json", `{"jsonrpc":"2.0","id":1,"method":"echo"}` + "\n", wantAnswer{"null", protocol.CodeParseError, "parse error: missing Content-Length header"}},
		{"no length", "Content-Type: application/json\r\n\r\n{}", wantAnswer{"null", protocol.CodeParseError, "parse error: missing Content-Length header"}},
		{"bad length", "Content-Length: twelve\r\n\r\n", wantAnswer{"null", protocol.CodeParseError, "parse error: bad Content-Length"}},
		{"negative length", "Content-Length: -5\r\n\r\n", wantAnswer{"null", protocol.CodeParseError, "parse error: bad Content-Length"}},
		{"conflicting lengths", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", wantAnswer{"null", protocol.CodeParseError, "parse error: two different Content-Length headers"}},
		{"endless header", "X-Long: " + strings.Repeat("a", 5000) + "\r\n\r\n", wantAnswer{"null", protocol.CodeParseError, "parse error: header line longer than"}},
	}
	path := serve(t, mux{"echo": echo}.handle, &Options{MaxFrameBytes: 1024})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, path)
			rc.write(tt.raw)
			cmpPrefix(t, tt.want, rc.read())
			rc.expectClosed()
		})
	}
}

// Frames as vscode-jsonrpc and other LSP clients write them.
func TestWireFraming(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":#,"method":"echo","params":{"s":"héllo"}}`
	n := strconv.Itoa(len(body))
	tests := []struct{ name, raw string }{
		{"vscode", "Content-Length: " + n + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body},
		{"type first", "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: " + n + "\r\n\r\n" + body},
		{"lower case", "content-length: " + n + "\r\n\r\n" + body},
		{"bare newlines", "Content-Length: " + n + "\n\n" + body},
		{"no space", "Content-Length:" + n + "\r\n\r\n" + body},
		{"same length twice", "Content-Length: " + n + "\r\nCONTENT-LENGTH: " + n + "\r\n\r\n" + body},
	}
	path := serve(t, mux{"echo": echo}.handle, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, path)
			// Twice, in one write, to check frame boundaries.
			rc.write(strings.Replace(tt.raw, "#", "1", 1) + strings.Replace(tt.raw, "#", "2", 1))
			got := map[string]wireMsg{}
			for range 2 {
				m := rc.read()
				got[string(m.ID)] = m
			}
			want := map[string]wireMsg{}
			for _, id := range []string{"1", "2"} {
				want[id] = wireMsg{JSONRPC: "2.0", ID: json.RawMessage(id), Result: json.RawMessage(`{"s":"héllo"}`)}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// What the server writes: exactly one Content-Length header.
	// The answer is {"id":1,"result":[],"jsonrpc":"2.0"}.
	rc := dialRaw(t, path)
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[]}`)
	rc.nc.SetReadDeadline(deadline())
	head, err := rc.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	blank, err := rc.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Content-Length: 36\r\n", "\r\n"}, []string{head, blank}); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}
