package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

// blockingWait is a fake daemon whose job/wait blocks until release is
// closed (or the call's ctx ends), after telling entered.
type blockingWait struct {
	fd      *fakeDaemon
	entered chan struct{}
	release chan struct{}
	ended   chan error // the ctx error job/wait ended with, nil when released
}

func newBlockingWait(res protocol.WaitResult) *blockingWait {
	b := &blockingWait{entered: make(chan struct{}, 1), release: make(chan struct{}), ended: make(chan error, 1)}
	b.fd = &fakeDaemon{handle: func(ctx context.Context, method string, _ any) (any, error) {
		if method != protocol.MethodJobWait {
			return nil, fmt.Errorf("unexpected %s", method)
		}
		b.entered <- struct{}{}
		select {
		case <-b.release:
			b.ended <- nil
			return res, nil
		case <-ctx.Done():
			b.ended <- ctx.Err()
			return nil, ctx.Err()
		}
	}}
	return b
}

// progressClient connects to s and returns the progress messages it gets.
func progressClient(t *testing.T, s *Server, version string) (*mcp.ClientSession, <-chan string) {
	got := make(chan string, 256)
	cs := connect(t, s, version, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			got <- r.Params.Message
		},
	})
	return cs, got
}

type callAnswer struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) <-chan callAnswer {
	ch := make(chan callAnswer, 1)
	go func() {
		res, err := cs.CallTool(ctx, p)
		ch <- callAnswer{res, err}
	}()
	return ch
}

func changed(st protocol.JobStatus) (string, []byte) {
	return protocol.NotifyJobChanged, mustJSON(st)
}

// TestWaitProgressThrottled feeds a burst of job/changed updates during a
// wait and checks that progress is sent at most once per window, carries
// the newest state, and ignores jobs the wait does not watch.
func TestWaitProgressThrottled(t *testing.T) {
	isolate(t)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			final := protocol.WaitResult{Jobs: []protocol.JobStatus{{ID: "abc12345", State: protocol.StateSucceeded, Engine: "exec", Cost: protocol.Cost{Known: true}}}, Done: true, Cursor: 30}
			bw := newBlockingWait(final)
			s := New(bw.fd, Options{})
			s.progressMin = 300 * time.Millisecond
			s.progressBeat = time.Hour // no heartbeat in this test
			cs, progress := progressClient(t, s, v)
			ctx := deadline(t, 20*time.Second)

			answer := callAsync(ctx, cs, &mcp.CallToolParams{Name: "wait",
				Arguments: map[string]any{"ids": []string{"abc12345", "def67890"}}, Meta: mcp.Meta{"progressToken": "w1"}})
			recv(t, ctx, bw.entered, "daemon job/wait")

			burstStart := time.Now()
			s.Notify(protocol.NotifyJobEvent, mustJSON(protocol.Event{Cursor: 1, JobID: "abc12345", Kind: "output", Text: "x"}))
			for i := 1; i <= 20; i++ {
				s.Notify(changed(protocol.JobStatus{ID: "abc12345", State: protocol.StateRunning, Progress: fmt.Sprintf("step %d", i), Cursor: int64(i)}))
				s.Notify(changed(protocol.JobStatus{ID: "zzzzzzzz", State: protocol.StateRunning, Progress: "not watched", Cursor: int64(100 + i)}))
			}
			s.Notify(changed(protocol.JobStatus{ID: "def67890", State: protocol.StateFailed, Cursor: 21}))
			s.Notify(changed(protocol.JobStatus{ID: "abc12345", State: protocol.StateRunning, Progress: "step 21", Cursor: 22}))
			burst := time.Since(burstStart)

			var msgs []string
			for {
				m := recv(t, ctx, progress, "progress carrying the newest state")
				msgs = append(msgs, m)
				if strings.Contains(m, "step 21") {
					break
				}
			}
			// One at once, then one per window for as long as the burst lasted.
			if allowed := 2 + int(burst/s.progressMin); len(msgs) > allowed {
				t.Errorf("%d progress messages for a %s burst, want at most %d: %q", len(msgs), burst, allowed, msgs)
			}
			if want := "1/2 ended · abc12345 running: step 21"; msgs[len(msgs)-1] != want {
				t.Errorf("last progress %q, want %q", msgs[len(msgs)-1], want)
			}
			for _, m := range msgs {
				if strings.Contains(m, "zzzzzzzz") || strings.Contains(m, "not watched") {
					t.Errorf("progress about an unwatched job: %q", m)
				}
			}

			close(bw.release)
			a := recv(t, ctx, answer, "wait answer")
			if a.err != nil || a.res.IsError {
				t.Fatalf("wait: %v %+v", a.err, a.res)
			}
			if got := contentText(a.res); got != "abc12345 succeeded · exec · 0ms · $0.00\ncursor 30" {
				t.Errorf("wait text %q", got)
			}
			// Nothing changed after the last message: no more may have been sent.
			for {
				select {
				case m := <-progress:
					t.Errorf("progress after the last change: %q", m)
					continue
				default:
				}
				break
			}
			if n := watchers(s); n != 0 {
				t.Errorf("%d watchers left after wait", n)
			}
		})
	}
}

// TestWaitProgressWindows checks the spacing itself: updates that keep
// coming make progress at most once per window.
func TestWaitProgressWindows(t *testing.T) {
	isolate(t)
	bw := newBlockingWait(protocol.WaitResult{Done: true})
	s := New(bw.fd, Options{})
	s.progressMin = 100 * time.Millisecond
	s.progressBeat = time.Hour
	cs, progress := progressClient(t, s, versions[1])
	ctx := deadline(t, 20*time.Second)
	answer := callAsync(ctx, cs, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ids": []string{"abc12345"}},
		Meta: mcp.Meta{"progressToken": 7}})
	recv(t, ctx, bw.entered, "daemon job/wait")

	// Send an update, wait for the progress it causes, send the next at
	// once: each must come a window after the previous.
	var last time.Time
	for i := 1; i <= 4; i++ {
		s.Notify(changed(protocol.JobStatus{ID: "abc12345", State: protocol.StateRunning, Progress: fmt.Sprintf("step %d", i), Cursor: int64(i)}))
		m := recv(t, ctx, progress, "progress")
		now := time.Now()
		if want := fmt.Sprintf("step %d", i); !strings.Contains(m, want) {
			t.Errorf("progress %q, want %q", m, want)
		}
		// The client receives a little after the server sends; allow for
		// that delay shortening a gap by half a window (unthrottled, the
		// gap would be a few microseconds).
		if i > 1 && now.Sub(last) < s.progressMin/2 {
			t.Errorf("progress %d came %s after the previous; the window is %s", i, now.Sub(last), s.progressMin)
		}
		last = now
	}
	close(bw.release)
	if a := recv(t, ctx, answer, "wait answer"); a.err != nil {
		t.Fatal(a.err)
	}
}

func TestWaitHeartbeat(t *testing.T) {
	isolate(t)
	bw := newBlockingWait(protocol.WaitResult{Done: true, Cursor: 1})
	s := New(bw.fd, Options{})
	s.progressMin = 10 * time.Millisecond
	s.progressBeat = 50 * time.Millisecond
	cs, progress := progressClient(t, s, versions[0])
	ctx := deadline(t, 20*time.Second)
	answer := callAsync(ctx, cs, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ids": []string{"abc12345"}},
		Meta: mcp.Meta{"progressToken": "hb"}})
	recv(t, ctx, bw.entered, "daemon job/wait")
	for range 2 {
		if m := recv(t, ctx, progress, "heartbeat"); !strings.HasPrefix(m, "0/1 ended · waiting ") {
			t.Errorf("heartbeat %q", m)
		}
	}
	close(bw.release)
	if a := recv(t, ctx, answer, "wait answer"); a.err != nil {
		t.Fatal(a.err)
	}
}

// TestWaitNoToken checks that a wait without a progress token watches
// nothing and sends no progress.
func TestWaitNoToken(t *testing.T) {
	isolate(t)
	bw := newBlockingWait(protocol.WaitResult{Done: true, Cursor: 2})
	s := New(bw.fd, Options{})
	s.progressMin = time.Millisecond
	s.progressBeat = time.Millisecond
	cs, progress := progressClient(t, s, versions[1])
	ctx := deadline(t, 20*time.Second)
	answer := callAsync(ctx, cs, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ids": []string{"abc12345"}}})
	recv(t, ctx, bw.entered, "daemon job/wait")
	if n := watchers(s); n != 0 {
		t.Errorf("%d watchers for a wait without a progress token", n)
	}
	s.Notify(changed(protocol.JobStatus{ID: "abc12345", State: protocol.StateRunning, Progress: "x", Cursor: 1}))
	close(bw.release)
	if a := recv(t, ctx, answer, "wait answer"); a.err != nil || a.res.IsError {
		t.Fatalf("wait: %v %+v", a.err, a.res)
	}
	select {
	case m := <-progress:
		t.Errorf("progress without a token: %q", m)
	default:
	}
}

// TestWaitCancel checks that the client's cancel reaches the daemon call.
func TestWaitCancel(t *testing.T) {
	isolate(t)
	for _, token := range []any{nil, "c1"} {
		t.Run(fmt.Sprint(token), func(t *testing.T) {
			bw := newBlockingWait(protocol.WaitResult{})
			s := New(bw.fd, Options{})
			cs, _ := progressClient(t, s, versions[0])
			ctx := deadline(t, 20*time.Second)
			callCtx, cancel := context.WithCancel(ctx)
			p := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ids": []string{"abc12345"}, "timeout_s": 3600}}
			if token != nil {
				p.Meta = mcp.Meta{"progressToken": token}
			}
			answer := callAsync(callCtx, cs, p)
			recv(t, ctx, bw.entered, "daemon job/wait")
			cancel()
			if err := recv(t, ctx, bw.ended, "daemon call to end"); err == nil {
				t.Error("daemon job/wait was not cancelled")
			}
			if a := recv(t, ctx, answer, "wait answer"); a.err == nil {
				t.Errorf("cancelled wait returned %+v", a.res)
			}
		})
	}
}

func TestProgressText(t *testing.T) {
	known := map[string]protocol.JobStatus{
		"a": {ID: "a", State: protocol.StateSucceeded},
		"b": {ID: "b", State: protocol.StateNeedsInput, Question: &protocol.Question{Text: "which\ncolour?"}},
		"c": {ID: "c", State: protocol.StateRunning, Progress: "tests: go test ./..."},
	}
	tests := []struct {
		latest  string
		changed bool
		want    string
	}{
		{"c", true, "1/3 ended · 1 asking · c running: tests: go test ./..."},
		{"b", true, "1/3 ended · 1 asking · b needs_input: which colour?"},
		{"a", true, "1/3 ended · 1 asking · a succeeded"},
		{"c", false, "1/3 ended · 1 asking · waiting 1m10s"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, progressText(known, tc.latest, 3, tc.changed, 70*time.Second)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

func watchers(s *Server) int {
	s.watchersMu.Lock()
	defer s.watchersMu.Unlock()
	return len(s.watchers)
}
