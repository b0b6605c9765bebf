package hubtest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Buffer is a strings.Builder safe for concurrent writers: a worker's
// output, written by several goroutines, read by the test.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Listener is a TCP listener on loopback that counts the connections it
// gets (and closes each): what a worker reached on the network.
type Listener struct {
	Port  int
	conns atomic.Int32
}

// Listen opens a Listener, closed when the test ends.
func Listen(t testing.TB) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &Listener{Port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.conns.Add(1)
			c.Close()
		}
	}()
	return l
}

// Connections is how many connections it got since the last Reset.
func (l *Listener) Connections() int32 { return l.conns.Load() }

// Reset starts the count again.
func (l *Listener) Reset() { l.conns.Store(0) }
