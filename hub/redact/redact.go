// Package redact removes secrets from text before hub stores or shows it:
// values of known keys, and common secret formats (cloud keys, tokens,
// private keys, JWTs). It is a second layer, not a guarantee; it must never
// grow the text it is given by more than its markers.
package redact

import (
	"regexp"
	"strings"
)

const marker = "[REDACTED]"

var patterns = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
	regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),                                     // AWS access key id
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`),                                    // GitHub tokens
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}\b`),                                  // GitHub fine-grained
	regexp.MustCompile(`\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}\b`),                         // OpenAI / Anthropic keys
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`),                                  // Slack
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`),                                        // Google API key
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`), // JWT
	regexp.MustCompile(`(?i)\b(aws_secret_access_key|api[_-]?key|secret|token|password)(\s*[=:]\s*)["']?[A-Za-z0-9/+_\-\.]{12,}["']?`),
}

// Redactor redacts known values plus the common formats. The zero value
// redacts formats only. Safe for concurrent use once built.
type Redactor struct {
	values []string
}

// New returns a redactor that also removes each of values (shorter than 8
// bytes are ignored: too likely to match ordinary text).
func New(values ...string) *Redactor {
	r := &Redactor{}
	for _, v := range values {
		if len(v) >= 8 {
			r.values = append(r.values, v)
		}
	}
	return r
}

// String returns s with secrets replaced by [REDACTED].
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, v := range r.values {
			s = strings.ReplaceAll(s, v, marker)
		}
	}
	for i, p := range patterns {
		if i == len(patterns)-1 {
			s = p.ReplaceAllString(s, "${1}${2}"+marker)
			continue
		}
		s = p.ReplaceAllString(s, marker)
	}
	return s
}

// String redacts with the formats only.
func String(s string) string { return (*Redactor)(nil).String(s) }
