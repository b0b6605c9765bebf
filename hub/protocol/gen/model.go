package gen

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// field is one JSON member of a wire type.
type field struct {
	Name     string // as on the wire
	Type     string // TypeScript
	Optional bool
	Doc      string
}

// wireType is one named type that crosses the wire.
type wireType struct {
	Name    string
	Doc     string
	Extends []string // embedded structs, flattened by encoding/json
	Fields  []field
	// Union is set for a named string type with constants: its values.
	Union []string
}

// model is everything the writers need, in a stable order.
type model struct {
	src   *source
	types []*wireType
	byKey map[string]*wireType
	names map[string]string // TS name → Go key, to catch collisions
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func buildModel(src *source) (*model, error) {
	m := &model{src: src, byKey: map[string]*wireType{}, names: map[string]string{}}
	roots := []any{protocol.ErrorData{}}
	for _, s := range protocol.Specs {
		roots = append(roots, s.Params, s.Result)
	}
	for _, r := range roots {
		if r == nil {
			continue
		}
		if _, err := m.tsType(reflect.TypeOf(r)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// pkgDir maps a Go package path to its folder in the repo, or "" when it is
// not one of hub's wire packages.
func pkgDir(path string) string {
	d, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	for _, p := range sourcePkgs {
		if p == d {
			return d
		}
	}
	return ""
}

// tsType returns the TypeScript for t, adding named types to the model.
func (m *model) tsType(t reflect.Type) (string, error) {
	switch {
	case t == timeType:
		return "string", nil
	case t == rawType:
		return "unknown", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return m.tsType(t.Elem())
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number", nil
	case reflect.String:
		if t.Name() != "" && pkgDir(t.PkgPath()) != "" && t.Name() != "string" {
			return m.named(t)
		}
		return "string", nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string", nil // encoding/json writes bytes as base64
		}
		e, err := m.tsType(t.Elem())
		if err != nil {
			return "", err
		}
		if strings.ContainsAny(e, " |") {
			e = "(" + e + ")"
		}
		return e + "[]", nil
	case reflect.Map:
		v, err := m.tsType(t.Elem())
		if err != nil {
			return "", err
		}
		return "Record<string, " + v + ">", nil
	case reflect.Interface:
		return "unknown", nil
	case reflect.Struct:
		if t.Name() == "" {
			return "", fmt.Errorf("anonymous struct types cannot cross the wire; name it in hub/protocol")
		}
		if pkgDir(t.PkgPath()) == "" {
			return "", fmt.Errorf("type %s crosses the wire but lives outside hub's wire packages %v", t, sourcePkgs)
		}
		return m.named(t)
	}
	return "", fmt.Errorf("type %s (%s) has no TypeScript form", t, t.Kind())
}

func (m *model) named(t reflect.Type) (string, error) {
	dir := pkgDir(t.PkgPath())
	key := dir + "." + t.Name()
	if _, ok := m.byKey[key]; ok {
		return t.Name(), nil
	}
	if other, ok := m.names[t.Name()]; ok {
		return "", fmt.Errorf("%s and %s would both be %s in TypeScript; rename one", key, other, t.Name())
	}
	m.names[t.Name()] = key
	doc := m.src.types[key]
	w := &wireType{Name: t.Name(), Doc: doc.doc}
	m.byKey[key] = w
	m.types = append(m.types, w)
	if t.Kind() == reflect.String {
		for _, c := range m.src.consts {
			if c.typ == t.Name() {
				w.Union = append(w.Union, literal(c.value))
			}
		}
		if len(w.Union) == 0 {
			w.Union = []string{"string"}
		}
		return t.Name(), nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			base, err := m.tsType(f.Type)
			if err != nil {
				return "", err
			}
			if f.Type.Kind() == reflect.Pointer {
				base = "Partial<" + base + ">" // a nil embedded pointer adds no members
			}
			w.Extends = append(w.Extends, base)
			continue
		}
		if name == "" {
			name = f.Name
		}
		ts, err := m.tsType(f.Type)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %w", key, f.Name, err)
		}
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		w.Fields = append(w.Fields, field{Name: name, Type: ts, Optional: optional, Doc: doc.fields[f.Name]})
	}
	return t.Name(), nil
}

// constGroup is a set of protocol constants written as one TypeScript object.
type constGroup struct {
	TS     string // the exported object's name
	Prefix string // the Go constants' common prefix, dropped in the keys
	Doc    string
}

// constGroups are the enumerations the protocol names by constant.
var constGroups = []constGroup{
	{"Methods", "Method", "Request (and $/cancelRequest) method names."},
	{"Notifications", "Notify", "Notification method names."},
	{"ErrorCodes", "Code", "Error codes: JSON-RPC's own and hub's. Every error carries ErrorData."},
	{"EventKinds", "Event", "Kinds of journal event (Event.kind)."},
	{"JobKinds", "Kind", "Kinds of job (StartParams.kind)."},
	{"IsolationLevels", "Isolation", "Isolation levels, weakest first (StartParams.isolation)."},
	{"Revisions", "Rev", "Revisions job/file reads from (FileParams.rev)."},
	{"Encodings", "Encoding", "Encodings of FileResult.content."},
	{"Confidence", "Confidence", "How far a quota signal can be trusted (QuotaSignal.confidence)."},
	{"Parties", "Party", "Who sends a message to whom."},
	{"Limits", "Max", "Limits the daemon enforces."},
	{"Capabilities", "Cap", "Capabilities a daemon reports in initialize; check one before using what it names."},
}
