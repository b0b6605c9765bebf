// Package errline finds the lines of a command's output that say why it
// failed, so that a one-line summary or a cut output keeps them.
package errline

import (
	"regexp"
	"strings"
)

// errorLine matches a line that says why a command failed, in the words
// the common toolchains use: Node's "Error: Cannot find module", npm's
// "npm ERR!", Go's "--- FAIL" and "panic:", Python's "Traceback" and
// "...Error:", pytest's "FAILED", TAP's "not ok", git's and most CLIs'
// "fatal:"/"error:", a compiler's "file:line: error".
var errorLine = regexp.MustCompile(`(?i)(^|[^a-z])(error|exception|traceback|panic|fatal|failed|failure|cannot find|not found|no such file|undefined|segmentation fault|assert)` +
	`|^\s*(--- fail|fail\b|not ok\b|npm err!|✗|×|✕)`)

// benign are lines that match errorLine and say nothing went wrong.
var benign = regexp.MustCompile(`(?i)\b(0 (errors?|failed|failures))\b|^\s*ok\s|no errors`)

// Is reports whether a line of a command's output looks like it
// says why the command failed.
func Is(line string) bool {
	return errorLine.MatchString(line) && !benign.MatchString(line)
}

// Telling is the line of a failed command's output worth showing in
// one line: the first that looks like an error, else the last one that is
// not blank. (Node prints its version last, after the error that matters.)
func Telling(out string) string {
	last := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "[... ") {
			continue
		}
		if Is(l) {
			return strings.TrimSpace(l)
		}
		last = l
	}
	return strings.TrimSpace(last)
}
