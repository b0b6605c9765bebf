package engine

import (
	"bytes"
	"sync"
)

// Tail keeps the last Max bytes written to it, for output tails in
// summaries and evidence. Safe for concurrent writers.
type Tail struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.Max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

// String returns the tail as valid UTF-8.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.Max {
		b = b[len(b)-t.Max:]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}
