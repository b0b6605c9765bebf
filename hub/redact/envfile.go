package redact

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
)

// EnvFileName reports whether a file's name (its base name) says it is an
// env file of the dotenv kind: .env, .env.<anything> (.env.local,
// .env.production), <anything>.env, or direnv's .envrc and
// .envrc.<anything> (.envrc.local, .envrc.private: the files an .envrc
// commonly sources with source_env_if_exists, where its secrets are kept
// out of the shared one).
func EnvFileName(name string) bool {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	for _, base := range []string{".env", ".envrc"} {
		if name == base || strings.HasPrefix(name, base+".") {
			return true
		}
	}
	return strings.HasSuffix(name, ".env") && len(name) > len(".env")
}

// maxEnvValue is the longest line, and the longest value spanning lines,
// EnvFileValues reads: a longer line is skipped, and a longer value is read
// as if its quote never closed. No key is that long, and it bounds what is
// held in memory whatever the file's size.
const maxEnvValue = 1 << 20

// EnvFileValues returns the values an env file assigns, to be redacted like
// keys wherever they appear. It reads the shapes of dotenv files and of
// direnv's .envrc: KEY=VALUE lines, with spaces or tabs around = allowed
// and export before KEY; blank lines, # comments and other lines (shell
// commands) are skipped. A value is
//
//   - bare: up to a # after a space or tab (a comment), trimmed; its part
//     before any # as well, where dotenv (Node) ends it;
//   - in double quotes, which take the escapes \" \\ \n \r \t \$ (another
//     backslash stays as it is): the value as most loaders unescape it, as
//     dotenv (Node) does (\n and \r only) and as it is written between the
//     quotes, where these differ, since a program may show any of them;
//   - in single quotes or backticks, which take no escapes.
//
// A quoted value may go on over lines to its closing quote; each of its
// lines counts as a value too, since each may be shown alone, and each is
// read as a line of its own as well. A quote that does not close (before
// the end or within maxEnvValue bytes) leaves a bare value on its line, as
// dotenv reads it. Text after a closing quote is ignored.
//
// Every value counts, whatever its key's name: a file of this kind is
// where secrets live. A value that cannot be a secret is left out: one
// under MinLen bytes (which New ignores too), a boolean (true, false, yes,
// no, on, off) and a number. Each value is returned once. A line it cannot
// read is skipped; it never fails.
func EnvFileValues(data []byte) []string {
	return envValues(bytes.NewReader(data))
}

// ReadEnvFile returns EnvFileValues of the file at path, read whole as a
// stream: memory holds a line, the values found and at most maxEnvValue
// bytes of a value spanning lines, never the file, so a value near the end
// of a file of any size is found. path must name a regular file: a symlink
// is not followed (the caller resolves it, and decides whether to), and
// anything else (a directory, a device, a FIFO), a file it cannot open or
// one changed for another under it gives none. A read error ends the
// reading with the values found so far.
func ReadEnvFile(path string) []string {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !ofi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return nil
	}
	return envValues(f)
}

// quotes are the quotes a value may be in; openValue's kind indexes it.
const quotes = "\"'`"

// envParser reads an env file line by line.
type envParser struct {
	out  []string
	seen map[string]bool
	// open holds, by kind of quote, a value whose quote did not close on
	// its line; nil for none.
	open [len(quotes)]*openValue
}

// openValue is a quoted value read so far, waiting for its closing quote.
type openValue struct {
	q     byte
	first string          // its text on the opening line, after the quote
	body  strings.Builder // its text so far, lines joined by \n
}

func envValues(r io.Reader) []string {
	p := &envParser{seen: map[string]bool{}}
	eachLine(r, p.line)
	for _, o := range p.open {
		if o != nil {
			p.bare(o.first) // never closed
		}
	}
	return p.out
}

// eachLine calls line with each line of r, without its \n or \r\n (and the
// file's UTF-8 byte order mark); a line longer than maxEnvValue is passed
// as long, its text left out.
func eachLine(r io.Reader, line func(text string, long bool)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	first := true
	for {
		long := false
		buf = buf[:0]
		var err error
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			if !long && len(buf)+len(frag) > maxEnvValue+len("\r\n") {
				long = true
			}
			if !long {
				buf = append(buf, frag...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && len(buf) == 0 && !long {
			return // the end, or an error, with no line before it
		}
		text := strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r")
		if first {
			text = strings.TrimPrefix(text, "\ufeff")
			first = false
		}
		if long || len(text) > maxEnvValue {
			text, long = "", true
		}
		line(text, long)
		if err != nil {
			return
		}
	}
}

// line reads one line: first as a further line of each value still open,
// then as a line of its own.
func (p *envParser) line(l string, long bool) {
	for k, o := range p.open {
		if o == nil {
			continue
		}
		switch i := closeQuote(l, o.q); {
		case long || o.body.Len()+1+len(l) > maxEnvValue:
			p.open[k] = nil
			p.bare(o.first)
		case i >= 0:
			p.open[k] = nil
			o.body.WriteByte('\n')
			o.body.WriteString(l[:i])
			p.quoted(o.q, o.body.String())
		default:
			o.body.WriteByte('\n')
			o.body.WriteString(l)
		}
	}
	if !long {
		p.assignment(l)
	}
}

// assignment reads a line as [export] KEY=VALUE.
func (p *envParser) assignment(l string) {
	l = strings.TrimLeft(l, " \t")
	if rest, ok := strings.CutPrefix(l, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		l = strings.TrimLeft(rest, " \t")
	}
	key, v, ok := strings.Cut(l, "=")
	if !ok || !envKey(strings.TrimRight(key, " \t")) {
		return
	}
	v = strings.TrimLeft(v, " \t")
	k := -1
	if v != "" {
		k = strings.IndexByte(quotes, v[0])
	}
	if k < 0 {
		p.bare(v)
		return
	}
	q, body := v[0], v[1:]
	if i := closeQuote(body, q); i >= 0 {
		p.quoted(q, body[:i])
		return
	}
	o := &openValue{q: q, first: body}
	o.body.WriteString(body)
	p.open[k] = o
}

// closeQuote returns the index in s of the quote q that closes a value, or
// -1. In double quotes a backslash escapes the byte after it; a backslash
// ending a line escapes its newline, so each line is scanned afresh.
func closeQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case q:
			return i
		case '\\':
			if q == '"' {
				i++
			}
		}
	}
	return -1
}

// bare keeps an unquoted value: up to a # after a space or tab, and its
// part up to any #, where dotenv (Node) ends it.
func (p *envParser) bare(v string) {
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	v = strings.TrimSpace(v)
	p.keep(v)
	if i := strings.IndexByte(v, '#'); i >= 0 {
		p.keep(strings.TrimSpace(v[:i]))
	}
}

// quoted keeps a quoted value, raw being its text between the quotes.
func (p *envParser) quoted(q byte, raw string) {
	if q == '"' {
		p.keep(unescape(raw))
		p.keep(strings.ReplaceAll(strings.ReplaceAll(raw, `\n`, "\n"), `\r`, "\r")) // dotenv (Node)
	}
	p.keep(raw)
}

// keep adds v, if it may be a secret, and each of its lines, once.
func (p *envParser) keep(v string) {
	p.keep1(v)
	if strings.Contains(v, "\n") {
		for part := range strings.SplitSeq(v, "\n") {
			p.keep1(part)
		}
	}
}

func (p *envParser) keep1(v string) {
	if !p.seen[v] && secretValue(v) {
		p.seen[v] = true
		p.out = append(p.out, v)
	}
}

// escaped maps the byte after a backslash in double quotes to what it
// stands for.
var escaped = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', '$': '$'}

// unescape reads the escapes of a double-quoted value; a backslash before
// another byte stays, as does the byte after it.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if c, ok := escaped[s[i+1]]; ok {
				b.WriteByte(c)
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// envKey accepts a variable name as dotenv files write them.
func envKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c == '.' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// secretValue says whether an env file's value may be a secret.
func secretValue(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < MinLen {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off":
		return false
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	return true
}
