package install

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/hub-agents/hub/internal/tomltext"
)

// The TOML editor adds, updates and removes one table ([mcp_servers.hub])
// in Codex's config.toml and keeps every other byte as it was. go-toml
// reads the file: its decoder refuses what is not TOML (so nothing is
// written over a file Codex could not read) and decodes hub's entry; its
// parser (package unstable, whose scanners the decoder reads with too)
// tells where each table and each key/value line starts and ends, which
// is all the splice needs to know. tomltext writes hub's lines.

// tomlDoc is a file read: its tables in file order, the root first.
type tomlDoc struct {
	src    []byte
	data   map[string]any // the whole file decoded
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

// tomlKV is one key = value line (its value may span lines).
type tomlKV struct {
	key      []string // dotted keys split
	start    int      // the line's first byte
	keyStart int      // the key's first byte (after the line's indent)
	line     int
	valEnd   int
	end      int // after the line's newline (a trailing comment included)
}

// tomlError is a file go-toml refuses, and where.
type tomlError struct {
	line, column int
	msg          string
}

func (e *tomlError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.column, e.msg)
}

// decodeTOML decodes src as go-toml does; a file it refuses is a
// *tomlError, "line 3, column 2: table a already exists".
func decodeTOML(src []byte) (map[string]any, error) {
	var data map[string]any
	if err := toml.Unmarshal(src, &data); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &tomlError{line, col, strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, err
	}
	if data == nil {
		data = map[string]any{}
	}
	return data, nil
}

// parseTOML reads src: refused when go-toml refuses it, else decoded and
// laid out in tables and key/value lines.
func parseTOML(src []byte) (*tomlDoc, error) {
	data, err := decodeTOML(src)
	if err != nil {
		return nil, err
	}
	d := &tomlDoc{src: src, data: data, tables: []*tomlTable{{}}}
	cur := d.tables[0]
	var p unstable.Parser
	p.Reset(src)
	for p.NextExpression() {
		e := p.Expression()
		// A top-level expression starts its line (blanks aside) and ends
		// it (blanks and a comment aside): the rest of its last line
		// holds no line break of its own.
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first, last := keyParts(e)
			start := lineStart(src, first)
			cur = &tomlTable{path: keys, array: e.Kind == unstable.ArrayTable, start: start,
				line: lineAt(src, start), end: lineEnd(src, last)}
			d.tables = append(d.tables, cur)
		case unstable.KeyValue:
			keys, first, _ := keyParts(e)
			kv := &tomlKV{key: keys, start: lineStart(src, first), keyStart: first, valEnd: int(e.Raw.Offset + e.Raw.Length)}
			kv.line = lineAt(src, kv.start)
			kv.end = lineEnd(src, kv.valEnd)
			cur.kvs = append(cur.kvs, kv)
			cur.end = kv.end
		}
	}
	if err := p.Error(); err != nil {
		// The decoder took what the parser refuses: go-toml disagrees
		// with itself (TestTOMLTestSuite would say so), and the layout
		// cannot be trusted.
		return nil, fmt.Errorf("go-toml decodes the file but its parser refuses it: %v", err)
	}
	return d, nil
}

// keyParts returns the key of a table header or a key/value, and where
// its first part starts and its last part ends.
func keyParts(e *unstable.Node) (keys []string, first, last int) {
	first = -1
	for it := e.Key(); it.Next(); {
		k := it.Node()
		keys = append(keys, string(k.Data))
		if first < 0 {
			first = int(k.Raw.Offset)
		}
		last = int(k.Raw.Offset + k.Raw.Length)
	}
	return keys, first, last
}

// lineStart is the first byte of the line pos is on.
func lineStart(src []byte, pos int) int { return bytes.LastIndexByte(src[:pos], '\n') + 1 }

// lineEnd is just after the line break that ends the line pos is on, or
// the end of the file.
func lineEnd(src []byte, pos int) int {
	if i := bytes.IndexByte(src[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(src)
}

func lineAt(src []byte, pos int) int { return 1 + bytes.Count(src[:pos], []byte("\n")) }

// tomlEntry is the lines of one table, in order: a nil value leaves the key out.
type tomlEntry []field

// text renders the table with its header.
func (e tomlEntry) text(path []string) string {
	var b strings.Builder
	b.WriteString(tomltext.Header(path...))
	for _, f := range e {
		if f.value != nil {
			b.WriteString(tomltext.KeyValue(f.key, f.value))
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
	name := tomltext.Path(path...)
	for _, t := range d.tables {
		for _, kv := range t.kvs {
			full := append(slices.Clone(t.path), kv.key...)
			if hasPrefix(path, full) || (hasPrefix(full, path) && !hasPrefix(t.path, path)) {
				return nil, nil, fmt.Errorf("line %d sets %s with a key rather than a [%s] table; hub install edits only the table form, so change that line by hand or remove it",
					kv.line, tomltext.Path(full...), name)
			}
		}
		if t.path == nil || !(hasPrefix(t.path, path) || (t.array && hasPrefix(path, t.path))) {
			continue
		}
		switch {
		case t.array && len(t.path) <= len(path):
			return nil, nil, fmt.Errorf("line %d makes %s an array of tables ([[%s]]); Codex wants one [%s] table",
				t.line, tomltext.Path(t.path...), tomltext.Path(t.path...), name)
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
	main, subs, err := d.locate(path)
	if err != nil {
		return nil, err
	}
	switch {
	case main == nil && len(subs) == 0:
		return append(append(slices.Clone(src), separator(src)...), entry.text(path)...), nil
	case main == nil:
		// Only sub-tables ([mcp_servers.hub.env]) make the table: it gets
		// its header at the end, and its keys as below.
		src = append(append(slices.Clone(src), separator(src)...), tomltext.Header(path...)...)
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
			want = strings.TrimSuffix(tomltext.KeyValue(f.key, f.value), "\n")
		}
		if len(defs) == 1 && len(subDefs) == 0 && len(defs[0].key) == 1 && want != "" &&
			sameTOML(src[defs[0].keyStart:defs[0].valEnd], []byte(want)) {
			continue // already so, if perhaps written another way
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
			// Replace the key and value in place, keeping the line's
			// indent and comment.
			splices = append(splices, splice{defs[0].keyStart, defs[0].valEnd, strings.TrimPrefix(want, "\n")})
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
		src = applySplices(src, splices)
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
	var spans []splice
	for _, t := range append(subs, main) {
		if t != nil {
			spans = append(spans, tableSplice(src, t))
		}
	}
	// Spans that touch or overlap (a table and the blank line before the
	// next one) are taken out as one.
	slices.SortFunc(spans, func(a, b splice) int { return a.start - b.start })
	var cuts []splice
	for _, s := range spans {
		if n := len(cuts); n > 0 && s.start <= cuts[n-1].end {
			cuts[n-1].end = max(cuts[n-1].end, s.end)
			continue
		}
		cuts = append(cuts, s)
	}
	atEnd := cuts[len(cuts)-1].end == len(src)
	// The separator goes once every table is out: it may be the line
	// break that ends a sub-table's header.
	src = applySplices(src, cuts)
	if atEnd {
		src = dropSeparator(src, prior)
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

// sameTOML reports whether two documents (here, a key = value line
// each) decode to the same values.
func sameTOML(a, b []byte) bool {
	da, errA := decodeTOML(a)
	db, errB := decodeTOML(b)
	return errA == nil && errB == nil && reflect.DeepEqual(da, db)
}

// readTOMLTable returns the table at path as go-toml decodes it (its
// sub-tables as nested maps), or nil when there is no [path] table.
func readTOMLTable(src []byte, path []string) (map[string]any, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	main, _, err := d.locate(path)
	if err != nil || main == nil {
		return nil, err
	}
	v := any(d.data)
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d: %s is not a table", main.line, tomltext.Path(path...))
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("line %d: %s is not a table", main.line, tomltext.Path(path...))
	}
	return m, nil
}
