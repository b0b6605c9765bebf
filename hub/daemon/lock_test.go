package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/rpc"
)

// TestTakeLock: a lock held by a daemon that answers is ErrRunning at once;
// one held by a daemon on its way out (no socket) is waited for, so a
// command that started a daemon just as the old one went is served.
func TestTakeLock(t *testing.T) {
	p := config.Paths{Home: filepath.Join(t.TempDir(), "hub")}
	if err := os.MkdirAll(p.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old := flock.New(p.DaemonLock())
	if ok, err := old.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Going away: the socket is gone, the lock still held for a moment.
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the old daemon's last steps
		released <- time.Now()
		old.Unlock()
	}()
	lock := flock.New(p.DaemonLock())
	if err := takeLock(ctx, lock, p); err != nil {
		t.Fatalf("takeLock while the old daemon goes: %v", err)
	}
	if got := <-released; time.Now().Before(got) {
		t.Fatal("took the lock before it was released")
	}
	// Held by one that answers on the socket: ErrRunning, no wait.
	ln, err := rpc.Listen(p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t0 := time.Now()
	if err := takeLock(ctx, flock.New(p.DaemonLock()), p); !errors.Is(err, ErrRunning) {
		t.Fatalf("takeLock with a serving daemon: %v; want ErrRunning", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("took %s to see a serving daemon", d)
	}
	lock.Unlock()
}
