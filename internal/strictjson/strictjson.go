// Package strictjson decodes JSON the way encoding/json does, except that an
// object key that maps to no field of the target type is an error: a
// misspelled key in a file a person wrote ("verfy", "max_runing") is refused,
// naming the key, where it is, the keys there are and the closest one,
// rather than being dropped in silence.
//
// Which keys a struct takes follows encoding/json exactly: exported fields,
// the name of the json tag (or the field's), `json:"-"` left out, the fields
// of untagged embedded structs (and pointers to them) promoted with Go's
// rules for which of two same-named fields wins, and a key matching a name
// case-insensitively when no name matches exactly. The check goes as deep
// as the value does: nested structs, slices, arrays, maps and pointers.
// Where encoding/json takes any value, so does Decode: a json.RawMessage,
// an interface (any) field, the values of a map[string]any, and any type
// that implements json.Unmarshaler (it decides for itself). A map's keys
// are data, not field names, so any key is taken; its values are checked.
//
// Decode returns encoding/json's own error for what encoding/json refuses
// (invalid JSON, a string where a number belongs), and an *UnknownKeyError
// for the first unknown key in document order; v is left untouched when the
// JSON is invalid or a key is unknown.
package strictjson

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// UnknownKeyError is an object key that maps to no field of the type it is
// decoded into.
type UnknownKeyError struct {
	// Path is where the object holding the key is, as a JSON path without
	// the leading "$": "" for the top level, "jobs[1]", "profiles.cheap".
	Path string
	// Key is the unknown key, as written.
	Key string
	// Known are the keys the object takes, in the order the type declares
	// them (empty when it takes none).
	Known []string
	// Suggest is the known key closest to Key when it is close enough to
	// be a likely misspelling, else "".
	Suggest string
}

// KeyPath is Path and Key together: "jobs[1].verfy".
func (e *UnknownKeyError) KeyPath() string { return joinKey(e.Path, e.Key) }

// Error is `unknown key "verfy" in jobs[1] (did you mean "verify"? the keys
// are: task, repo, …)`.
func (e *UnknownKeyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown key %q", e.Key)
	if e.Path != "" {
		fmt.Fprintf(&b, " in %s", e.Path)
	}
	b.WriteString(" (")
	if e.Suggest != "" {
		fmt.Fprintf(&b, "did you mean %q? ", e.Suggest)
	}
	if len(e.Known) == 0 {
		b.WriteString("it takes no keys")
	} else {
		b.WriteString("the keys are: ")
		b.WriteString(strings.Join(e.Known, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// Decode is json.Unmarshal(data, v), except that an object key no field of
// v's type takes is an *UnknownKeyError, and nothing is decoded then.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !json.Valid(data) {
		return json.Unmarshal(data, v) // encoding/json's own error
	}
	if err := Check(data, v); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Check reports the first key of data that v's type would not take, as an
// *UnknownKeyError, without decoding anything. It returns nil for invalid
// JSON or a v that is not a non-nil pointer: json.Unmarshal says what is
// wrong with those.
func Check(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !json.Valid(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number too big for a float64 is still JSON
	w := &walker{dec: dec}
	err := w.value(rv.Type().Elem(), rv.Elem())
	if uk, ok := err.(*UnknownKeyError); ok {
		return uk
	}
	return nil // a token error cannot happen on valid JSON; Unmarshal will say
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walker reads one JSON value at a time beside the type it decodes into.
type walker struct {
	dec  *json.Decoder
	path []string // ".key", "[3]"
}

// value checks the next value in the stream against t. v is the value it
// would be decoded into when one exists (a field of the target, an element
// of a slice it has), else invalid: encoding/json decodes into what an
// interface already holds, so it matters there.
func (w *walker) value(t reflect.Type, v reflect.Value) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // null, a string, a number or a bool: no keys in it
	}
	t, v, free := indirect(t, v)
	if free {
		return w.skipRest()
	}
	switch d {
	case '{':
		switch t.Kind() {
		case reflect.Struct:
			return w.object(t, v)
		case reflect.Map:
			if mapKeyOK(t.Key()) {
				return w.mapValues(t.Elem())
			}
		}
	case '[':
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			return w.array(t, v)
		}
	}
	// An interface takes anything; anything else is encoding/json's type
	// error to report.
	return w.skipRest()
}

// indirect follows pointers and interfaces as encoding/json's indirect does
// for a value that is not null, and reports whether the value is free: an
// Unmarshaler or TextUnmarshaler takes it (or refuses it) itself, and an
// interface that holds no pointer takes anything.
func indirect(t reflect.Type, v reflect.Value) (reflect.Type, reflect.Value, bool) {
	// A named type is addressable where encoding/json decodes it, so its
	// pointer methods count.
	if t.Kind() != reflect.Pointer && t.Name() != "" {
		pt := reflect.PointerTo(t)
		if pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) {
			return t, v, true
		}
	}
	for {
		if t.Kind() == reflect.Interface {
			if v.IsValid() && !v.IsNil() {
				if e := v.Elem(); e.Kind() == reflect.Pointer && !e.IsNil() {
					t, v = e.Type(), e
					continue
				}
			}
			return t, v, true
		}
		if t.Kind() != reflect.Pointer {
			return t, v, false
		}
		if t.NumMethod() > 0 && (t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType)) {
			return t, v, true
		}
		if v.IsValid() && !v.IsNil() {
			if v.Elem().Kind() == reflect.Interface && v.Elem().Elem().Equal(v) {
				return t, v, true // an interface holding its own address
			}
			v = v.Elem()
		} else {
			v = reflect.Value{}
		}
		t = t.Elem()
	}
}

// mapKeyOK reports whether encoding/json decodes an object into a map with
// keys of type k.
func mapKeyOK(k reflect.Type) bool {
	switch k.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return reflect.PointerTo(k).Implements(textUnmarshalerType)
}

// object checks the members of an object decoded into the struct t; its
// '{' is read.
func (w *walker) object(t reflect.Type, v reflect.Value) error {
	fs := fieldsOf(t)
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		f := fs.lookup(key)
		if f == nil {
			return &UnknownKeyError{Path: w.where(), Key: key, Known: slices.Clone(fs.names), Suggest: Closest(key, fs.names)}
		}
		ft, fv := t, v
		for _, i := range f.index {
			if ft.Kind() == reflect.Pointer {
				if fv.IsValid() && !fv.IsNil() {
					fv = fv.Elem()
				} else {
					fv = reflect.Value{}
				}
				ft = ft.Elem()
			}
			if fv.IsValid() {
				fv = fv.Field(i)
			}
			ft = ft.Field(i).Type
		}
		w.push(keyStep(key))
		err = w.value(ft, fv)
		w.pop()
		if err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

// mapValues checks the values of an object decoded into a map with values
// of type elem; its '{' is read. encoding/json decodes each into a new zero
// value.
func (w *walker) mapValues(elem reflect.Type) error {
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		w.push(keyStep(tok.(string)))
		err = w.value(elem, reflect.Value{})
		w.pop()
		if err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// array checks the elements of an array decoded into the slice or array t;
// its '[' is read.
func (w *walker) array(t reflect.Type, v reflect.Value) error {
	// encoding/json decodes into the elements a slice already has (up to
	// its capacity), and drops what does not fit a Go array.
	if v.IsValid() && t.Kind() == reflect.Slice {
		v = v.Slice(0, v.Cap())
	}
	for i := 0; w.dec.More(); i++ {
		if t.Kind() == reflect.Array && i >= t.Len() {
			if err := w.skipValue(); err != nil {
				return err
			}
			continue
		}
		var ev reflect.Value
		if v.IsValid() && i < v.Len() {
			ev = v.Index(i)
		}
		w.push("[" + strconv.Itoa(i) + "]")
		err := w.value(t.Elem(), ev)
		w.pop()
		if err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// skipValue reads one whole value.
func (w *walker) skipValue() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if _, ok := tok.(json.Delim); ok {
		return w.skipRest()
	}
	return nil
}

// skipRest reads up to the end of the object or array whose opening
// delimiter was just read.
func (w *walker) skipRest() error {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func (w *walker) push(step string) { w.path = append(w.path, step) }
func (w *walker) pop()             { w.path = w.path[:len(w.path)-1] }

// where is the path of the current object: "", "jobs[1]".
func (w *walker) where() string {
	return strings.TrimPrefix(strings.Join(w.path, ""), ".")
}

// keyStep is how a key shows in a path: .name when it reads as a name,
// else ["quoted"].
func keyStep(key string) string {
	if isName(key) {
		return "." + key
	}
	return "[" + strconv.Quote(key) + "]"
}

func joinKey(path, key string) string {
	return strings.TrimPrefix(path+keyStep(key), ".")
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (unicode.IsDigit(r) || r == '-'):
		default:
			return false
		}
	}
	return true
}

// field is one key a struct takes.
type field struct {
	name  string
	tag   bool  // the name comes from a json tag
	index []int // as reflect's FieldByIndex, through embedded structs
}

// fields are the keys of one struct type, as encoding/json finds them.
type fields struct {
	names  []string // in field order
	exact  map[string]*field
	folded map[string]*field
}

// lookup finds the field a key decodes into: the exact name, else the
// first name equal under case folding.
func (fs *fields) lookup(key string) *field {
	if f := fs.exact[key]; f != nil {
		return f
	}
	return fs.folded[foldName(key)]
}

var fieldCache sync.Map // reflect.Type → *fields

func fieldsOf(t reflect.Type) *fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fields)
	}
	f, _ := fieldCache.LoadOrStore(t, typeFields(t))
	return f.(*fields)
}

// typeFields is encoding/json's typeFields (encode.go), keeping only what
// decoding a key needs: breadth first through embedded structs, a name
// hidden by a shallower one or by a tagged one at the same depth, two
// equal candidates annihilating each other.
func typeFields(t reflect.Type) *fields {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	current := []queued{}
	next := []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var found []field

	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := 0; i < q.typ.NumField(); i++ {
				sf := q.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(q.index)+1)
				copy(index, q.index)
				index[len(q.index)] = i

				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					found = append(found, field{name: name, tag: tagged, index: index})
					if count[q.typ] > 1 {
						// Twice, so that the dominance check sees a tie.
						found = append(found, found[len(found)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index})
				}
			}
		}
	}

	slices.SortFunc(found, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	out := found[:0]
	for advance, i := 0, 0; i < len(found); i += advance {
		fi := found[i]
		for advance = 1; i+advance < len(found) && found[i+advance].name == fi.name; advance++ {
		}
		if advance == 1 {
			out = append(out, fi)
			continue
		}
		// The first is dominant unless the second is as shallow and as
		// tagged: then neither is decoded into.
		if fj := found[i+1]; len(fi.index) != len(fj.index) || fi.tag != fj.tag {
			out = append(out, fi)
		}
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })

	fs := &fields{exact: map[string]*field{}, folded: map[string]*field{}}
	for i := range out {
		f := &out[i]
		fs.names = append(fs.names, f.name)
		fs.exact[f.name] = f
		if k := foldName(f.name); fs.folded[k] == nil { // the first folded match wins
			fs.folded[k] = f
		}
	}
	return fs
}

// isValidTag is encoding/json's: which tag names it takes.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// foldName is encoding/json's case folding of keys (fold.go): ASCII upper
// case, and every other rune to the smallest of its simple-fold orbit.
func foldName(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return string(out)
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
