// Package text shortens text for what hub shows: one line of a command's
// output or a worker's words, a commit's name. Every part of hub (and the
// worker and the rubric) cuts text here, so a summary, a journal line and a
// rubric line cut the same way.
package text

import (
	"strings"
	"unicode"
)

// Cut marks where text was cut.
const Cut = "…"

// OneLine is s on one line (Fold), cut to at most n runes (Cut marking a
// cut).
func OneLine(s string, n int) string { return Clip(Fold(s), n) }

// Fold is s on one line: its runs of white space and control characters
// one space, none at either end.
func Fold(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
}

// FirstLine is the first line of s (trimmed; " …" when more lines follow),
// cut to at most n runes.
func FirstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " " + Cut
	}
	return Clip(s, n)
}

// Clip cuts s to at most n runes, the last of them Cut when it cut ("" for
// n < 1).
func Clip(s string, n int) string {
	if n < 1 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + Cut
}

// SHALen is how many characters of a commit's name hub shows.
const SHALen = 10

// ShortSHA is a commit's name as hub shows it: its first SHALen characters.
func ShortSHA(sha string) string {
	return sha[:min(SHALen, len(sha))]
}
