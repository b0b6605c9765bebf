// Package logfile keeps hub's long-lived logs (the daemon's, `hub mcp`'s,
// each shim's) to a size: when a write would take a log past its cap, the
// log becomes <name>.1 (the generation before it is dropped) and a new one
// starts. So a log never holds more than twice its cap on disk, and the
// newest lines are always in <name>.
package logfile

import (
	"os"
	"sync"
)

// DefaultCap is the size at which a log rotates.
const DefaultCap = 8 << 20

// Old is the name of a log's previous generation.
func Old(path string) string { return path + ".1" }

// File is a size-capped log. It is safe for concurrent use.
type File struct {
	path string
	cap  int64
	fds  []int // descriptors that follow the log across a rotation (stderr)

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open appends to the log at path, rotating it at cap bytes.
func Open(path string, cap int64) (*File, error) {
	l := &File{path: path, cap: cap}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// Adopt takes over the log that fds (say, a process's stdout and stderr,
// which whoever started the process pointed at path) already write to.
// What the process writes to those descriptors itself — a panic's trace —
// lands in the current log too: each rotation points them at the new file.
// It returns nil when fds[0] is not the file at path (a terminal, a pipe):
// then there is nothing of hub's to cap.
func Adopt(path string, cap int64, fds ...int) (*File, error) {
	if len(fds) == 0 || !writesTo(fds[0], path) {
		return nil, nil
	}
	l := &File{path: path, cap: cap, fds: fds}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	for _, fd := range l.fds {
		if err := redirect(f, fd); err != nil {
			f.Close()
			return err
		}
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the log past its cap.
// A log that cannot rotate (its folder went read-only) keeps appending:
// losing the log's lines would be worse than its size.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		l.rotate()
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

func (l *File) rotate() {
	if err := os.Rename(l.path, Old(l.path)); err != nil {
		return
	}
	old := l.f
	if err := l.open(); err != nil {
		// Keep writing where we were, under its new name.
		return
	}
	old.Close()
}

// Close closes the log.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
