package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/rs/zerolog"
)

// fuzzFrameLimit is the frame limit of the fuzzed streams: small, so that
// the fuzzer reaches it.
const fuzzFrameLimit = 1024

// fuzzConn reads from fixed bytes and keeps what is written.
type fuzzConn struct {
	r *bytes.Reader
	w bytes.Buffer
}

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *fuzzConn) Close() error                { return nil }

func newFuzzStream(data []byte) (*stream, *fuzzConn) {
	c := &fuzzConn{r: bytes.NewReader(data)}
	nop := zerolog.Nop()
	return newStream(c, fuzzFrameLimit, &nop), c
}

// FuzzReadFrame feeds arbitrary bytes to the LSP framing reader. It must
// never panic or hang; a frame it returns is never longer than the limit,
// nor backed by much more memory; every reading step consumes input;
// ReadObject hands on only messages classify accepts, and every answer it
// writes is itself a well-formed frame with a JSON error response in it.
// The input taken as a frame body must round-trip through writeFrame and
// readFrame.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{
		"",
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: 44\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
		"Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}Content-Length: 38\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":7}",
		"content-length:5\n\n[1,2]",
		"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"Content-Length: 99999999999999999999\r\n\r\n",
		"Content-Length: 1025\r\n\r\n",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: +5\r\n\r\n{}",
		"Content-Length: 10\r\n\r\n{\"a\"",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
		"Bad Header\r\n\r\n",
		"Content-Length: 3\r\n\r\nnot",
		"Content-Length: 43\r\n\r\n{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-1,\"message\":\"x\"}}",
		"Content-Length: 51\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"m\",\"params\":null}",
		"X: " + string(bytes.Repeat([]byte("a"), 5000)) + "\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// readFrame on its own: bounded bodies, progress on every step.
		s, c := newFuzzStream(data)
		consumed := func() int { return len(data) - c.r.Len() - s.r.Buffered() }
		for i := 0; ; i++ {
			before := consumed()
			body, err := s.readFrame()
			if err != nil {
				break
			}
			if int64(len(body)) > fuzzFrameLimit {
				t.Fatalf("readFrame returned %d bytes, over the limit of %d", len(body), fuzzFrameLimit)
			}
			if cap(body) > 2*64<<10 {
				t.Fatalf("readFrame allocated %d bytes for a %d-byte frame", cap(body), len(body))
			}
			if consumed() <= before {
				t.Fatalf("readFrame returned a frame without consuming input")
			}
		}
		checkReplies(t, c.w.Bytes())

		// ReadObject as jsonrpc2 calls it.
		s, c = newFuzzStream(data)
		for i := 0; ; i++ {
			var v json.RawMessage
			if err := s.ReadObject(&v); err != nil {
				break
			}
			if k := classify(v).kind; k != kindMessage {
				t.Fatalf("ReadObject handed on %q, which classify puts in kind %d", v, k)
			}
			if i > len(data) {
				t.Fatalf("ReadObject returned more messages (%d) than there are input bytes", i)
			}
		}
		checkReplies(t, c.w.Bytes())

		// The input as a body: written as one frame, read back unchanged.
		s, c = newFuzzStream(nil)
		err := s.writeFrame(data)
		if len(data) > fuzzFrameLimit {
			var tooLarge *frameTooLargeError
			if !errors.As(err, &tooLarge) || c.w.Len() != 0 {
				t.Fatalf("writeFrame of %d bytes: err %v, wrote %d bytes; want a frameTooLargeError and nothing written", len(data), err, c.w.Len())
			}
			return
		}
		if err != nil {
			t.Fatalf("writeFrame: %v", err)
		}
		r, _ := newFuzzStream(c.w.Bytes())
		got, err := r.readFrame()
		if err != nil {
			t.Fatalf("reading back a written frame: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("round trip changed the body: wrote %q, read %q", data, got)
		}
		if _, err := r.readFrame(); err != io.EOF {
			t.Fatalf("after the one frame: err %v, want io.EOF", err)
		}
	})
}

// checkReplies checks that what a stream wrote back is a sequence of
// frames, each a JSON-RPC error response.
func checkReplies(t *testing.T, out []byte) {
	t.Helper()
	r, _ := newFuzzStream(out)
	for {
		body, err := r.readFrame()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the stream wrote a malformed frame (%v): %q", err, out)
		}
		var reply struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &reply); err != nil || reply.JSONRPC != "2.0" || reply.Error == nil || reply.Error.Message == "" || len(reply.ID) == 0 {
			t.Fatalf("the stream wrote a reply that is not a JSON-RPC error response: %q", body)
		}
	}
}
