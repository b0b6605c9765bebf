package text

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hub-agents/hub/internal/errline"
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

// DefaultOutputMax is what a HeadTail keeps when its Max is not set.
const DefaultOutputMax = 4096

// HeadTail keeps the first and the last bytes written to it, Max in all
// (half each; 0: DefaultOutputMax), and counts the bytes it drops between
// them, for a command's output in evidence: how it started and how it
// ended. Safe for concurrent writers.
//
// Lines past the head that look like errors (errline.Is) are kept too, the
// first few, so that an error in the middle of a long output is not cut:
// String lists those that fell between the head and the tail.
type HeadTail struct {
	Max int

	mu    sync.Mutex
	head  []byte
	tail  []byte // the last bytes past head; trimmed to the tail's share now and then
	total int64

	line []byte    // the line being written past the head (its first maxErrLine bytes)
	at   int64     // where that line starts in the output
	errs []errorAt // the first maxErrLines error lines past the head
}

// errorAt is an error line and where it starts and ends in the output.
type errorAt struct {
	text       string
	start, end int64
}

const (
	maxErrLines = 8
	maxErrLine  = 300
)

func (h *HeadTail) shares() (head, tail int) {
	m := h.Max
	if m <= 0 {
		m = DefaultOutputMax
	}
	return m / 2, m - m/2
}

func (h *HeadTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	hmax, tmax := h.shares()
	pos := h.total // where p starts
	h.total += int64(n)
	if room := hmax - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
		pos += int64(k)
		h.at = pos
	}
	h.scan(p, pos)
	if len(p) >= tmax {
		h.tail = append(h.tail[:0], p[len(p)-tmax:]...)
		return n, nil
	}
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*tmax {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-tmax:]...)
	}
	return n, nil
}

// scan looks for error lines in p, which starts at pos in the output.
func (h *HeadTail) scan(p []byte, pos int64) {
	for len(p) > 0 && len(h.errs) < maxErrLines {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxErrLine - len(h.line); room > 0 {
			h.line = append(h.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			return
		}
		end := pos + int64(i)
		if l := string(bytes.ToValidUTF8(h.line, []byte("?"))); errline.Is(l) {
			h.errs = append(h.errs, errorAt{text: l, start: h.at, end: end})
		}
		h.line = h.line[:0]
		p, pos = p[i+1:], end+1
		h.at = pos
	}
}

// Total is how many bytes were written, kept or not.
func (h *HeadTail) Total() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// String returns what was kept, as valid UTF-8: all of it, or the head
// and the tail around a line "[... N bytes cut ...]" (N the bytes left
// out), each cut at a character boundary.
func (h *HeadTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	hmax, tmax := h.shares()
	if h.total <= int64(hmax+tmax) {
		return string(bytes.ToValidUTF8(append(append([]byte(nil), h.head...), h.tail...), []byte("?")))
	}
	head, tail := h.head, h.tail[len(h.tail)-tmax:]
	// Do not split a character: drop an incomplete one at either cut.
	if i := lastRuneStart(head); i >= 0 && !utf8.FullRune(head[i:]) {
		head = head[:i]
	}
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	cut := h.total - int64(len(head)) - int64(len(tail))
	var s strings.Builder
	s.Write(bytes.ToValidUTF8(head, []byte("?")))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		s.WriteByte('\n')
	}
	fmt.Fprintf(&s, "[... %d bytes cut ...]\n", cut)
	tailStart := h.total - int64(len(tail))
	var cutErrs []string
	for _, e := range h.errs {
		if e.start >= int64(len(head)) && e.end <= tailStart {
			cutErrs = append(cutErrs, e.text)
		}
	}
	if len(cutErrs) > 0 {
		s.WriteString("[lines among them that look like errors:]\n")
		for _, l := range cutErrs {
			s.WriteString(l + "\n")
		}
		s.WriteString("[... end of those ...]\n")
	}
	s.Write(bytes.ToValidUTF8(tail, []byte("?")))
	return s.String()
}

// lastRuneStart returns where the last character of b starts (looking
// back at most utf8.UTFMax bytes), or -1 when b is empty.
func lastRuneStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}
