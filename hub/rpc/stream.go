package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"sync"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

// Header limits. A header line longer than the reader's buffer, or a header
// block longer than maxHeaderBytes, is garbage: the peer is not speaking LSP
// framing.
const (
	readBufferSize = 4096
	maxHeaderBytes = 16 << 10
)

// stream is a jsonrpc2.ObjectStream that does LSP framing:
//
//	Content-Length: N\r\n
//	Content-Type: ...\r\n      (optional, ignored)
//	\r\n
//	<N bytes of JSON>
//
// Header names are case-insensitive and a bare "\n" ends a line too.
//
// ReadObject answers frames it cannot hand to jsonrpc2 itself: a body that is
// not JSON gets -32700 and a message that is not a request or response gets
// -32600, and reading goes on with the next frame. A frame over the size limit
// or a header that cannot be parsed gets an error answer too, and then
// ReadObject fails, which makes jsonrpc2 close the connection. ReadObject is
// called only by jsonrpc2's read loop; WriteObject may be called from any
// goroutine.
type stream struct {
	rwc      io.ReadWriteCloser
	r        *bufio.Reader
	maxFrame int64
	log      *zerolog.Logger

	// writeMu serializes frames: each is written by one Write call.
	writeMu sync.Mutex
}

func newStream(rwc io.ReadWriteCloser, maxFrame int64, log *zerolog.Logger) *stream {
	return &stream{rwc: rwc, r: bufio.NewReaderSize(rwc, readBufferSize), maxFrame: maxFrame, log: log}
}

// frameTooLargeError is returned by WriteObject for a message larger than the
// frame limit; nothing is written.
type frameTooLargeError struct{ size, limit int64 }

func (e *frameTooLargeError) Error() string {
	return fmt.Sprintf("rpc: message of %d bytes exceeds the frame limit of %d bytes", e.size, e.limit)
}

// protocolError is a framing fault after which the connection is closed.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "rpc: " + e.msg }

func (s *stream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeFrame(body)
}

func (s *stream) writeFrame(body []byte) error {
	if int64(len(body)) > s.maxFrame {
		return &frameTooLargeError{size: int64(len(body)), limit: s.maxFrame}
	}
	buf := make([]byte, 0, len(body)+32)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, body...)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err := s.rwc.Write(buf)
	return err
}

func (s *stream) Close() error { return s.rwc.Close() }

func (s *stream) ReadObject(v any) error {
	for {
		body, err := s.readFrame()
		if err != nil {
			return err
		}
		m := classify(body)
		switch m.kind {
		case kindMessage:
			if err := json.Unmarshal(body, v); err != nil {
				// classify should have caught everything jsonrpc2 rejects;
				// this is the safety net.
				resetValue(v)
				if err := s.replyError(nullID, protocol.CodeInvalidRequest, "invalid request: "+err.Error(), hintInvalidRequest); err != nil {
					return err
				}
				continue
			}
			return nil
		case kindPeerError:
			// An error response without an id: the peer could not parse
			// something we sent. There is no call to hand it to.
			s.log.Warn().Int64("code", m.code).Str("message", m.detail).Msg("rpc: peer reported an error about an unidentifiable message")
		case kindParseError:
			s.log.Warn().Str("error", m.detail).Msg("rpc: frame body is not JSON")
			if err := s.replyError(nullID, protocol.CodeParseError, "parse error: "+m.detail, hintParseError); err != nil {
				return err
			}
		case kindInvalid:
			s.log.Warn().Str("error", m.detail).Msg("rpc: frame is not a JSON-RPC message")
			if err := s.replyError(m.id, protocol.CodeInvalidRequest, "invalid request: "+m.detail, hintInvalidRequest); err != nil {
				return err
			}
		}
	}
}

const (
	hintParseError     = "send one JSON-RPC 2.0 message per frame, UTF-8 JSON, with a Content-Length header giving its length in bytes"
	hintInvalidRequest = `send a JSON object with "jsonrpc":"2.0", a string "method", optional "params" and an integer or string "id" (no "id" for a notification)`
	hintFraming        = "frame each message as LSP does: \"Content-Length: N\\r\\n\\r\\n\" then N bytes of JSON"
)

var nullID = json.RawMessage("null")

// fatal answers a framing fault and returns the error that closes the
// connection.
func (s *stream) fatal(code int64, hint, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if err := s.replyError(nullID, code, msg, hint); err != nil {
		return fmt.Errorf("rpc: %s (and answering it failed: %w)", msg, err)
	}
	return &protocolError{msg: msg}
}

// replyError writes an error response with a raw id (null for none, which
// jsonrpc2.ID cannot express).
func (s *stream) replyError(id json.RawMessage, code int64, msg, hint string) error {
	e := Errorf(code, hint, "%s", msg)
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		return err
	}
	return s.writeFrame(body)
}

// readFrame reads one frame's headers and body.
func (s *stream) readFrame() ([]byte, error) {
	length := int64(-1)
	headerBytes := 0
	for first := true; ; first = false {
		if first {
			b, err := s.r.Peek(1)
			if err != nil {
				return nil, err // io.EOF between frames is a clean close
			}
			if b[0] == '{' || b[0] == '[' {
				return nil, s.fatal(protocol.CodeParseError, hintFraming,
					"parse error: missing Content-Length header (the message starts with %q; this endpoint wants LSP framing, not bare JSON)", b[0])
			}
		}
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: header line longer than %d bytes", readBufferSize)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		headerBytes += len(line)
		if headerBytes > maxHeaderBytes {
			return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: headers longer than %d bytes", maxHeaderBytes)
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !isToken(name) {
			return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: garbled header line %q", truncate(line, 80))
		}
		if !bytes.EqualFold(name, []byte("Content-Length")) {
			continue // Content-Type and anything else: ignored
		}
		value = bytes.Trim(value, " \t")
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || !isDigits(value) {
			return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: bad Content-Length %q", truncate(value, 40))
		}
		if length >= 0 && n != length {
			return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: two different Content-Length headers (%d and %d)", length, n)
		}
		length = n
	}
	if length < 0 {
		return nil, s.fatal(protocol.CodeParseError, hintFraming, "parse error: missing Content-Length header")
	}
	if length > s.maxFrame {
		return nil, s.fatal(protocol.CodeInvalidRequest,
			"send smaller messages: pass large content by file path, or split it over several requests",
			"frame of %d bytes exceeds the limit of %d bytes; split the request", length, s.maxFrame)
	}
	// Grow as bytes arrive rather than trusting the header with the
	// allocation.
	var body bytes.Buffer
	body.Grow(int(min(length, 64<<10)))
	if _, err := io.CopyN(&body, s.r, length); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body.Bytes(), nil
}

// isToken reports whether b is a non-empty RFC 9110 token (a header name).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// resetValue zeroes *v after a failed decode, so that a half-decoded message
// does not leak into the next one.
func resetValue(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
}

type msgKind int

const (
	kindMessage    msgKind = iota // a request, notification or response jsonrpc2 can take
	kindParseError                // not JSON
	kindInvalid                   // JSON, but not a JSON-RPC message
	kindPeerError                 // an error response with a null or missing id
)

type classified struct {
	kind   msgKind
	detail string
	id     json.RawMessage // id to answer kindInvalid with
	code   int64           // kindPeerError: the peer's code
}

// classify checks a frame body against what jsonrpc2 accepts, so that
// anything it would choke on (which would close the connection) is answered
// here instead.
func classify(body []byte) classified {
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return classified{kind: kindParseError, detail: err.Error()}
	}
	invalid := func(id json.RawMessage, format string, args ...any) classified {
		return classified{kind: kindInvalid, id: id, detail: fmt.Sprintf(format, args...)}
	}
	switch bytes.TrimLeft(raw, " \t\r\n")[0] {
	case '{':
	case '[':
		return invalid(nullID, "batch requests are not supported; send one message per frame")
	default:
		return invalid(nullID, "a message must be a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return invalid(nullID, "%v", err)
	}
	if v, ok := m["jsonrpc"]; ok {
		var s string
		if json.Unmarshal(v, &s) != nil || s != "2.0" {
			return invalid(nullID, `"jsonrpc" must be "2.0"`)
		}
	}
	idRaw, hasID := m["id"]
	if hasID && isNull(idRaw) {
		hasID = false
	}
	id := nullID
	if hasID {
		if !validID(idRaw) {
			return invalid(nullID, `"id" must be a string or an integer from 0 to %d`, int64(math.MaxInt64))
		}
		id = idRaw
	}
	methodRaw, hasMethod := m["method"]
	_, hasResult := m["result"]
	errRaw, hasError := m["error"]
	if hasError && isNull(errRaw) {
		hasError = false
	}
	switch {
	case hasMethod:
		if hasResult || hasError {
			return invalid(id, `a message cannot have both "method" and "result" or "error"`)
		}
		var method string
		if json.Unmarshal(methodRaw, &method) != nil {
			return invalid(id, `"method" must be a string`)
		}
		if method == "" {
			return invalid(id, `"method" must not be empty`)
		}
		return classified{kind: kindMessage}
	case hasResult || hasError:
		// Never answer a response with its own id: that id is the peer's
		// answer to our request, and an error under it would read as the
		// peer's own request failing.
		if hasResult && hasError {
			return invalid(nullID, `a response cannot have both "result" and "error"`)
		}
		var e jsonrpc2.Error
		if hasError {
			if err := json.Unmarshal(errRaw, &e); err != nil || bytes.TrimLeft(errRaw, " \t\r\n")[0] != '{' {
				return invalid(nullID, `"error" must be an object with an integer "code" and a string "message"`)
			}
		}
		if !hasID {
			if hasError {
				return classified{kind: kindPeerError, code: e.Code, detail: e.Message}
			}
			return invalid(nullID, `a response must have an "id"`)
		}
		return classified{kind: kindMessage}
	default:
		return invalid(id, `a message needs "method" (a request or notification) or "result" or "error" (a response)`)
	}
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// validID reports whether v is an id jsonrpc2 represents faithfully: a string,
// or an integer that fits int64 and is not negative.
func validID(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		return json.Unmarshal(v, &s) == nil
	}
	if !isDigits(v) {
		return false
	}
	_, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil
}
