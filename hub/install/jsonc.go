package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// The JSON editor changes one member of a JSON (or JSONC: comments and
// trailing commas, as OpenCode reads; or JSON with comments alone, as Gemini
// CLI and Qwen Code read) document and leaves every other byte as it was: it
// parses the document only to learn where each value starts and ends, then
// splices text in or out.

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

type jsonParser struct {
	src []byte
	pos int
	syn jsonSyntax
}

// parseJSON parses src, which must hold one object (whitespace alone counts
// as an empty document and returns nil). syn says what it may hold beyond
// JSON.
func parseJSON(src []byte, syn jsonSyntax) (*jsonNode, error) {
	p := &jsonParser{src: src, syn: syn}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos == len(src) {
		return nil, nil
	}
	if src[p.pos] != '{' {
		return nil, p.errorf("the document is not a JSON object")
	}
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos != len(src) {
		return nil, p.errorf("unexpected %q after the end of the document", src[p.pos])
	}
	return root, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line, col := lineCol(p.src, p.pos)
	return fmt.Errorf("line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(src []byte, pos int) (int, int) {
	pos = min(pos, len(src))
	line := 1 + bytes.Count(src[:pos], []byte("\n"))
	return line, pos - (bytes.LastIndexByte(src[:pos], '\n') + 1) + 1
}

// space skips whitespace and, where the syntax allows them, comments.
func (p *jsonParser) space() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case p.syn.comments && c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case p.syn.comments && c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.errorf("a /* comment is never closed")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

const maxJSONDepth = 200

func (p *jsonParser) value(depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("values nest too deep")
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("the document ends where a value should be")
	}
	n := &jsonNode{start: p.pos}
	switch c := p.src[p.pos]; {
	case c == '{':
		n.kind = '{'
		if err := p.object(n, depth); err != nil {
			return nil, err
		}
	case c == '[':
		n.kind = '['
		if err := p.array(depth); err != nil {
			return nil, err
		}
	case c == '"':
		n.kind = '"'
		if err := p.str(); err != nil {
			return nil, err
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.src[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				n.end = p.pos
				return n, nil
			}
		}
		return nil, p.errorf("unexpected %q", c)
	case c == '-' || (c >= '0' && c <= '9'):
		if err := p.number(); err != nil {
			return nil, err
		}
	default:
		return nil, p.errorf("unexpected %q where a value should be", c)
	}
	n.end = p.pos
	return n, nil
}

func (p *jsonParser) object(n *jsonNode, depth int) error {
	p.pos++ // {
	for {
		if err := p.space(); err != nil {
			return err
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' && (len(n.members) == 0 || p.syn.trailingCommas) {
			p.pos++
			return nil
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return p.errorf("expected a quoted key")
		}
		m := &jsonMember{keyStart: p.pos, comma: -1}
		if err := p.str(); err != nil {
			return err
		}
		if err := json.Unmarshal(p.src[m.keyStart:p.pos], &m.key); err != nil {
			return p.errorf("bad key: %v", err)
		}
		if err := p.space(); err != nil {
			return err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return p.errorf("expected : after the key %q", m.key)
		}
		p.pos++
		if err := p.space(); err != nil {
			return err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		m.value = v
		n.members = append(n.members, m)
		if err := p.space(); err != nil {
			return err
		}
		switch {
		case p.pos < len(p.src) && p.src[p.pos] == ',':
			m.comma = p.pos
			p.pos++
		case p.pos < len(p.src) && p.src[p.pos] == '}':
			p.pos++
			return nil
		default:
			return p.errorf("expected , or } after the value of %q", m.key)
		}
	}
}

func (p *jsonParser) array(depth int) error {
	p.pos++ // [
	for first := true; ; first = false {
		if err := p.space(); err != nil {
			return err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' && (first || p.syn.trailingCommas) {
			p.pos++
			return nil
		}
		if _, err := p.value(depth + 1); err != nil {
			return err
		}
		if err := p.space(); err != nil {
			return err
		}
		switch {
		case p.pos < len(p.src) && p.src[p.pos] == ',':
			p.pos++
		case p.pos < len(p.src) && p.src[p.pos] == ']':
			p.pos++
			return nil
		default:
			return p.errorf("expected , or ] in an array")
		}
	}
}

func (p *jsonParser) str() error {
	p.pos++ // "
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c < 0x20:
			return p.errorf("a control character inside a string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return p.errorf("the document ends inside a string")
			}
			switch e := p.src[p.pos+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > len(p.src) || !isHex(p.src[p.pos+2:p.pos+6]) {
					return p.errorf("a bad \\u escape")
				}
				p.pos += 6
			default:
				return p.errorf("a bad escape \\%c", e)
			}
		default:
			p.pos++
		}
	}
	return p.errorf("a string is never closed")
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (p *jsonParser) number() error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.errorf("a bad number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.errorf("a bad number %q", p.src[start:p.pos])
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.errorf("a bad number %q", p.src[start:p.pos])
		}
	}
	return nil
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
// is nil) and keeps any other key. Each step re-parses, so every splice is
// made against the bytes it changes.
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
	for _, f := range entry {
		root, err := parseJSON(src, syn)
		if err != nil {
			return nil, err
		}
		c, _ := root.member(container)
		e, _ := c.value.member(name)
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
		src = applySplices(src, ss)
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
	if err := json.Unmarshal(stripJSONC(src[e.value.start:e.value.end]), &v); err != nil {
		return nil, fmt.Errorf("%s.%s: %v", container, name, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not an object", container, name)
	}
	return m, nil
}

// stripJSONC blanks out comments and trailing commas, so encoding/json can
// read a JSONC value.
func stripJSONC(src []byte) []byte {
	out := append([]byte{}, src...)
	blank := func(from, to int) {
		for j := from; j < to && j < len(out); j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	skipString := func(i int) int { // i is at the opening quote; returns the closing one
		for i++; i < len(out) && out[i] != '"'; i++ {
			if out[i] == '\\' {
				i++
			}
		}
		return i
	}
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			i = skipString(i)
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				end = len(out) - i - 2
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		}
	}
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = skipString(i)
		case ',':
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}
