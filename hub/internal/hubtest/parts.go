package hubtest

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/micros"
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

// Mailbox is a job's mailbox (engine.Mailbox) for an engine's tests: the
// notes and costs it is given are kept, steering queued with Steer is
// handed out once, and a question times out at once.
type Mailbox struct {
	mu     sync.Mutex
	steers []string
	notes  []string
	spent  []protocol.CostEvent
	trace  []protocol.TraceEntry
}

func (m *Mailbox) Ask(context.Context, protocol.AskParams) (*protocol.AskResult, error) {
	return &protocol.AskResult{TimedOut: true}, nil
}

// Progress keeps a note ("" keeps none) and hands out the queued steering.
func (m *Mailbox) Progress(_ context.Context, note string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if note != "" {
		m.notes = append(m.notes, note)
	}
	s := m.steers
	m.steers = nil
	return s, nil
}

func (m *Mailbox) Note(_ context.Context, note string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes = append(m.notes, note)
}

func (m *Mailbox) Spent(_ context.Context, _ micros.Micros, c protocol.CostEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spent = append(m.spent, c)
}

func (m *Mailbox) Trace(_ context.Context, e protocol.TraceEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trace = append(m.trace, e)
}

// Traced are the trace entries given so far.
func (m *Mailbox) Traced() []protocol.TraceEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.trace)
}

// Steer queues steering for the next Progress.
func (m *Mailbox) Steer(s ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steers = append(m.steers, s...)
}

// Notes are the notes given so far.
func (m *Mailbox) Notes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.notes)
}

// Costs are the costs reported so far, oldest first.
func (m *Mailbox) Costs() []protocol.CostEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.spent)
}
