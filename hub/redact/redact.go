// Package redact removes secrets from text before hub stores or shows it:
// the values of known keys, found by value wherever they appear, and common
// secret formats (cloud keys, tokens, private keys, JWTs, credentials in
// URLs and assignments). It is a second layer, not a guarantee: the first is
// that keys never reach a worker. It must never grow the text it is given by
// more than its markers, and never fail: whatever it cannot recognise passes
// through.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// marker replaces each secret.
const marker = "[REDACTED]"

// MinLen is the shortest value redacted by value. A shorter one is too
// likely to be ordinary text ("admin", "test123", a port number, a word of
// the task): replacing it everywhere would garble logs and diffs, and could
// even reveal the value by where the markers fall. No provider's key is that
// short; a short password is the one secret this leaves to the formats.
const MinLen = 8

// Redactor redacts known values plus the common formats. The zero value
// (and a nil *Redactor) redacts formats only. Safe for concurrent use,
// Add included.
type Redactor struct {
	addMu sync.Mutex            // serializes Add
	known atomic.Pointer[known] // nil: no values
}

// known is a redactor's values, never changed once built.
type known struct {
	values []string          // longest first, each at least MinLen bytes
	rep    *strings.Replacer // every value in one pass
}

// New returns a redactor that also removes each of values, wherever it
// appears (values shorter than MinLen bytes are ignored, see MinLen). A value
// is matched as plain bytes: regular-expression metacharacters in it mean
// nothing. Its URL-escaped form is removed too.
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add makes r remove values too, as New does, from now on (for text it is
// given after Add returns). It is how a value hub learns of late (one in a
// file copied into a job's worktree) joins the keys.
func (r *Redactor) Add(values ...string) {
	if r == nil || len(values) == 0 {
		return
	}
	r.addMu.Lock()
	defer r.addMu.Unlock()
	var all []string
	seen := map[string]bool{}
	if k := r.known.Load(); k != nil {
		all = slices.Clone(k.values)
		for _, v := range all {
			seen[v] = true
		}
	}
	n := len(all)
	add := func(v string) {
		if len(v) >= MinLen && !seen[v] {
			seen[v] = true
			all = append(all, v)
		}
	}
	for _, v := range values {
		add(v)
		if t := strings.TrimSpace(v); t != v {
			add(t)
		}
		add(url.QueryEscape(v))
	}
	if len(all) == n {
		return
	}
	// The replacer prefers the earlier of two values that match at the same
	// place: longest first, so a value that extends another goes whole.
	slices.SortFunc(all, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(all))
	for _, v := range all {
		pairs = append(pairs, v, marker)
	}
	r.known.Store(&known{values: all, rep: strings.NewReplacer(pairs...)})
}

// String returns s with secrets replaced by [REDACTED]: the values first
// (each with the letters, digits, '_' and '-' right around it, so a token
// that holds a value goes whole), then the formats. A marker stays as it is,
// and no secret is looked for across one. What a removal uncovers (a token
// that now starts a word) is looked for again until nothing changes, so
// redacting twice changes nothing.
func (r *Redactor) String(s string) string {
	for {
		out := r.pass(s)
		if out == s {
			return out
		}
		s = out // each pass that changes s leaves fewer bytes outside markers: this ends
	}
}

func (r *Redactor) pass(s string) string {
	return eachPiece(s, func(p string) string {
		if r != nil {
			if k := r.known.Load(); k != nil {
				p = widen(k.rep.Replace(p))
			}
		}
		return eachPiece(p, applyFormats)
	})
}

// widen grows each marker in s (text that held no marker before the values
// were replaced) over the word bytes around it.
func widen(s string) string {
	if !strings.Contains(s, marker) {
		return s
	}
	var b strings.Builder
	last := 0
	for {
		i := strings.Index(s[last:], marker)
		if i < 0 {
			break
		}
		start, end := last+i, last+i+len(marker)
		for start > last && isWord(s[start-1]) {
			start--
		}
		for end < len(s) && isWord(s[end]) {
			end++
		}
		b.WriteString(s[last:start])
		b.WriteString(marker)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// eachPiece applies fn to each stretch of s between markers.
func eachPiece(s string, fn func(string) string) string {
	if s == "" {
		return s
	}
	if !strings.Contains(s, marker) {
		return fn(s)
	}
	parts := strings.Split(s, marker)
	for i, p := range parts {
		if p != "" {
			parts[i] = fn(p)
		}
	}
	return strings.Join(parts, marker)
}

// String redacts with the formats only.
func String(s string) string { return (*Redactor)(nil).String(s) }

// A token is a secret recognisable by its own shape, wherever it stands.
type token struct {
	name string
	expr string
	hint []string // literals, one of which every match holds
}

var tokens = []token{
	{"AWS access key id", `\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`, []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	{"GitHub token", `\bgh[pousr]_[A-Za-z0-9]{30,}\b`, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{"GitHub fine-grained token", `\bgithub_pat_[A-Za-z0-9_]{40,}`, []string{"github_pat_"}},
	{"GitLab token", `\bgl(?:pat|ptt|rt|dt)-[A-Za-z0-9_\-]{20,}`, []string{"glpat-", "glptt-", "glrt-", "gldt-"}},
	{"OpenAI or Anthropic key", `\bsk-[A-Za-z0-9_\-]{20,}`, []string{"sk-"}},
	{"Stripe key", `\b(?:[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})`, []string{"k_live_", "k_test_", "whsec_"}},
	{"Slack token", `\b(?:xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`, []string{"xox", "xapp-"}},
	{"Slack webhook", `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+`, []string{"hooks.slack.com"}},
	{"Google API key", `\bAIza[0-9A-Za-z_\-]{35}`, []string{"AIza"}},
	{"Google OAuth token or client secret", `\b(?:ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{20,})`, []string{"ya29.", "GOCSPX-"}},
	{"npm or Hugging Face token", `\b(?:npm_[A-Za-z0-9]{36}|hf_[A-Za-z]{30,})\b`, []string{"npm_", "hf_"}},
	{"JWT", `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, []string{"eyJ"}},
}

// A format is one way to find secrets: a regular expression whose matches
// are replaced by repl (a template; "" means the marker alone). A match
// never spans lines, and holds one of hint (in the text with ASCII letters
// lower-cased when fold is set): only the lines that hold a hint are
// searched, so most text costs one fast substring search per hint.
type format struct {
	name string
	re   *regexp.Regexp
	repl string
	hint []string
	fold bool
	// keep, when set, spares a match whose value (last group) it accepts
	// and whose quote (the group before) is empty.
	keep func(value string) bool
}

var secretFormats = []format{
	tokenFormat(),
	{name: "bearer token", re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{16,}=*`), repl: "${1}" + marker,
		hint: []string{"bearer"}, fold: true},
	{name: "authorization header", re: regexp.MustCompile(`(?i)\b(authorization["']?\s*[:=]\s*["']?(?:basic|token|digest)\s+)[A-Za-z0-9\-._~+/]{8,}=*`),
		repl: "${1}" + marker, hint: []string{"authorization"}, fold: true},
	{name: "password in a URL", re: regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]{3,}@`), repl: "${1}" + marker + "@",
		hint: []string{"://"}},
	// name = value, name: value, "name": "value", --name=value, for names
	// that say they hold a secret. The match starts at the telling word;
	// what comes before it in the name stays as it was. PWD alone is the
	// shell's working directory; DB_PWD is a password.
	{name: "assignment", re: regexp.MustCompile(`(?i)((?:secret|token|passw(?:or)?d|[_.\-]pwd|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?)(?:[_.\-][a-z0-9]+)*["']?\s*[:=]\s*(["']?))([A-Za-z0-9/+_\-.=~!@#$%^&*]{8,})`),
		repl: "${1}" + marker, hint: []string{"secret", "token", "passw", "pwd", "key", "credential"}, fold: true, keep: looksLikeCode},
}

// tokenFormat is every token in one expression: one pass finds them all.
func tokenFormat() format {
	f := format{name: "tokens"}
	exprs := make([]string, len(tokens))
	for i, t := range tokens {
		exprs[i] = "(?:" + t.expr + ")"
		f.hint = append(f.hint, t.hint...)
	}
	f.re = regexp.MustCompile(strings.Join(exprs, "|"))
	return f
}

// looksLikeCode keeps an unquoted assignment whose value reads as a name in
// a program (token = nextToken, password = form.value): no digit, no
// symbol, and short. A quoted value, or one with a digit or a symbol, is a
// literal, and goes.
func looksLikeCode(v string) bool {
	if len(v) >= 24 {
		return false
	}
	return !strings.ContainsAny(v, "0123456789/+=!@#%^&*~")
}

// applyFormats redacts private keys, then every format, in order.
func applyFormats(s string) string {
	s = privateKeys(s)
	lower := "" // s lower-cased, while s is unchanged
	for _, f := range secretFormats {
		in := s
		if f.fold {
			if lower == "" {
				lower = asciiLower(s)
			}
			in = lower
		}
		if out := f.apply(s, in); out != s {
			s, lower = out, ""
		}
	}
	return s
}

// apply runs f over the lines of s that hold one of its hints; in is s,
// lower-cased when f folds case.
func (f format) apply(s, in string) string {
	next := make([]int, len(f.hint)) // where each hint next occurs at or after done; -1: never again
	for i, h := range f.hint {
		next[i] = strings.Index(in, h)
	}
	var b strings.Builder
	done := 0
	for {
		at := -1
		for i, h := range f.hint {
			if next[i] >= 0 && next[i] < done {
				if j := strings.Index(in[done:], h); j >= 0 {
					next[i] = done + j
				} else {
					next[i] = -1
				}
			}
			if next[i] >= 0 && (at < 0 || next[i] < at) {
				at = next[i]
			}
		}
		if at < 0 {
			break
		}
		start := strings.LastIndexByte(s[:at], '\n') + 1
		end := len(s)
		if j := strings.IndexByte(s[at:], '\n'); j >= 0 {
			end = at + j + 1
		}
		b.WriteString(s[done:start])
		b.WriteString(f.replace(s[start:end]))
		done = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// replace redacts f's matches in one line.
func (f format) replace(line string) string {
	switch {
	case f.keep != nil:
		return f.replaceUnless(line)
	case f.repl == "":
		return f.re.ReplaceAllLiteralString(line, marker)
	default:
		return f.re.ReplaceAllString(line, f.repl)
	}
}

// replaceUnless replaces f's matches except those f.keep spares.
func (f format) replaceUnless(s string) string {
	idx := f.re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		n := len(m)
		quote, value := s[m[n-4]:m[n-3]], s[m[n-2]:m[n-1]]
		if quote == "" && f.keep(value) {
			continue
		}
		b.WriteString(s[last:m[n-2]])
		b.WriteString(marker)
		last = m[n-1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// asciiLower lower-cases ASCII letters only, so every byte keeps its offset.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Private keys span lines. A block is redacted whole; one cut off at the
// end of the text (a truncated log) from its BEGIN line on; one whose
// beginning was cut off (the tail of a long output) from the base64 lines
// before its END line.
var (
	pemLabel = regexp.MustCompile(`-----(?:BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	pemBlock = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	pemCut   = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(\r?\n?)\z`)
)

const pemBegin = "-----BEGIN "

// pemHeader is a header line inside a key block (Proc-Type, DEK-Info, Version).
var pemHeader = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*: `)

func privateKeys(s string) string {
	if !strings.Contains(s, "PRIVATE KEY") {
		return s
	}
	s = pemBlock.ReplaceAllLiteralString(s, marker)
	s = pemCut.ReplaceAllString(s, marker+"${1}")
	// What is left of END lines closes a key whose beginning is not here.
	locs := pemLabel.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		if strings.HasPrefix(s[loc[0]:], pemBegin) {
			continue
		}
		start := loc[0]
		// Take in each whole line of base64 right before the END line.
		for start > last && s[start-1] == '\n' {
			prev := strings.LastIndexByte(s[last:start-1], '\n') + 1 + last
			if !isBase64Line(s[prev : start-1]) {
				break
			}
			start = prev
		}
		if start == loc[0] {
			continue // no key material before it: the label alone is no secret
		}
		b.WriteString(s[last:start])
		b.WriteString(marker)
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func isBase64Line(l string) bool {
	l = strings.TrimSuffix(l, "\r")
	if l == "" {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// Stream redacts text that arrives a line at a time, such as a worker's
// output. A private key spans lines: from the line that opens one to the
// line that closes it, its lines (base64, blank, or headers such as
// Proc-Type) are dropped; any other line ends the key. Not safe for
// concurrent use.
type Stream struct {
	r     *Redactor
	inKey bool
}

// Stream returns a line-at-a-time redactor over r.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Line redacts one line (with its newline, if any). Inside a private key it
// returns "" for each line up to the one that closes the key.
func (s *Stream) Line(line string) string {
	if s.inKey {
		end := -1
		for _, loc := range pemLabel.FindAllStringIndex(line, -1) {
			if !strings.HasPrefix(line[loc[0]:], pemBegin) {
				end = loc[1]
				break
			}
		}
		body := strings.TrimRight(line, "\r\n")
		switch {
		case end >= 0:
			s.inKey = false
			line = line[end:]
			if strings.TrimRight(line, "\r\n") == "" {
				return ""
			}
		case body == "" || isBase64Line(body) || pemHeader.MatchString(body):
			return ""
		default:
			// Not key material: the label was not a key's (a grep for it,
			// a message that names it). Stop dropping lines.
			s.inKey = false
		}
	}
	// Does the line open a key it does not close?
	if locs := pemLabel.FindAllStringIndex(line, -1); len(locs) > 0 {
		lastLoc := locs[len(locs)-1]
		s.inKey = strings.HasPrefix(line[lastLoc[0]:], pemBegin)
	}
	return s.r.String(line)
}
