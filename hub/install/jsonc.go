package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// The JSON editor changes one member of a JSON (or JSONC: comments and
// trailing commas, as OpenCode reads; or JSON with comments alone, as Gemini
// CLI and Qwen Code read) document and leaves every other byte as it was: it
// parses the document (with hujson) only to learn where each value starts
// and ends, then splices text in or out.

// jsonSyntax is what a client's reader allows beyond plain JSON.
type jsonSyntax struct {
	comments       bool // // and /* */
	trailingCommas bool // a comma before } or ]
}

var (
	plainJSON     = jsonSyntax{}
	commentedJSON = jsonSyntax{comments: true}
	jsonc         = jsonSyntax{comments: true, trailingCommas: true}
)

// jsonNode is one value of a document: where it is, and for an object its
// members in file order.
type jsonNode struct {
	kind       byte // '{', '[', '"' or 0 for any other scalar
	start, end int  // the value's bytes, src[start:end]
	members    []*jsonMember
}

// jsonMember is one "key": value of an object.
type jsonMember struct {
	key      string
	keyStart int // the key's opening quote
	value    *jsonNode
	comma    int // the comma after the value, or -1
}

// member returns the object's member named key (nil when absent). A key
// that appears twice is an error: which one a client reads is not ours to guess.
func (n *jsonNode) member(key string) (*jsonMember, error) {
	var found *jsonMember
	for _, m := range n.members {
		if m.key == key {
			if found != nil {
				return nil, fmt.Errorf("the key %q appears twice", key)
			}
			found = m
		}
	}
	return found, nil
}

// parseJSON parses src, which must hold one object (whitespace alone, and
// comments where the syntax allows them, count as an empty document and
// return nil). syn says what it may hold beyond JSON. hujson reads the
// document as JWCC (comments and trailing commas allowed); what syn does
// not allow is refused as the tree is walked, at the place and in the
// words a reader of syn stops with.
func parseJSON(src []byte, syn jsonSyntax) (*jsonNode, error) {
	v, buf, err := readJWCC(src)
	// The document must be an object, whatever else is wrong with it. It
	// starts after the blanks, and after the comments where they are
	// allowed (when hujson read past them).
	start := len(buf) - len(bytes.TrimLeft(buf, " \t\r\n"))
	if syn.comments {
		start = v.StartOffset
		if v.Value == nil && v.BeforeExtra == nil && start == 0 && commentOrBlank(buf) {
			start = -1 // hujson stopped in a comment before the document
		}
	}
	switch {
	case start >= len(buf):
		return nil, nil
	case start >= 0 && buf[start] != '{':
		return nil, errorAt(src, start, "the document is not a JSON object")
	case err != nil:
		return nil, err
	}
	w := jsonWalk{src: src, syn: syn}
	root, err := w.value(&v, 0)
	if err != nil {
		return nil, err
	}
	if err := w.extra(v.AfterExtra, v.EndOffset, "unexpected '/' after the end of the document"); err != nil {
		return nil, err
	}
	return root, nil
}

// commentOrBlank reports whether b starts with a blank or a comment.
func commentOrBlank(b []byte) bool {
	return len(b) > 0 && strings.IndexByte(" \t\r\n", b[0]) >= 0 || bytes.HasPrefix(b, []byte("//")) || bytes.HasPrefix(b, []byte("/*"))
}

// errorAt is an error at src[pos].
func errorAt(src []byte, pos int, format string, args ...any) error {
	line, col := lineCol(src, pos)
	return fmt.Errorf("line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(src []byte, pos int) (int, int) {
	pos = min(pos, len(src))
	line := 1 + bytes.Count(src[:pos], []byte("\n"))
	return line, pos - (bytes.LastIndexByte(src[:pos], '\n') + 1) + 1
}

// jsonWalk turns hujson's tree into jsonNodes, refusing what its syntax
// does not allow.
type jsonWalk struct {
	src []byte
	syn jsonSyntax
}

const maxJSONDepth = 200

// extra refuses a comment in e, which starts at src[off], when the syntax
// allows none.
func (w jsonWalk) extra(e hujson.Extra, off int, format string, args ...any) error {
	if i := bytes.IndexByte(e, '/'); i >= 0 && !w.syn.comments {
		return errorAt(w.src, off+i, format, args...)
	}
	return nil
}

// notValue is the error for src[pos] where a value at depth should start.
func (w jsonWalk) notValue(pos, depth int) error {
	if depth > maxJSONDepth {
		return errorAt(w.src, pos, "values nest too deep")
	}
	return errorAt(w.src, pos, "unexpected %q where a value should be", w.src[pos])
}

// valueExtra refuses a comment in e, which starts at src[off], where a
// value at depth should start.
func (w jsonWalk) valueExtra(e hujson.Extra, off, depth int) error {
	if i := bytes.IndexByte(e, '/'); i >= 0 && !w.syn.comments {
		return w.notValue(off+i, depth)
	}
	return nil
}

func (w jsonWalk) value(v *hujson.Value, depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, errorAt(w.src, v.StartOffset, "values nest too deep")
	}
	n := &jsonNode{start: v.StartOffset, end: v.EndOffset}
	switch x := v.Value.(type) {
	case *hujson.Object:
		n.kind = '{'
		return n, w.object(n, x, depth)
	case *hujson.Array:
		n.kind = '['
		return n, w.array(n, x, depth)
	}
	if w.src[n.start] == '"' {
		n.kind = '"'
	}
	return n, nil
}

func (w jsonWalk) object(n *jsonNode, obj *hujson.Object, depth int) error {
	for i := range obj.Members {
		name, val := &obj.Members[i].Name, &obj.Members[i].Value
		if err := w.extra(name.BeforeExtra, name.StartOffset-len(name.BeforeExtra), "expected a quoted key"); err != nil {
			return err
		}
		m := &jsonMember{keyStart: name.StartOffset, comma: -1}
		if raw := w.src[name.StartOffset:name.EndOffset]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			m.key = string(raw[1 : len(raw)-1])
		} else if err := json.Unmarshal(raw, &m.key); err != nil {
			return errorAt(w.src, name.StartOffset, "bad key: %v", err)
		}
		if err := w.extra(name.AfterExtra, name.EndOffset, "expected : after the key %q", m.key); err != nil {
			return err
		}
		if err := w.valueExtra(val.BeforeExtra, val.StartOffset-len(val.BeforeExtra), depth+1); err != nil {
			return err
		}
		var err error
		if m.value, err = w.value(val, depth+1); err != nil {
			return err
		}
		if i < len(obj.Members)-1 || val.AfterExtra != nil { // a comma follows
			if err := w.extra(val.AfterExtra, val.EndOffset, "expected , or } after the value of %q", m.key); err != nil {
				return err
			}
			m.comma = val.EndOffset + len(val.AfterExtra)
		}
		n.members = append(n.members, m)
	}
	closing := n.end - 1
	after := closing - len(obj.AfterExtra)
	if len(n.members) > 0 {
		if last := n.members[len(n.members)-1]; last.comma < 0 {
			return w.extra(obj.AfterExtra, after, "expected , or } after the value of %q", last.key)
		}
	}
	if err := w.extra(obj.AfterExtra, after, "expected a quoted key"); err != nil {
		return err
	}
	if len(n.members) > 0 && !w.syn.trailingCommas {
		return errorAt(w.src, closing, "expected a quoted key")
	}
	return nil
}

func (w jsonWalk) array(n *jsonNode, arr *hujson.Array, depth int) error {
	trailing := false
	for i := range arr.Elements {
		el := &arr.Elements[i]
		if err := w.valueExtra(el.BeforeExtra, el.StartOffset-len(el.BeforeExtra), depth+1); err != nil {
			return err
		}
		if _, err := w.value(el, depth+1); err != nil {
			return err
		}
		if i < len(arr.Elements)-1 || el.AfterExtra != nil { // a comma follows
			if err := w.extra(el.AfterExtra, el.EndOffset, "expected , or ] in an array"); err != nil {
				return err
			}
			trailing = i == len(arr.Elements)-1
		}
	}
	closing := n.end - 1
	after := closing - len(arr.AfterExtra)
	if len(arr.Elements) > 0 && !trailing {
		return w.extra(arr.AfterExtra, after, "expected , or ] in an array")
	}
	if err := w.valueExtra(arr.AfterExtra, after, depth+1); err != nil {
		return err
	}
	if trailing && !w.syn.trailingCommas {
		return w.notValue(closing, depth+1)
	}
	return nil
}

// readJWCC parses src with hujson, returning its tree (as far as it got,
// on an error) and the bytes it read (see jwcc). An error is in hub's
// words, at the place it names.
func readJWCC(src []byte) (hujson.Value, []byte, error) {
	buf := jwcc(src)
	deep, _ := scanJWCC(buf, maxNesting)
	if deep < 0 {
		v, err := hujson.Parse(buf)
		if err != nil {
			_, err = syntaxError(src, buf, err)
		}
		return v, buf, err
	}
	// Parsed no further than it may nest, for an error that comes first.
	v, err := hujson.Parse(buf[:deep])
	if err != nil {
		if pos, err := syntaxError(src, buf, err); pos < deep {
			return v, buf, err
		}
	}
	return v, buf, errorAt(src, deep, "values nest too deep")
}

// jwcc is src as hujson is given it, every byte where it was. The clients'
// readers take any bytes in a comment; hujson takes only UTF-8, and no
// line separators (U+2028, U+2029) in a // comment. Those bytes become
// '#', which hujson takes in a comment or a string (strings are decoded
// from src) and refuses anywhere else, as they would be refused. And a //
// comment that ends the file gets the newline hujson wants after it.
func jwcc(src []byte) []byte {
	buf := make([]byte, len(src), len(src)+1)
	copy(buf, src)
	clean := utf8.Valid(buf) && !bytes.Contains(buf, []byte("\u2028")) && !bytes.Contains(buf, []byte("\u2029"))
	for i := 0; i < len(buf) && !clean; {
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			copy(buf[i:i+size], "###")
		}
		i += size
	}
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	return buf
}

// maxNesting bounds how deep a document may nest for hujson, which
// recurses for each level, to read it: a deep enough one would exhaust the
// stack. No value may be inside more than maxJSONDepth others anyway.
const maxNesting = maxJSONDepth + 1

// scanJWCC reads b as hujson does, as far as b is JWCC, for what hujson
// does not tell: where b first opens more than limit objects and arrays at
// once, and where a string starts that is never closed (each -1 if none).
func scanJWCC(b []byte, limit int) (deep, open int) {
	deep, depth := -1, 0
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			start := i
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return deep, start
			}
		case b[i] == '{' || b[i] == '[':
			if depth++; depth > limit && deep < 0 {
				deep = i
			}
		case b[i] == '}' || b[i] == ']':
			depth--
		case b[i] != '/':
		case bytes.HasPrefix(b[i:], []byte("//")):
			if end := bytes.IndexByte(b[i:], '\n'); end >= 0 {
				i += end
			} else {
				i = len(b)
			}
		case bytes.HasPrefix(b[i:], []byte("/*")):
			if end := bytes.Index(b[i+2:], []byte("*/")); end >= 0 {
				i += 2 + end + 1
			} else {
				i = len(b)
			}
		}
	}
	return deep, -1
}

// syntaxError puts an error of hujson.Parse(buf) in hub's words, and
// returns where it is in src (buf is src as jwcc gave it).
func syntaxError(src, buf []byte, err error) (int, error) {
	var line, col int
	if _, serr := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); serr != nil {
		return len(src), err
	}
	_, msg, _ := strings.Cut(err.Error(), fmt.Sprintf("column %d: ", col))
	pos := 0
	for ; line > 1; line-- {
		pos += bytes.IndexByte(buf[pos:], '\n') + 1
	}
	pos = min(pos+col-1, len(src))
	at := func(format string, args ...any) (int, error) {
		return pos, errorAt(src, pos, format, args...)
	}
	switch {
	case strings.HasPrefix(msg, "parsing comment"):
		return at("a /* comment is never closed")
	case strings.HasPrefix(msg, "parsing string"):
		if _, open := scanJWCC(buf, maxNesting); open >= 0 {
			if pos, err := stringError(src, open); err != nil {
				return pos, err
			}
		}
		return at("a string is never closed")
	case after(msg, "object", "name"):
		return at("expected : after a key")
	case after(msg, "object", "value"):
		return at("expected , or } after a value")
	case after(msg, "array", "value"):
		return at("expected , or ] in an array")
	case strings.Contains(msg, "after top-level value"):
		return at("unexpected %q after the end of the document", src[pos])
	case strings.Contains(msg, "at start of object name"):
		return at("expected a quoted key")
	case strings.HasPrefix(msg, `invalid literal: "`):
		if pos, err := stringError(src, pos); err != nil {
			return pos, err
		}
		return at("a bad string")
	}
	// A value or a key should start at pos (hujson reads both alike): the
	// key makes a value of "" at pos the name of a member.
	_, perr := hujson.Parse(append(buf[:pos:pos], `""`...))
	switch lit, isLit := strings.CutPrefix(msg, "invalid literal: "); {
	case perr != nil && after(perr.Error(), "object", "name"):
		return at("expected a quoted key")
	case pos == len(src):
		return at("the document ends where a value should be")
	case isLit && (src[pos] == '-' || '0' <= src[pos] && src[pos] <= '9'):
		return at("a bad number %q", lit)
	}
	return at("unexpected %q where a value should be", src[pos])
}

// stringError is the error in the string that starts at src[start], at
// the byte encoding/json finds bad, or nil.
func stringError(src []byte, start int) (int, error) {
	var serr *json.SyntaxError
	if !errors.As(json.Unmarshal(src[start:], new(string)), &serr) {
		return start, nil
	}
	bad := start + int(serr.Offset) - 1 // at the end, an escape cut short
	switch msg := serr.Error(); {
	case bad < start || bad >= len(src):
	case strings.Contains(msg, "in string literal"):
		return bad, errorAt(src, bad, "a control character inside a string")
	case strings.Contains(msg, "escape") && bytes.LastIndexByte(src[start:bad], '\\') >= 0:
		esc := start + bytes.LastIndexByte(src[start:bad], '\\')
		if src[esc+1] == 'u' {
			return esc, errorAt(src, esc, "a bad \\u escape")
		}
		return esc, errorAt(src, esc, "a bad escape \\%c", src[esc+1])
	}
	return start, nil
}

// after reports whether hujson's error message is about what comes after
// an object's or array's name or value ("after object name", "parsing
// object after name: unexpected EOF").
func after(msg, what, part string) bool {
	return strings.Contains(msg, "after "+what+" "+part) || strings.Contains(msg, what+" after "+part)
}

// standardJSON is src, a JWCC document or value, as JSON: its comments and
// trailing commas blanked out, every other byte where it was.
func standardJSON(src []byte) ([]byte, error) {
	v, _, err := readJWCC(src)
	if err != nil {
		return nil, err
	}
	v.Standardize()
	out := v.Pack()[:len(src)]
	for i, c := range out {
		if c == '#' { // in a string: what jwcc replaced
			out[i] = src[i]
		}
	}
	return out, nil
}

// splice is one text replacement: src[start:end] becomes text.
type splice struct {
	start, end int
	text       string
}

func applySplice(src []byte, s splice) []byte {
	out := make([]byte, 0, len(src)+len(s.text))
	out = append(out, src[:s.start]...)
	out = append(out, s.text...)
	return append(out, src[s.end:]...)
}

// jsonLayout is how a document is indented, learned from the document.
type jsonLayout struct {
	unit string // one level of indentation
}

func learnLayout(src []byte, root *jsonNode) jsonLayout {
	l := jsonLayout{unit: "  "}
	if root == nil {
		return l
	}
	for _, m := range root.members {
		if ind, ok := lineIndent(src, m.keyStart); ok && ind != "" {
			base, _ := lineIndent(src, root.start)
			if strings.HasPrefix(ind, base) && len(ind) > len(base) {
				l.unit = ind[len(base):]
			}
			break
		}
	}
	return l
}

// lineIndent returns the whitespace that starts pos's line, and whether
// only whitespace comes before pos on that line.
func lineIndent(src []byte, pos int) (string, bool) {
	ls := bytes.LastIndexByte(src[:pos], '\n') + 1
	lead := src[ls:pos]
	ws := len(lead) - len(bytes.TrimLeft(lead, " \t"))
	return string(lead[:ws]), ws == len(lead)
}

// multiline reports whether an object's members go on lines of their own
// rather than on one line. An empty object follows the document: a
// document on one line (`{"a":{}}`) stays on one line.
func multiline(src []byte, obj *jsonNode) bool {
	if len(obj.members) == 0 {
		doc := bytes.TrimSpace(src)
		return bytes.IndexByte(doc, '\n') >= 0 || len(doc) <= 2
	}
	_, own := lineIndent(src, obj.members[0].keyStart)
	return own
}

// memberIndent is the indentation of obj's members.
func memberIndent(src []byte, obj *jsonNode, l jsonLayout) string {
	if len(obj.members) > 0 {
		if ind, own := lineIndent(src, obj.members[0].keyStart); own {
			return ind
		}
	}
	ind, _ := lineIndent(src, obj.start)
	return ind + l.unit
}

// marshal renders v as JSON, indented when indent is set (every line after
// the first starts with prefix), with no HTML escaping.
func marshal(v any, prefix, indent string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(prefix, indent)
	}
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// insertMember returns the splices that add "key": v as obj's last
// member. On lines of their own, the new member goes after the end of the
// last member's line, so a comment there stays with its member; after a
// trailing comma (JSONC) it gets one of its own, to keep the style.
func insertMember(src []byte, obj *jsonNode, key string, v any, l jsonLayout) ([]splice, error) {
	k, err := marshal(key, "", "")
	if err != nil {
		return nil, err
	}
	if !multiline(src, obj) {
		val, err := marshal(v, "", "")
		if err != nil {
			return nil, err
		}
		if len(obj.members) == 0 {
			return []splice{{obj.start + 1, obj.end - 1, k + ":" + val}}, nil
		}
		last := obj.members[len(obj.members)-1]
		if last.comma >= 0 {
			return []splice{{last.comma + 1, last.comma + 1, k + ":" + val}}, nil
		}
		return []splice{{last.value.end, last.value.end, "," + k + ":" + val}}, nil
	}
	ind := memberIndent(src, obj, l)
	val, err := marshal(v, ind, l.unit)
	if err != nil {
		return nil, err
	}
	member := "\n" + ind + k + ": " + val
	if len(obj.members) == 0 {
		inner := src[obj.start+1 : obj.end-1]
		if len(bytes.TrimSpace(inner)) == 0 {
			closing, _ := lineIndent(src, obj.start)
			return []splice{{obj.start + 1, obj.end - 1, member + "\n" + closing}}, nil
		}
		return []splice{{obj.start + 1, obj.start + 1, member}}, nil // keep the comments inside
	}
	last := obj.members[len(obj.members)-1]
	after := last.value.end
	if last.comma >= 0 {
		after = last.comma + 1
	}
	at := restOfLine(src, after)
	if last.comma >= 0 {
		return []splice{{at, at, member + ","}}, nil
	}
	if at == last.value.end {
		return []splice{{at, at, "," + member}}, nil
	}
	return []splice{{last.value.end, last.value.end, ","}, {at, at, member}}, nil
}

// restOfLine returns where pos's line ends when only blanks and comments
// follow pos on it, and pos otherwise.
func restOfLine(src []byte, pos int) int {
	i := pos
	for i < len(src) {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\r':
			i++
		case src[i] == '\n':
			if i > 0 && src[i-1] == '\r' {
				return i - 1
			}
			return i
		case bytes.HasPrefix(src[i:], []byte("//")):
			end := bytes.IndexByte(src[i:], '\n')
			if end < 0 {
				return len(src)
			}
			i += end
		case bytes.HasPrefix(src[i:], []byte("/*")):
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 || bytes.IndexByte(src[i:i+2+end], '\n') >= 0 {
				return pos
			}
			i += 2 + end + 2
		default:
			return pos
		}
	}
	return i
}

// removeMember returns the splices that take member i out of obj, with its
// comma and, when it sits on lines of its own, the line break before it:
// the inverse of insertMember.
func removeMember(src []byte, obj *jsonNode, i int) []splice {
	m := obj.members[i]
	from := m.keyStart
	if _, own := lineIndent(src, m.keyStart); own {
		from = bytes.LastIndexByte(src[:m.keyStart], '\n')
		if from < obj.start {
			from = m.keyStart
		}
	}
	end := m.value.end
	if m.comma >= 0 {
		end = m.comma + 1
	}
	switch {
	case len(obj.members) == 1:
		if len(bytes.TrimSpace(src[obj.start+1:from])) == 0 && len(bytes.TrimSpace(src[end:obj.end-1])) == 0 {
			return []splice{{obj.start + 1, obj.end - 1, ""}} // nothing else inside: {}
		}
		return []splice{{from, end, ""}}
	case m.comma >= 0: // a comma follows: take it along
		return []splice{{from, end, ""}}
	default: // the last member: take the comma before it
		prev := obj.members[i-1]
		return []splice{{prev.comma, prev.comma + 1, ""}, {from, end, ""}}
	}
}

// applySplices makes splices that do not overlap, from the last to the
// first so each offset still holds.
func applySplices(src []byte, ss []splice) []byte {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].start > ss[j].start })
	for _, s := range ss {
		src = applySplice(src, s)
	}
	return src
}

// replaceValue returns the splice that puts v where n is, indented like
// the line n starts on.
func replaceValue(src []byte, n *jsonNode, v any, l jsonLayout, compact bool) (splice, error) {
	ind, _ := lineIndent(src, n.start)
	unit := l.unit
	if compact {
		unit = ""
	}
	val, err := marshal(v, ind, unit)
	if err != nil {
		return splice{}, err
	}
	return splice{n.start, n.end, val}, nil
}

// sameJSON reports whether the raw value means the same as v.
func sameJSON(raw []byte, v any) bool {
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		return false
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return false
	}
	if err := json.Unmarshal(enc, &b); err != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// object is a JSON object whose keys keep their order.
type object []field

type field struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(f.value, "", "")
		if err != nil {
			return nil, err
		}
		b.WriteString(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// stringMap renders a map with its keys in order, as an object.
func stringMap(m map[string]string) object {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o := make(object, 0, len(keys))
	for _, k := range keys {
		o = append(o, field{k, m[k]})
	}
	return o
}

// setJSONEntry makes container.name hold entry, in the document src: the
// container object and the entry are added when missing; an entry already
// there has entry's keys set (added, replaced, or removed when their value
// is nil) and keeps any other key. Each step after a splice re-parses, so
// every splice is made against the bytes it changes.
func setJSONEntry(src []byte, syn jsonSyntax, container, name string, entry object) ([]byte, error) {
	root, err := parseJSON(src, syn)
	if err != nil {
		return nil, err
	}
	if root == nil {
		doc, err := marshal(object{{container, object{{name, present(entry)}}}}, "", "  ")
		if err != nil {
			return nil, err
		}
		return []byte(doc + "\n"), nil
	}
	l := learnLayout(src, root)
	c, err := root.member(container)
	if err != nil {
		return nil, err
	}
	if c == nil {
		ss, err := insertMember(src, root, container, object{{name, present(entry)}}, l)
		if err != nil {
			return nil, err
		}
		return applySplices(src, ss), nil
	}
	if c.value.kind != '{' {
		return nil, fmt.Errorf("%q is not an object", container)
	}
	e, err := c.value.member(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", container, err)
	}
	if e == nil {
		ss, err := insertMember(src, c.value, name, present(entry), l)
		if err != nil {
			return nil, err
		}
		return applySplices(src, ss), nil
	}
	if e.value.kind != '{' {
		s, err := replaceValue(src, e.value, present(entry), l, !multiline(src, c.value))
		if err != nil {
			return nil, err
		}
		return applySplice(src, s), nil
	}
	changed := false
	for _, f := range entry {
		if changed { // parse again after a splice, not before the first
			root, err = parseJSON(src, syn)
			if err != nil {
				return nil, err
			}
			c, _ = root.member(container)
			e, _ = c.value.member(name)
		}
		idx := -1
		for i, m := range e.value.members {
			if m.key == f.key {
				if idx >= 0 {
					return nil, fmt.Errorf("%s.%s: the key %q appears twice", container, name, f.key)
				}
				idx = i
			}
		}
		var ss []splice
		switch {
		case idx < 0 && f.value == nil:
			continue
		case idx < 0:
			if ss, err = insertMember(src, e.value, f.key, f.value, l); err != nil {
				return nil, err
			}
		case f.value == nil:
			ss = removeMember(src, e.value, idx)
		case sameJSON(src[e.value.members[idx].value.start:e.value.members[idx].value.end], f.value):
			continue
		default:
			s, err := replaceValue(src, e.value.members[idx].value, f.value, l, !multiline(src, e.value))
			if err != nil {
				return nil, err
			}
			ss = []splice{s}
		}
		src, changed = applySplices(src, ss), true
	}
	return src, nil
}

// present drops the fields whose value is nil (the ones an entry leaves out).
func present(o object) object {
	out := make(object, 0, len(o))
	for _, f := range o {
		if f.value != nil {
			out = append(out, f)
		}
	}
	return out
}

// removeJSONEntry takes container.name out of src, then the container
// when that left it empty, unless prior (the file before hub first changed
// it; nil when hub made the file) had it. It returns nil when hub made the
// file and nothing is left in it (so the file can go), and src unchanged
// when there is no entry.
func removeJSONEntry(src []byte, syn jsonSyntax, container, name string, prior []byte) ([]byte, error) {
	root, err := parseJSON(src, syn)
	if err != nil || root == nil {
		return src, err
	}
	c, err := root.member(container)
	if err != nil || c == nil || c.value.kind != '{' {
		return src, err
	}
	idx := -1
	for i, m := range c.value.members {
		if m.key == name {
			if idx >= 0 {
				return nil, fmt.Errorf("%s: the key %q appears twice", container, name)
			}
			idx = i
		}
	}
	if idx < 0 {
		return src, nil
	}
	src = applySplices(src, removeMember(src, c.value, idx))
	root, err = parseJSON(src, syn)
	if err != nil {
		return nil, fmt.Errorf("removing %s.%s broke the document (%v); nothing was written", container, name, err)
	}
	c, _ = root.member(container)
	if len(c.value.members) == 0 && len(bytes.TrimSpace(src[c.value.start+1:c.value.end-1])) == 0 && !hadMember(prior, syn, container) {
		for i, m := range root.members {
			if m == c {
				src = applySplices(src, removeMember(src, root, i))
				break
			}
		}
	}
	if prior == nil && bytes.Equal(bytes.Join(bytes.Fields(src), nil), []byte("{}")) {
		return nil, nil
	}
	return src, nil
}

// hadMember reports whether the document src has a top-level key.
func hadMember(src []byte, syn jsonSyntax, key string) bool {
	root, err := parseJSON(src, syn)
	if err != nil || root == nil {
		return false
	}
	m, err := root.member(key)
	return err == nil && m != nil
}

// readJSONEntry returns container.name decoded, or nil when absent.
func readJSONEntry(src []byte, syn jsonSyntax, container, name string) (map[string]any, error) {
	root, err := parseJSON(src, syn)
	if err != nil || root == nil {
		return nil, err
	}
	c, err := root.member(container)
	if err != nil || c == nil {
		return nil, err
	}
	if c.value.kind != '{' {
		return nil, fmt.Errorf("%q is not an object", container)
	}
	e, err := c.value.member(name)
	if err != nil || e == nil {
		return nil, err
	}
	var v any
	std, err := standardJSON(src[e.value.start:e.value.end])
	if err == nil {
		err = json.Unmarshal(std, &v)
	}
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %v", container, name, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not an object", container, name)
	}
	return m, nil
}
