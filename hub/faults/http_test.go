//go:build linux

package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// idleLimit is how long `hub mcp --http` may keep an idle keep-alive
// connection open: its 60 s idle timeout, and slack for a loaded machine.
const idleLimit = 75 * time.Second

// TestHTTPIdle: anyone on the machine can connect to `hub mcp --http`. A
// keep-alive connection left idle after a 401 (a wrong token) must be
// closed by the server, not held for ever; as must one that never sends a
// whole request header. (The fences matrix's http row; it runs beside the
// other cases, since it mostly waits.)
func TestHTTPIdle(t *testing.T) {
	t.Parallel()
	for range repeat(t) {
		began := time.Now()
		end, crossed := httpIdle(t)
		report(t, outcome{Test: "TestFences", Fault: "idle-connection-after-401", Step: "worktree", Runs: 1, Ends: []string{end},
			Figures: figures{Breached: crossed}, Took: time.Since(began)})
	}
}

var mcpAddr = regexp.MustCompile(`MCP on http://([0-9.]+:[0-9]+)/`)

func httpIdle(t *testing.T) (string, int) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 5*time.Minute)
	w.startDaemon(ctx)
	cmd := exec.CommandContext(ctx, w.bin, "mcp", "--http", "127.0.0.1:0")
	cmd.Env = w.vars
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := mcpAddr.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var at string
	select {
	case at = <-addr:
	case <-ctx.Done():
		t.Fatal("hub mcp --http never said where it listens")
	}
	crossed := 0
	// A wrong token, answered 401 on a kept-alive connection, then silence.
	closedAfter := func(req string) (time.Duration, string) {
		c, err := net.Dial("tcp", at)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(idleLimit))
		got, err := io.ReadAll(c)
		if err != nil {
			return 0, string(got)
		}
		return time.Since(t0), string(got)
	}
	took, got := closedAfter("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	if !strings.Contains(got, " 401 ") {
		t.Errorf("a wrong token was answered %q", firstAlert(got))
		crossed = 1
	}
	if took == 0 {
		t.Errorf("the idle connection after the 401 was still open after %s", idleLimit)
		crossed = 1
	}
	// A header that never ends.
	slow, _ := closedAfter("POST / HTTP/1.1\r\nHost: x\r\n")
	if slow == 0 {
		t.Errorf("a connection that never finished its header was still open after %s", idleLimit)
		crossed = 1
	}
	if st := hubtest.Daemon(t, w.c).EngineList(context.Background(), protocol.Empty{}); st.MaxRunning == 0 {
		t.Errorf("the daemon did not answer while connections hung")
	}
	return fmt.Sprintf("held: closed %s after the 401, %s into a header that never ended", took.Round(time.Second), slow.Round(time.Second)), crossed
}
