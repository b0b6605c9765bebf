package shim

import (
	"bytes"
	"io"
	"sync"

	"github.com/hub-agents/hub/hub/redact"
)

// lineRedactor redacts whole lines before they reach w, so a secret split
// across writes is still seen whole, and a private key spread over lines is
// dropped from its BEGIN line to its END line. Lines longer than 64 KiB are
// flushed in pieces, cut after a space where one is near the end, so a value
// is rarely cut in two (a huge line or a binary blob never fails the run).
type lineRedactor struct {
	mu  sync.Mutex
	w   io.Writer
	r   *redact.Redactor
	st  *redact.Stream // made from r at the first line
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
				cut := maxLine
				if j := bytes.LastIndexAny(l.buf[maxLine-maxLine/4:maxLine], " \t"); j >= 0 {
					cut = maxLine - maxLine/4 + j + 1
				}
				l.emit(l.buf[:cut])
				l.buf = append(l.buf[:0], l.buf[cut:]...)
				continue
			}
			return len(p), nil
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineRedactor) emit(b []byte) {
	if l.st == nil {
		l.st = l.r.Stream()
	}
	_, _ = io.WriteString(l.w, l.st.Line(string(bytes.ToValidUTF8(b, []byte("?")))))
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
