package client

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
)

func TestDaemonAbsent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("dial unix hub.sock: connect: connection refused"), true},
		{fmt.Errorf("initialize: %w", jsonrpc2.ErrClosed), true},
		{&jsonrpc2.Error{Code: protocol.CodeInternal, Message: "a daemon answered"}, false},
		{fmt.Errorf("initialize: %w", &jsonrpc2.Error{Code: protocol.CodeMethodNotFound}), false},
		{context.Canceled, false},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), false},
	} {
		if got := daemonAbsent(tc.err); got != tc.want {
			t.Errorf("daemonAbsent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Without AutoStart, no daemon means an error, and nothing is started.
func TestConnectWithoutDaemon(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	paths := config.Paths{Home: filepath.Join(t.TempDir(), "hub")}
	if _, err := Connect(context.Background(), paths, Options{}); err == nil {
		t.Fatal("Connect found a daemon where there is none")
	}
	if _, err := Connect(context.Background(), paths, Options{}); err == nil {
		t.Fatal("the first Connect started a daemon")
	}
	if got := Code(&jsonrpc2.Error{Code: protocol.CodeNotFound}); got != protocol.CodeNotFound {
		t.Errorf("Code = %d", got)
	}
	if got := Code(errors.New("plain")); got != 0 {
		t.Errorf("Code(plain) = %d", got)
	}
}
