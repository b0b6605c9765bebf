package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
)

type point struct {
	X int    `json:"x"`
	Y string `json:"y"`
}

func TestCallRoundTrip(t *testing.T) {
	path := serve(t, mux{"echo": echo}.handle, nil)
	c := dial(t, path, nil)
	ctx := testCtx(t)

	want := point{X: 3, Y: "three"}
	var got point
	if err := c.Call(ctx, "echo", want, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
	// A nil result is fine, and so are many calls in a row on one Conn.
	for i := range 20 {
		if err := c.Call(ctx, "echo", point{X: i}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestErrors(t *testing.T) {
	h := mux{
		"notFound": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			return nil, Errorf(protocol.CodeNotFound, "list jobs first", "no job %s", "j-1")
		},
		"wrapped": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			return nil, fmt.Errorf("context: %w", Errorf(protocol.CodeWrongState, "wait", "job is done"))
		},
		"plain": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			return nil, errors.New("disk on fire")
		},
		"panics": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			panic("boom")
		},
		"badResult": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			return func() {}, nil
		},
	}.handle
	path := serve(t, h, nil)
	c := dial(t, path, nil)
	ctx := testCtx(t)

	type got struct {
		Code    int64
		Message string
		Hint    string
	}
	tests := []struct {
		method string
		want   got
	}{
		{"notFound", got{protocol.CodeNotFound, "no job j-1", "list jobs first"}},
		{"wrapped", got{protocol.CodeWrongState, "job is done", "wait"}},
		{"plain", got{protocol.CodeInternal, "disk on fire", "this is an unexpected failure in hub; the daemon log may say more"}},
		{"panics", got{protocol.CodeInternal, "internal error: the handler of panics panicked: boom", "this is a bug in hub; the daemon log has the stack trace"}},
		{"nope", got{protocol.CodeMethodNotFound, `method "nope" not found`, HintOf(MethodNotFound("x"))}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			err := c.Call(ctx, tt.method, nil, nil)
			var je *jsonrpc2.Error
			if !errors.As(err, &je) {
				t.Fatalf("Call: %v (%T), want a *jsonrpc2.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, got{je.Code, je.Message, HintOf(err)}); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}

	err := c.Call(ctx, "badResult", nil, nil)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != protocol.CodeInternal || !strings.Contains(je.Message, "encode the result") {
		t.Errorf("badResult: %v", err)
	}
	// The connection still serves after all that.
	if err := c.Call(ctx, "echo", 1, nil); err == nil || HintOf(err) == "" {
		t.Errorf("echo on this server should be not found with a hint, got %v", err)
	}
}

func TestHintOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("x"), ""},
		{"no data", &jsonrpc2.Error{Code: 1, Message: "m"}, ""},
		{"bad data", func() error { e := &jsonrpc2.Error{}; e.SetError([]int{1}); return e }(), ""},
		{"hint", Errorf(1, "do this", "m"), "do this"},
		{"wrapped", fmt.Errorf("w: %w", Errorf(1, "do that", "m")), "do that"},
	}
	for _, tt := range tests {
		if got := HintOf(tt.err); got != tt.want {
			t.Errorf("HintOf(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	e := Errorf(protocol.CodeRefused, "h", "n=%d", 4)
	var d protocol.ErrorData
	if err := json.Unmarshal(*e.Data, &d); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(protocol.ErrorData{Hint: "h"}, d); diff != "" || e.Message != "n=4" || e.Code != protocol.CodeRefused {
		t.Errorf("Errorf = %+v, data diff %s", e, diff)
	}
}

// A request that blocks until a second request arrives must not deadlock
// the connection.
func TestRequestWaitsForAnother(t *testing.T) {
	second := make(chan struct{})
	h := mux{
		"first": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
			select {
			case <-second:
				return "first done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"second": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			close(second)
			return "second done", nil
		},
	}.handle
	path := serve(t, h, nil)
	c := dial(t, path, nil)
	ctx := testCtx(t)

	firstDone := make(chan error, 1)
	var firstRes string
	go func() { firstDone <- c.Call(ctx, "first", nil, &firstRes) }()
	var secondRes string
	if err := c.Call(ctx, "second", nil, &secondRes); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, firstDone, "first"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first done", "second done"}, []string{firstRes, secondRes}); diff != "" {
		t.Error(diff)
	}
}

// A handler may call back to the client on the same connection, and the
// client's handler answers.
func TestCallback(t *testing.T) {
	h := mux{
		"ask": func(ctx context.Context, c *Conn, req *jsonrpc2.Request) (any, error) {
			var q string
			json.Unmarshal(*req.Params, &q)
			var ans string
			if err := c.Call(ctx, "client/confirm", q, &ans); err != nil {
				return nil, err
			}
			if err := c.Notify(ctx, "client/note", "asked"); err != nil {
				return nil, err
			}
			return "client said " + ans, nil
		},
		"askPure": func(ctx context.Context, c *Conn, _ *jsonrpc2.Request) (any, error) {
			err := c.Call(ctx, "client/confirm", "?", nil)
			var je *jsonrpc2.Error
			if errors.As(err, &je) {
				return je.Code, nil
			}
			return nil, fmt.Errorf("want an rpc error, got %v", err)
		},
	}.handle
	path := serve(t, h, nil)
	notes := make(chan string, 1)
	client := dial(t, path, mux{
		"client/confirm": func(_ context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
			var q string
			json.Unmarshal(*req.Params, &q)
			return "yes to " + q, nil
		},
		"client/note": func(_ context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
			var s string
			json.Unmarshal(*req.Params, &s)
			notes <- s
			return nil, nil
		},
	}.handle)
	ctx := testCtx(t)

	var got string
	if err := client.Call(ctx, "ask", "apply?", &got); err != nil {
		t.Fatal(err)
	}
	if want := "client said yes to apply?"; got != want {
		t.Errorf("ask = %q, want %q", got, want)
	}
	if got := recv(t, notes, "client/note"); got != "asked" {
		t.Errorf("note = %q", got)
	}

	// A pure client (nil handler) answers every request with -32601.
	pure := dial(t, path, nil)
	var code int64
	if err := pure.Call(ctx, "askPure", nil, &code); err != nil {
		t.Fatal(err)
	}
	if code != protocol.CodeMethodNotFound {
		t.Errorf("pure client answered code %d, want %d", code, protocol.CodeMethodNotFound)
	}
}

func TestConcurrencyBound(t *testing.T) {
	var running, peak atomic.Int32
	started := make(chan int, 10)
	release := make(chan struct{})
	barrier := make(chan struct{}, 1)
	h := mux{
		"block": func(ctx context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			started <- int(req.ID.Num)
			defer running.Add(-1)
			select {
			case <-release:
				return req.ID.Num, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"barrier": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			barrier <- struct{}{}
			return nil, nil
		},
	}.handle
	path := serve(t, h, &Options{MaxConcurrent: 2})
	rc := dialRaw(t, path)

	// Five requests and then a notification, in one write: when the
	// notification reaches the handler, all five have been dispatched.
	var b strings.Builder
	for i := 1; i <= 5; i++ {
		b.WriteString(frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`, i)))
	}
	b.WriteString(frame(`{"jsonrpc":"2.0","method":"barrier"}`))
	rc.write(b.String())

	recv(t, started, "first start")
	recv(t, started, "second start")
	recv(t, barrier, "barrier notification")
	select {
	case id := <-started:
		t.Fatalf("request %d started while two were running", id)
	default:
	}
	if n := running.Load(); n != 2 {
		t.Fatalf("running = %d, want 2", n)
	}

	var answered []int
	for i := 0; i < 5; i++ {
		release <- struct{}{}
		m := rc.read()
		if m.Error != nil {
			t.Fatalf("answer: %+v", m.Error)
		}
		var id int
		json.Unmarshal(m.ID, &id)
		answered = append(answered, id)
		if i < 3 {
			recv(t, started, "a waiting request to start")
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency = %d, want 2", p)
	}
	if len(answered) != 5 {
		t.Errorf("answered %v", answered)
	}
}

func TestBusy(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := mux{"block": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "ok", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}.handle
	path := serve(t, h, &Options{MaxConcurrent: 1, MaxPending: 1})
	rc := dialRaw(t, path)
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	recv(t, started, "request 1")
	rc.send(`{"jsonrpc":"2.0","id":2,"method":"block"}`) // waits
	rc.send(`{"jsonrpc":"2.0","id":3,"method":"block"}`) // one too many

	m := rc.read()
	if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage("3"), Error: &wireError{
		Code: protocol.CodeUnavailable, Message: "server busy; retry",
		Data: &protocol.ErrorData{Hint: "wait for some of your in-flight requests to finish, then send it again"},
	}}, m); diff != "" {
		t.Fatalf("busy answer (-want +got):\n%s", diff)
	}
	close(release)
	ids := map[string]bool{}
	for range 2 {
		m := rc.read()
		if m.Error != nil {
			t.Fatalf("answer: %+v", m.Error)
		}
		ids[string(m.ID)] = true
	}
	if diff := cmp.Diff(map[string]bool{"1": true, "2": true}, ids); diff != "" {
		t.Error(diff)
	}
}

func TestNotificationOrder(t *testing.T) {
	const n = 1000
	var (
		mu  sync.Mutex
		got []int
	)
	all := make(chan struct{})
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h := mux{
		"note": func(_ context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
			var p struct{ I int }
			if err := json.Unmarshal(*req.Params, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			got = append(got, p.I)
			if len(got) == n {
				close(all)
			}
			mu.Unlock()
			return nil, nil
		},
		"block": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
			started <- struct{}{}
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}.handle
	path := serve(t, h, nil)
	c := dial(t, path, nil)
	ctx := testCtx(t)

	blockDone := make(chan error, 1)
	go func() { blockDone <- c.Call(ctx, "block", nil, nil) }()
	recv(t, started, "the blocking request")
	for i := range n {
		if err := c.Notify(ctx, "note", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, all, "all notifications")
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	mu.Lock()
	diff := cmp.Diff(want, got)
	mu.Unlock()
	if diff != "" {
		t.Errorf("notification order (-want +got):\n%s", diff)
	}
	select {
	case err := <-blockDone:
		t.Fatalf("blocking request returned early: %v", err)
	default:
	}
	close(release)
	if err := recv(t, blockDone, "the blocking request's answer"); err != nil {
		t.Fatal(err)
	}
}

// A slow notification handler does not stop requests from being read and
// answered.
func TestSlowNotificationDoesNotBlockRequests(t *testing.T) {
	unblock := make(chan struct{})
	noteStarted := make(chan struct{}, 1)
	noteDone := make(chan struct{}, 1)
	h := mux{
		"slow": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
			noteStarted <- struct{}{}
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			noteDone <- struct{}{}
			return nil, nil
		},
		"unblock": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
			close(unblock)
			return "ok", nil
		},
	}.handle
	path := serve(t, h, nil)
	c := dial(t, path, nil)
	ctx := testCtx(t)
	if err := c.Notify(ctx, "slow", nil); err != nil {
		t.Fatal(err)
	}
	recv(t, noteStarted, "the slow notification")
	if err := c.Call(ctx, "unblock", nil, nil); err != nil {
		t.Fatal(err)
	}
	recv(t, noteDone, "the slow notification to finish")
}

func TestCancelByContext(t *testing.T) {
	started := make(chan struct{}, 1)
	observed := make(chan error, 1)
	h := mux{"wait": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		observed <- context.Cause(ctx)
		return nil, ctx.Err()
	}}.handle
	path := serve(t, h, nil)
	c := dial(t, path, nil)

	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "wait", nil, nil) }()
	recv(t, started, "the handler")
	cancel()
	if err := recv(t, done, "Call to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, want context.Canceled", err)
	}
	if cause := recv(t, observed, "the handler to see the cancel"); !errors.Is(cause, errCancelledByPeer) {
		t.Errorf("handler ctx cause = %v, want %v", cause, errCancelledByPeer)
	}
	// Already cancelled: nothing is sent.
	if err := c.Call(ctx, "wait", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Call with a done ctx = %v", err)
	}
	// The connection still works.
	if err := c.Call(testCtx(t), "other", nil, nil); HintOf(err) == "" {
		t.Errorf("Call after cancel: %v", err)
	}
}

func TestCancelOnWire(t *testing.T) {
	started := make(chan string, 4)
	h := mux{"wait": func(ctx context.Context, _ *Conn, req *jsonrpc2.Request) (any, error) {
		started <- req.ID.String()
		<-ctx.Done()
		return nil, ctx.Err()
	}}.handle
	path := serve(t, h, &Options{MaxConcurrent: 2})
	rc := dialRaw(t, path)
	cancelled := wireError{Code: protocol.CodeRequestCancelled, Message: "request cancelled",
		Data: &protocol.ErrorData{Hint: "send the request again if you still need its result"}}

	// A running request, numeric id.
	rc.send(`{"jsonrpc":"2.0","id":7,"method":"wait"}`)
	recv(t, started, "request 7")
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`)
	if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage("7"), Error: &cancelled}, rc.read()); diff != "" {
		t.Errorf("cancel 7 (-want +got):\n%s", diff)
	}

	// A running request, string id.
	rc.send(`{"jsonrpc":"2.0","id":"abc","method":"wait"}`)
	recv(t, started, "request abc")
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"abc"}}`)
	if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage(`"abc"`), Error: &cancelled}, rc.read()); diff != "" {
		t.Errorf("cancel abc (-want +got):\n%s", diff)
	}

	// A request still waiting for a slot is cancelled without running.
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	rc.send(`{"jsonrpc":"2.0","id":2,"method":"wait"}`)
	recv(t, started, "request 1")
	recv(t, started, "request 2")
	rc.send(`{"jsonrpc":"2.0","id":3,"method":"wait"}`)
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`)
	if diff := cmp.Diff(wireMsg{JSONRPC: "2.0", ID: json.RawMessage("3"), Error: &cancelled}, rc.read()); diff != "" {
		t.Errorf("cancel waiting 3 (-want +got):\n%s", diff)
	}
	// Unknown ids are ignored; cancelling 1 and 2 answers them.
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}`)
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	rc.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}`)
	ids := map[string]bool{}
	for range 2 {
		m := rc.read()
		if m.Error == nil || m.Error.Code != protocol.CodeRequestCancelled {
			t.Fatalf("got %+v, want a cancelled answer", m)
		}
		ids[string(m.ID)] = true
	}
	if diff := cmp.Diff(map[string]bool{"1": true, "2": true}, ids); diff != "" {
		t.Error(diff)
	}
	select {
	case id := <-started:
		t.Errorf("request %s ran", id)
	default:
	}
}

func TestDuplicateID(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h := mux{"wait": func(ctx context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	}}.handle
	path := serve(t, h, nil)
	rc := dialRaw(t, path)
	rc.send(`{"jsonrpc":"2.0","id":5,"method":"wait"}`)
	recv(t, started, "request 5")
	rc.send(`{"jsonrpc":"2.0","id":5,"method":"wait"}`)
	m := rc.read()
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest || !strings.Contains(m.Error.Message, "already in flight") {
		t.Errorf("duplicate: %+v", m)
	}
	close(release)
	if m := rc.read(); string(m.Result) != `"done"` {
		t.Errorf("first: %+v", m)
	}
}

func TestValuesAndOnConn(t *testing.T) {
	type key struct{}
	var n atomic.Int32
	path := sockPath(t)
	serveAt(t, path, mux{"who": func(_ context.Context, c *Conn, _ *jsonrpc2.Request) (any, error) {
		return c.Value(key{}), nil
	}}.handle, nil, func(c *Conn) { c.SetValue(key{}, int(n.Add(1))) })

	ctx := testCtx(t)
	for want := 1; want <= 2; want++ {
		c := dial(t, path, nil)
		var got int
		if err := c.Call(ctx, "who", nil, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("conn value = %d, want %d", got, want)
		}
	}

	var c Conn
	c.SetValue("a", 1)
	c.SetValue("a", nil)
	if v := c.Value("a"); v != nil {
		t.Errorf("Value after delete = %v", v)
	}
}

func TestServeStopClosesConns(t *testing.T) {
	p := sockPath(t)
	ln, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	conns := make(chan *Conn, 1)
	go func() { done <- Serve(ctx, ln, mux{"echo": echo}.handle, nil, func(c *Conn) { conns <- c }) }()
	c := dial(t, p, nil)
	if err := c.Call(testCtx(t), "echo", 1, nil); err != nil {
		t.Fatal(err)
	}
	sc := recv(t, conns, "the server conn")
	cancel()
	if err := recv(t, done, "Serve"); err != nil {
		t.Errorf("Serve = %v", err)
	}
	recv(t, sc.DisconnectNotify(), "the server conn to close")
	recv(t, c.DisconnectNotify(), "the client to see the close")
	if err := c.Call(testCtx(t), "echo", 1, nil); !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Errorf("Call on a closed conn = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// An answer too large for a frame comes back as an error, not silence.
func TestAnswerTooLarge(t *testing.T) {
	path := serve(t, mux{"big": func(context.Context, *Conn, *jsonrpc2.Request) (any, error) {
		return strings.Repeat("x", 2000), nil
	}}.handle, &Options{MaxFrameBytes: 1000})
	c := dial(t, path, nil)
	err := c.Call(testCtx(t), "big", nil, nil)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != protocol.CodeInternal || !strings.Contains(je.Message, "exceeds the frame limit") {
		t.Errorf("big = %v", err)
	}
}

// Notifications that arrived before the peer hung up are all handled: a
// shim sends its last shim/changed and exits at once, and the daemon must
// still hear it.
func TestNotificationsBeforeHangUp(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	seen := 0
	all := make(chan struct{})
	release := make(chan struct{})
	h := mux{"note": func(_ context.Context, _ *Conn, _ *jsonrpc2.Request) (any, error) {
		<-release // hold the queue so the hang-up is read while notifications wait
		mu.Lock()
		seen++
		if seen == n {
			close(all)
		}
		mu.Unlock()
		return nil, nil
	}}.handle
	var closed <-chan struct{}
	conns := make(chan *Conn, 1)
	path := sockPath(t)
	serveAt(t, path, h, nil, func(c *Conn) { conns <- c })
	rc := dialRaw(t, path)
	var b strings.Builder
	for i := range n {
		b.WriteString(frame(`{"jsonrpc":"2.0","method":"note","params":{"i":` + strconv.Itoa(i) + `}}`))
	}
	rc.write(b.String())
	rc.nc.Close()
	closed = recv(t, conns, "the server's connection").DisconnectNotify()
	recv(t, closed, "the server noticing the hang-up")
	close(release)
	recv(t, all, "every notification sent before the hang-up")
}
