package install

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The TOML editor adds, updates and removes one table ([mcp_servers.hub])
// in Codex's config.toml and keeps every other byte as it was. It parses
// the whole file first, as TOML 1.0 (with TOML 1.1's newlines in inline
// tables allowed), so a malformed file is refused before anything is
// written, and so it knows where each table and key starts and ends.

// tomlDoc is a parsed file: its tables in file order, the root first.
type tomlDoc struct {
	src    []byte
	tables []*tomlTable
}

// tomlTable is a [header] and the key/value lines under it.
type tomlTable struct {
	path  []string // nil for the root
	array bool     // [[header]]
	start int      // the header line's first byte (0 for the root)
	line  int      // the header's line number
	kvs   []*tomlKV
	end   int // the end of the last key/value line, or of the header line
}

// tomlKV is one key = value line.
type tomlKV struct {
	key      []string // dotted keys split
	start    int      // the line's first byte
	line     int
	valStart int
	valEnd   int
	end      int // after the line's newline (a trailing comment included)
	value    any // string, []any, map[string]any, or tomlRaw for any other scalar
}

// tomlRaw is a scalar kept as written: a number, a boolean or a date.
type tomlRaw string

type tomlParser struct {
	src  []byte
	pos  int
	line int
}

func parseTOML(src []byte) (*tomlDoc, error) {
	if !utf8.Valid(src) {
		return nil, fmt.Errorf("the file is not UTF-8")
	}
	p := &tomlParser{src: src, line: 1}
	d := &tomlDoc{src: src, tables: []*tomlTable{{}}}
	cur := d.tables[0]
	seen := map[string]int{} // header path → line, for duplicates
	for {
		p.blank()
		if p.pos >= len(src) {
			break
		}
		switch c := src[p.pos]; {
		case c == '\n' || c == '\r':
			if err := p.newline(); err != nil {
				return nil, err
			}
		case c == '#':
			if err := p.comment(); err != nil {
				return nil, err
			}
		case c == '[':
			t := &tomlTable{start: p.lineStart(), line: p.line}
			p.pos++
			if p.pos < len(src) && src[p.pos] == '[' {
				t.array = true
				p.pos++
			}
			p.blank()
			path, err := p.key()
			if err != nil {
				return nil, err
			}
			t.path = path
			p.blank()
			closing := "]"
			if t.array {
				closing = "]]"
			}
			if !bytes.HasPrefix(src[p.pos:], []byte(closing)) {
				return nil, p.errorf("expected %s to close the table header", closing)
			}
			p.pos += len(closing)
			if err := p.endOfLine(); err != nil {
				return nil, err
			}
			t.end = p.pos
			name := strings.Join(quoteKeys(path), ".")
			if !t.array {
				if l, ok := seen[name]; ok {
					return nil, fmt.Errorf("line %d: the table [%s] is already defined on line %d", t.line, name, l)
				}
				seen[name] = t.line
			}
			d.tables = append(d.tables, t)
			cur = t
		default:
			kv, err := p.keyValue()
			if err != nil {
				return nil, err
			}
			for _, o := range cur.kvs {
				if slices.Equal(o.key, kv.key) {
					return nil, fmt.Errorf("line %d: the key %s is already set on line %d", kv.line, strings.Join(quoteKeys(kv.key), "."), o.line)
				}
			}
			cur.kvs = append(cur.kvs, kv)
			cur.end = kv.end
		}
	}
	return d, nil
}

func (p *tomlParser) errorf(format string, args ...any) error {
	_, col := lineCol(p.src, p.pos)
	return fmt.Errorf("line %d, column %d: %s", p.line, col, fmt.Sprintf(format, args...))
}

func (p *tomlParser) lineStart() int { return bytes.LastIndexByte(p.src[:p.pos], '\n') + 1 }

// blank skips spaces and tabs.
func (p *tomlParser) blank() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *tomlParser) newline() error {
	if p.src[p.pos] == '\r' {
		if p.pos+1 >= len(p.src) || p.src[p.pos+1] != '\n' {
			return p.errorf("a carriage return without a line feed")
		}
		p.pos++
	}
	p.pos++
	p.line++
	return nil
}

func (p *tomlParser) comment() error {
	for p.pos < len(p.src) && p.src[p.pos] != '\n' {
		c := p.src[p.pos]
		if c == '\r' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n' {
			break
		}
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return p.errorf("a control character in a comment")
		}
		p.pos++
	}
	return nil
}

// endOfLine reads the rest of a line after a header or a value: blanks, an
// optional comment and the newline (or the end of the file).
func (p *tomlParser) endOfLine() error {
	p.blank()
	if p.pos < len(p.src) && p.src[p.pos] == '#' {
		if err := p.comment(); err != nil {
			return err
		}
	}
	if p.pos >= len(p.src) {
		return nil
	}
	if c := p.src[p.pos]; c != '\n' && c != '\r' {
		return p.errorf("unexpected %q; one key = value or [table] per line", c)
	}
	return p.newline()
}

func isBare(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// key reads a dotted key.
func (p *tomlParser) key() ([]string, error) {
	var parts []string
	for {
		p.blank()
		if p.pos >= len(p.src) {
			return nil, p.errorf("the file ends where a key should be")
		}
		switch c := p.src[p.pos]; {
		case c == '"':
			if bytes.HasPrefix(p.src[p.pos:], []byte(`"""`)) {
				return nil, p.errorf("a multi-line string cannot be a key")
			}
			s, err := p.basicString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		case c == '\'':
			if bytes.HasPrefix(p.src[p.pos:], []byte(`'''`)) {
				return nil, p.errorf("a multi-line string cannot be a key")
			}
			s, err := p.literalString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		case isBare(c):
			start := p.pos
			for p.pos < len(p.src) && isBare(p.src[p.pos]) {
				p.pos++
			}
			parts = append(parts, string(p.src[start:p.pos]))
		default:
			return nil, p.errorf("unexpected %q where a key should be", c)
		}
		p.blank()
		if p.pos < len(p.src) && p.src[p.pos] == '.' {
			p.pos++
			continue
		}
		return parts, nil
	}
}

func (p *tomlParser) keyValue() (*tomlKV, error) {
	kv := &tomlKV{start: p.lineStart(), line: p.line}
	key, err := p.key()
	if err != nil {
		return nil, err
	}
	kv.key = key
	p.blank()
	if p.pos >= len(p.src) || p.src[p.pos] != '=' {
		return nil, p.errorf("expected = after the key %s", strings.Join(quoteKeys(key), "."))
	}
	p.pos++
	p.blank()
	kv.valStart = p.pos
	if kv.value, err = p.value(0); err != nil {
		return nil, err
	}
	kv.valEnd = p.pos
	if err := p.endOfLine(); err != nil {
		return nil, err
	}
	kv.end = p.pos
	return kv, nil
}

var (
	tomlInt      = regexp.MustCompile(`^([+-]?(0|[1-9](_?[0-9])*)|0x[0-9A-Fa-f](_?[0-9A-Fa-f])*|0o[0-7](_?[0-7])*|0b[01](_?[01])*)$`)
	tomlFloat    = regexp.MustCompile(`^([+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?|[+-]?(inf|nan))$`)
	tomlDate     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	tomlTime     = regexp.MustCompile(`^[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?$`)
	tomlDateTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?([Zz]|[+-][0-9]{2}:[0-9]{2})?$`)
)

const maxTOMLDepth = 100

func (p *tomlParser) value(depth int) (any, error) {
	if depth > maxTOMLDepth {
		return nil, p.errorf("values nest too deep")
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("the file ends where a value should be")
	}
	switch c := p.src[p.pos]; c {
	case '"':
		if bytes.HasPrefix(p.src[p.pos:], []byte(`"""`)) {
			return p.multiBasic()
		}
		return p.basicString()
	case '\'':
		if bytes.HasPrefix(p.src[p.pos:], []byte(`'''`)) {
			return p.multiLiteral()
		}
		return p.literalString()
	case '[':
		return p.array(depth)
	case '{':
		return p.inlineTable(depth)
	}
	start := p.pos
	for p.pos < len(p.src) && (isBare(p.src[p.pos]) || strings.IndexByte("+.:", p.src[p.pos]) >= 0) {
		p.pos++
	}
	tok := string(p.src[start:p.pos])
	// A date and a time may be split by one space: 1979-05-27 07:32:00.
	if tomlDate.MatchString(tok) && p.pos+2 < len(p.src) && p.src[p.pos] == ' ' && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9' {
		save := p.pos
		p.pos++
		for p.pos < len(p.src) && (isBare(p.src[p.pos]) || strings.IndexByte("+.:", p.src[p.pos]) >= 0) {
			p.pos++
		}
		if full := string(p.src[start:p.pos]); tomlDateTime.MatchString(full) {
			return tomlRaw(full), nil
		}
		p.pos = save
	}
	switch {
	case tok == "true" || tok == "false", tomlInt.MatchString(tok), tomlFloat.MatchString(tok),
		tomlDate.MatchString(tok), tomlTime.MatchString(tok), tomlDateTime.MatchString(tok):
		return tomlRaw(tok), nil
	case tok == "":
		return nil, p.errorf("unexpected %q where a value should be", p.src[start])
	}
	p.pos = start
	return nil, p.errorf("%q is not a TOML value (strings need quotes)", tok)
}

// skipFill skips blanks, newlines and comments, as allowed inside arrays.
func (p *tomlParser) skipFill() error {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t':
			p.pos++
		case '\n', '\r':
			if err := p.newline(); err != nil {
				return err
			}
		case '#':
			if err := p.comment(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

func (p *tomlParser) array(depth int) ([]any, error) {
	p.pos++ // [
	out := []any{}
	for {
		if err := p.skipFill(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if err := p.skipFill(); err != nil {
			return nil, err
		}
		switch {
		case p.pos < len(p.src) && p.src[p.pos] == ',':
			p.pos++
		case p.pos < len(p.src) && p.src[p.pos] == ']':
			p.pos++
			return out, nil
		default:
			return nil, p.errorf("expected , or ] in an array")
		}
	}
}

func (p *tomlParser) inlineTable(depth int) (map[string]any, error) {
	p.pos++ // {
	out := map[string]any{}
	for {
		if err := p.skipFill(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			return out, nil
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		p.blank()
		if p.pos >= len(p.src) || p.src[p.pos] != '=' {
			return nil, p.errorf("expected = after the key %s", strings.Join(quoteKeys(key), "."))
		}
		p.pos++
		p.blank()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := setPath(out, key, v); err != nil {
			return nil, p.errorf("%v", err)
		}
		if err := p.skipFill(); err != nil {
			return nil, err
		}
		switch {
		case p.pos < len(p.src) && p.src[p.pos] == ',':
			p.pos++
		case p.pos < len(p.src) && p.src[p.pos] == '}':
			p.pos++
			return out, nil
		default:
			return nil, p.errorf("expected , or } in an inline table")
		}
	}
}

// setPath sets a dotted key in a table, refusing to set one twice.
func setPath(m map[string]any, key []string, v any) error {
	for _, k := range key[:len(key)-1] {
		next, ok := m[k]
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		sub, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("the key %s is already set", k)
		}
		m = sub
	}
	last := key[len(key)-1]
	if _, ok := m[last]; ok {
		return fmt.Errorf("the key %s is already set", last)
	}
	m[last] = v
	return nil
}

func (p *tomlParser) basicString() (string, error) {
	p.pos++ // "
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("a string is never closed on its line")
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", p.errorf("a control character inside a string")
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf("a string is never closed")
}

// escape reads one backslash escape into b.
func (p *tomlParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.src) {
		return p.errorf("the file ends inside a string")
	}
	e := p.src[p.pos+1]
	simple := map[byte]byte{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}
	if r, ok := simple[e]; ok {
		b.WriteByte(r)
		p.pos += 2
		return nil
	}
	n := map[byte]int{'u': 4, 'U': 8}[e]
	if n == 0 {
		return p.errorf("a bad escape \\%c", e)
	}
	if p.pos+2+n > len(p.src) || !isHex(p.src[p.pos+2:p.pos+2+n]) {
		return p.errorf("a bad \\%c escape", e)
	}
	v, _ := strconv.ParseUint(string(p.src[p.pos+2:p.pos+2+n]), 16, 32)
	if !utf8.ValidRune(rune(v)) {
		return p.errorf("\\%c escape of an invalid code point", e)
	}
	b.WriteRune(rune(v))
	p.pos += 2 + n
	return nil
}

func (p *tomlParser) literalString() (string, error) {
	p.pos++ // '
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\'':
			p.pos++
			return string(p.src[start : p.pos-1]), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("a string is never closed on its line")
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", p.errorf("a control character inside a string")
		}
		p.pos++
	}
	return "", p.errorf("a string is never closed")
}

func (p *tomlParser) multiBasic() (string, error) {
	p.pos += 3
	if err := p.skipFirstNewline(); err != nil {
		return "", err
	}
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case bytes.HasPrefix(p.src[p.pos:], []byte(`"""`)):
			// Up to two more quotes belong to the string: """a"""""
			extra := 0
			for extra < 2 && p.pos+3+extra < len(p.src) && p.src[p.pos+3+extra] == '"' {
				extra++
			}
			b.WriteString(strings.Repeat(`"`, extra))
			p.pos += 3 + extra
			return b.String(), nil
		case c == '\\':
			// A backslash at the end of a line trims the line break and
			// the blanks after it.
			j := p.pos + 1
			for j < len(p.src) && (p.src[j] == ' ' || p.src[j] == '\t') {
				j++
			}
			if j < len(p.src) && (p.src[j] == '\n' || p.src[j] == '\r') {
				p.pos = j
				for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
					if p.src[p.pos] == '\n' || p.src[p.pos] == '\r' {
						if err := p.newline(); err != nil {
							return "", err
						}
						continue
					}
					p.pos++
				}
				continue
			}
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c == '\n' || c == '\r':
			if err := p.newline(); err != nil {
				return "", err
			}
			b.WriteByte('\n')
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", p.errorf("a control character inside a string")
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf(`a """ string is never closed`)
}

func (p *tomlParser) multiLiteral() (string, error) {
	p.pos += 3
	if err := p.skipFirstNewline(); err != nil {
		return "", err
	}
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case bytes.HasPrefix(p.src[p.pos:], []byte(`'''`)):
			extra := 0
			for extra < 2 && p.pos+3+extra < len(p.src) && p.src[p.pos+3+extra] == '\'' {
				extra++
			}
			b.WriteString(strings.Repeat(`'`, extra))
			p.pos += 3 + extra
			return b.String(), nil
		case c == '\n' || c == '\r':
			if err := p.newline(); err != nil {
				return "", err
			}
			b.WriteByte('\n')
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", p.errorf("a control character inside a string")
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf(`a ''' string is never closed`)
}

func (p *tomlParser) skipFirstNewline() error {
	if p.pos < len(p.src) && (p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		return p.newline()
	}
	return nil
}

// quoteKeys writes each key as TOML does: bare when it can be.
func quoteKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = tomlKey(k)
	}
	return out
}

func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return tomlString(k)
		}
	}
	return k
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlValue writes a string, a list of strings, a number or a string map
// (as an inline table with its keys in order).
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case int:
		return strconv.Itoa(v)
	case map[string]string:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = tomlKey(k) + " = " + tomlString(v[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	panic(fmt.Sprintf("install: no TOML form for %T", v))
}

// tomlEntry is the lines of one table, in order: a nil value leaves the key out.
type tomlEntry []field

// text renders the table with its header.
func (e tomlEntry) text(path []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\n", strings.Join(quoteKeys(path), "."))
	for _, f := range e {
		if f.value != nil {
			fmt.Fprintf(&b, "%s = %s\n", tomlKey(f.key), tomlValue(f.value))
		}
	}
	return b.String()
}

// hasPrefix reports whether path starts with prefix.
func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// locate finds the table at path and its sub-tables, and refuses a file
// that defines path any other way (dotted keys, an inline table, an array
// of tables), which a textual edit could not keep consistent.
func (d *tomlDoc) locate(path []string) (main *tomlTable, subs []*tomlTable, err error) {
	name := strings.Join(quoteKeys(path), ".")
	for _, t := range d.tables {
		for _, kv := range t.kvs {
			full := append(slices.Clone(t.path), kv.key...)
			if hasPrefix(path, full) || (hasPrefix(full, path) && !hasPrefix(t.path, path)) {
				return nil, nil, fmt.Errorf("line %d sets %s with a key rather than a [%s] table; hub install edits only the table form, so change that line by hand or remove it",
					kv.line, strings.Join(quoteKeys(full), "."), name)
			}
		}
		if t.path == nil || !(hasPrefix(t.path, path) || (t.array && hasPrefix(path, t.path))) {
			continue
		}
		switch {
		case t.array && len(t.path) <= len(path):
			return nil, nil, fmt.Errorf("line %d makes %s an array of tables ([[%s]]); Codex wants one [%s] table",
				t.line, strings.Join(quoteKeys(t.path), "."), strings.Join(quoteKeys(t.path), "."), name)
		case len(t.path) == len(path):
			main = t
		default:
			subs = append(subs, t)
		}
	}
	return main, subs, nil
}

// setTOMLTable makes the table at path hold entry's keys: it appends the
// table when missing; in a table already there it sets each of entry's
// keys (replaced in place, added after the table's last key, or removed
// when nil, sub-tables of that key too) and keeps every other line.
func setTOMLTable(src []byte, path []string, entry tomlEntry) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	main, _, err := d.locate(path)
	if err != nil {
		return nil, err
	}
	if main == nil {
		return append(append(slices.Clone(src), separator(src)...), entry.text(path)...), nil
	}
	for _, f := range entry {
		d, err := parseTOML(src)
		if err != nil {
			return nil, err
		}
		main, subs, _ := d.locate(path)
		var defs []*tomlKV
		for _, kv := range main.kvs {
			if kv.key[0] == f.key {
				defs = append(defs, kv)
			}
		}
		var subDefs []*tomlTable
		for _, t := range subs {
			if t.path[len(path)] == f.key {
				subDefs = append(subDefs, t)
			}
		}
		want := ""
		if f.value != nil {
			want = tomlKey(f.key) + " = " + tomlValue(f.value)
		}
		if len(defs) == 1 && len(subDefs) == 0 && len(defs[0].key) == 1 && want != "" &&
			string(bytes.TrimSpace(src[defs[0].start:defs[0].valEnd])) == want {
			continue // already so
		}
		if len(defs) == 0 && len(subDefs) == 0 && want == "" {
			continue
		}
		var splices []splice
		at := main.end // where a new line goes: after the table's last line
		if main.end > 0 && src[main.end-1] != '\n' {
			want = "\n" + want
		}
		if len(defs) == 1 && len(defs[0].key) == 1 && want != "" {
			// Replace the value in place, keeping the line's comment.
			splices = append(splices, splice{defs[0].start, defs[0].valEnd, strings.TrimPrefix(want, "\n")})
			want = ""
		} else {
			for _, kv := range defs {
				splices = append(splices, splice{kv.start, kv.end, ""})
			}
		}
		for _, t := range subDefs {
			splices = append(splices, tableSplice(src, t))
		}
		if want != "" {
			splices = append(splices, splice{at, at, want + "\n"})
		}
		// From the last to the first, so earlier offsets stay right.
		sort.SliceStable(splices, func(i, j int) bool { return splices[i].start > splices[j].start })
		for _, s := range splices {
			src = applySplice(src, s)
		}
	}
	return src, nil
}

// separator is what goes between a file's text and a block appended to
// it: a blank line, and the line break the file may lack. dropSeparator
// undoes it for a file that ended with a line break.
func separator(src []byte) string {
	switch {
	case len(src) == 0:
		return ""
	case bytes.HasSuffix(src, []byte("\n")):
		return "\n"
	}
	return "\n\n"
}

// dropSeparator undoes separator on a file whose block at the end was
// just removed; prior (the file before hub first changed it) tells
// whether it ended with a line break.
func dropSeparator(src, prior []byte) []byte {
	if bytes.HasSuffix(src, []byte("\n\n")) {
		src = src[:len(src)-1]
	}
	if len(prior) > 0 && !bytes.HasSuffix(prior, []byte("\n")) && bytes.HasSuffix(src, []byte("\n")) {
		src = src[:len(src)-1]
	}
	return src
}

// removeTOMLTable takes the table at path and its sub-tables out of src,
// with the blank line that set it apart at the end of the file. It returns
// nil when hub made the file (prior, the file before hub first changed it,
// is nil) and nothing but blanks is left, so the file can go; and src
// unchanged when there is no table.
func removeTOMLTable(src []byte, path []string, prior []byte) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	main, subs, err := d.locate(path)
	if err != nil {
		return nil, err
	}
	if main == nil && len(subs) == 0 {
		return src, nil
	}
	var splices []splice
	for _, t := range append(subs, main) {
		if t != nil {
			splices = append(splices, tableSplice(src, t))
		}
	}
	sort.SliceStable(splices, func(i, j int) bool { return splices[i].start > splices[j].start })
	for _, s := range splices {
		src = applySplice(src, s)
		if s.start == len(src) { // it was the end of the file
			src = dropSeparator(src, prior)
		}
	}
	if prior == nil && len(bytes.TrimSpace(src)) == 0 {
		return nil, nil
	}
	return src, nil
}

// tableSplice is the splice that takes a table out, with one blank line
// that set it apart from the text around it (at the end of the file,
// dropSeparator sees to that).
func tableSplice(src []byte, t *tomlTable) splice {
	s := splice{t.start, t.end, ""}
	switch {
	case len(bytes.TrimSpace(src[t.end:])) == 0:
	case t.start == 0:
		for s.end < len(src) && src[s.end] == '\n' {
			s.end++
		}
	case bytes.HasSuffix(src[:t.start], []byte("\n\n")):
		s.start--
	}
	return s
}

// readTOMLTable returns the table at path decoded (its sub-tables as
// nested maps), or nil when absent.
func readTOMLTable(src []byte, path []string) (map[string]any, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	main, subs, err := d.locate(path)
	if err != nil || main == nil {
		return nil, err
	}
	out := map[string]any{}
	for _, t := range append([]*tomlTable{main}, subs...) {
		m := out
		for _, k := range t.path[len(path):] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		for _, kv := range t.kvs {
			if err := setPath(m, kv.key, kv.value); err != nil {
				return nil, fmt.Errorf("line %d: %v", kv.line, err)
			}
		}
	}
	return out, nil
}
