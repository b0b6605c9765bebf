package shim

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/hub-agents/hub/hub/redact"
)

// lineRedactor redacts whole lines before they reach w, so a secret split
// across writes is still seen whole, and a private key spread over lines is
// dropped from its BEGIN line to its END line. Lines longer than 64 KiB are
// flushed in pieces, cut after a space where one is near the end, so a value
// is rarely cut in two (a huge line or a binary blob never fails the run).
//
// When w is a file (the worker log), it is kept within limit bytes on disk
// (see boundedLog): a worker that floods its output keeps its first lines
// and its last, and the log says how much was cut between them.
type lineRedactor struct {
	mu  sync.Mutex
	w   io.Writer
	r   *redact.Redactor
	st  *redact.Stream // made from r at the first line
	buf []byte
	// limit bounds a file w on disk; 0 means workerLogLimit.
	limit int64
	out   io.Writer // where lines go: w, or w kept within limit; set at the first line
}

const maxLine = 64 << 10

// workerLogLimit is how large a worker log may grow on disk: 8 MiB of head
// and at least 12 MiB, at most 24 MiB, of tail.
const workerLogLimit = 32 << 20

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
	if l.out == nil {
		l.out = l.w
		if f, ok := l.w.(*os.File); ok {
			l.out = newBoundedLog(f, l.limit)
		}
	}
	_, _ = io.WriteString(l.out, l.st.Line(string(bytes.ToValidUTF8(b, []byte("?")))))
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

// boundedLog keeps a log file within a limit on disk. The file is the head
// (the first quarter of the limit, in whole lines) as written; once more
// comes than fits, a line that says how many bytes were cut; and the newest
// output, at least half of what is left. Lines are appended to f as they
// come (so the log is on disk as it grows, and a shim that dies leaves it
// whole); when the next line would take the file past the limit, the
// oldest part of the tail is cut, in place: the newest lines are copied
// down behind the cut line and the file truncated. Readers need nothing
// special: it is one file, its last lines are the last lines written.
//
// A cut copies the kept tail once, so the log costs at most twice its
// output in writes. The copy never overwrites the newest lines (they lie
// beyond where the copy ends), so a shim killed mid-cut still leaves the
// last output at the end of the file, behind a garbled middle.
//
// Every line goes through one boundedLog (lineRedactor's lock); another
// process that cuts the file short (a person, the fault suite) is seen at
// the next cut.
type boundedLog struct {
	f     *os.File // the log, opened for appending
	limit int64
	head  int64 // most of the head
	keep  int64 // the tail kept by a cut, at most

	size    int64 // the file's size as far as this writer knows
	headEnd int64 // where the head ends (a line boundary); -1 while it is still growing
	tailAt  int64 // where the tail begins: headEnd, or after the cut line
	cut     int64 // bytes of output cut so far
	warned  bool  // a failed cut was reported
}

// maxCutLine bounds the length of the cut line.
const maxCutLine = 80

// cutLine says how much output was cut.
func cutLine(n int64) string {
	return "… " + strconv.FormatInt(n, 10) + " bytes of worker output cut …\n"
}

func newBoundedLog(f *os.File, limit int64) *boundedLog {
	if limit <= 0 {
		limit = workerLogLimit
	}
	b := &boundedLog{f: f, limit: limit, head: limit / 4, headEnd: -1}
	b.keep = (limit - b.head - maxCutLine) / 2
	if fi, err := f.Stat(); err == nil {
		b.size = fi.Size()
	}
	return b
}

func (b *boundedLog) Write(p []byte) (int, error) {
	n := int64(len(p))
	if b.headEnd < 0 && b.size+n > b.head {
		b.headEnd, b.tailAt = b.size, b.size
	}
	if b.headEnd >= 0 && b.size+n > b.limit {
		if err := b.compact(); err != nil && !b.warned {
			// Better a log past its bound than a worker whose output is
			// lost; the shim's log says why.
			b.warned = true
			fmt.Fprintf(os.Stderr, "hub: cannot keep the worker log %s within %d bytes: %v\n", b.f.Name(), b.limit, err)
		}
	}
	m, err := b.f.Write(p)
	b.size += int64(m)
	return m, err
}

// compact cuts the oldest part of the tail, keeping its newest b.keep bytes
// or less, from the start of a line.
func (b *boundedLog) compact() error {
	fi, err := b.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	b.size = size
	if size < b.tailAt {
		// Cut short by someone else: what is there is the head now.
		b.headEnd, b.tailAt = min(b.headEnd, size), min(b.headEnd, size)
		return nil
	}
	// The descriptor lineRedactor got appends wherever it writes: cut
	// through one of our own, onto the same file.
	rw, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(b.f.Fd())), os.O_RDWR, 0)
	if err != nil {
		if rw, err = os.OpenFile(b.f.Name(), os.O_RDWR, 0); err != nil {
			return err
		}
	}
	defer rw.Close()
	from, err := lineStart(rw, max(size-b.keep, b.tailAt), size)
	if err != nil {
		return err
	}
	if from <= b.tailAt {
		return nil // nothing to cut
	}
	cut := b.cut + from - b.tailAt
	mark := cutLine(cut)
	dst := b.headEnd + int64(len(mark))
	if err := copyDown(rw, dst, from, size-from); err != nil {
		return err
	}
	if _, err := rw.WriteAt([]byte(mark), b.headEnd); err != nil {
		return err
	}
	if err := rw.Truncate(dst + size - from); err != nil {
		return err
	}
	b.cut, b.tailAt, b.size = cut, dst, dst+size-from
	return nil
}

// lineStart is the first offset at or after from, and before end, where a
// line begins; from itself when no line ends between (one huge line).
func lineStart(f *os.File, from, end int64) (int64, error) {
	if from == 0 {
		return 0, nil
	}
	buf := make([]byte, 64<<10)
	for off := from - 1; off < end; off += int64(len(buf)) {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n == 0 {
			break
		}
	}
	return from, nil
}

// copyDown copies n bytes of f from src to dst, dst <= src, front to back,
// which is safe even where the two overlap.
func copyDown(f *os.File, dst, src, n int64) error {
	buf := make([]byte, 1<<20)
	for done := int64(0); done < n; {
		want := min(int64(len(buf)), n-done)
		k, err := f.ReadAt(buf[:want], src+done)
		if int64(k) < want {
			return fmt.Errorf("the log shrank while it was cut: %w", err)
		}
		if _, err := f.WriteAt(buf[:k], dst+done); err != nil {
			return err
		}
		done += want
	}
	return nil
}
