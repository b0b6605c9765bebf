package shim

import (
	"bytes"
	"io"
	"sync"

	"github.com/hub-agents/hub/hub/redact"
)

// lineRedactor redacts whole lines before they reach w, so a secret split
// across writes is still seen whole. Lines longer than 64 KiB are flushed in
// pieces (a huge line or a binary blob never fails the run).
type lineRedactor struct {
	mu  sync.Mutex
	w   io.Writer
	r   *redact.Redactor
	buf []byte
}

const maxLine = 64 << 10

func (l *lineRedactor) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxLine {
				l.emit(l.buf[:maxLine])
				l.buf = append(l.buf[:0], l.buf[maxLine:]...)
				continue
			}
			return len(p), nil
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineRedactor) emit(b []byte) {
	_, _ = io.WriteString(l.w, l.r.String(string(bytes.ToValidUTF8(b, []byte("?")))))
}

// Flush writes a last partial line.
func (l *lineRedactor) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}
