package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/internal/strictjson"
)

type inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

// Embedded's "name" is hidden by outer's, which is shallower.
type Embedded struct {
	E1     int `json:"e1"`
	Hidden int `json:"name"`
}

type embeddedUnexported struct {
	U int `json:"u"`
}

// custom takes any JSON, as a json.Unmarshaler may.
type custom struct{ raw string }

func (c *custom) UnmarshalJSON(b []byte) error { c.raw = string(b); return nil }

// text is a TextUnmarshaler: encoding/json refuses an object for it.
type text string

func (t *text) UnmarshalText(b []byte) error { *t = text(b); return nil }

type outer struct {
	Name string `json:"name"`
	Embedded
	embeddedUnexported
	Ptr        *inner             `json:"ptr"`
	PtrPtr     **inner            `json:"ptr_ptr"`
	List       []inner            `json:"list"`
	Arr        [2]inner           `json:"arr"`
	Nested     [][]inner          `json:"nested"`
	Map        map[string]inner   `json:"map"`
	PtrMap     map[string]*inner  `json:"ptr_map"`
	IntMap     map[int]inner      `json:"int_map"`
	BoolMap    map[bool]inner     `json:"bool_map"`
	Raw        json.RawMessage    `json:"raw"`
	Any        any                `json:"any"`
	AnyMap     map[string]any     `json:"any_map"`
	AnyList    []any              `json:"any_list"`
	Custom     custom             `json:"custom"`
	CustomP    *custom            `json:"custom_p"`
	Text       text               `json:"text"`
	Iface      fmt.Stringer       `json:"iface"`
	Skip       int                `json:"-"`
	Dash       int                `json:"-,"`
	Quoted     int                `json:"quoted,string"`
	Untagged   int                //
	Kelvin     int                `json:"k"`
	MapOfMap   map[string][]inner `json:"map_of_map"`
	unexported int
}

type a1 struct{ X int }
type b1 struct{ X int }
type c1 struct {
	X int `json:"X"`
}

// ambiguous's X is in two embedded structs at the same depth, untagged:
// encoding/json decodes it into neither.
type ambiguous struct {
	a1
	b1
	Y int
}

// tagWins's X: c1's is tagged, so it wins over a1's.
type tagWins struct {
	a1
	c1
}

type empty struct{}

// ptrEmbed embeds a pointer to an exported struct.
type ptrEmbed struct {
	*Embedded
	Z int `json:"z"`
}

// cycle embeds itself through a pointer.
type cycle struct {
	*cycle
	Next *cycle `json:"next"`
	V    int    `json:"v"`
}

func unknown(path, key, suggest string) *strictjson.UnknownKeyError {
	return &strictjson.UnknownKeyError{Path: path, Key: key, Suggest: suggest}
}

// TestUnknownKeys: where a key is unknown, at any depth, it is named with
// its path; what encoding/json decodes into a field is taken.
func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want *strictjson.UnknownKeyError // nil: decoded as encoding/json does
	}{
		{"top", `{"nmae": "x"}`, unknown("", "nmae", "name")},
		{"top far", `{"zzzzzz": 1}`, unknown("", "zzzzzz", "")},
		{"known", `{"name": "x", "e1": 1, "u": 2, "Untagged": 3, "-": 4, "k": 5}`, nil},
		{"case-insensitive", `{"NAME": "x", "E1": 1, "untagged": 3, "PTR": {"A": 1}}`, nil},
		{"kelvin sign folds to k", `{"\u212a": 5}`, nil},
		{"escaped key", `{"n\u0061me": "x"}`, nil},
		{"field named by json:\"-\" is not a key", `{"Skip": 1}`, unknown("", "Skip", "")},
		{"unexported field is not a key", `{"unexported": 1}`, unknown("", "unexported", "")},
		{"embedded struct's own name is not a key", `{"Embedded": {}}`, unknown("", "Embedded", "")},
		{"pointer", `{"ptr": {"a": 1, "c": 2}}`, unknown("ptr", "c", "")},
		{"pointer to pointer", `{"ptr_ptr": {"bb": 1}}`, unknown("ptr_ptr", "bb", "b")},
		{"slice", `{"list": [{"a": 1}, {"a": 2, "aa": 3}]}`, unknown("list[1]", "aa", "a")},
		{"array", `{"arr": [{"a": 1}, {"x": 1}]}`, unknown("arr[1]", "x", "")},
		{"array beyond its length is dropped", `{"arr": [{}, {}, {"x": 1}]}`, nil},
		{"slice of slices", `{"nested": [[], [{}, {"bee": 1}]]}`, unknown("nested[1][1]", "bee", "")},
		{"map values", `{"map": {"k1": {"a": 1}, "k2": {"q": 1}}}`, unknown("map.k2", "q", "")},
		{"map key that is no name", `{"map": {"a b": {"q": 1}}}`, unknown(`map["a b"]`, "q", "")},
		{"map of pointers", `{"ptr_map": {"x": {"bb": 1}}}`, unknown("ptr_map.x", "bb", "b")},
		{"map of slices", `{"map_of_map": {"x": [{"a": 1}, {"b": "", "c": 1}]}}`, unknown("map_of_map.x[1]", "c", "")},
		{"int map", `{"int_map": {"7": {"z": 1}}}`, unknown(`int_map["7"]`, "z", "")},
		{"map keys are data", `{"map": {"anything": {}, "ANY": {}}}`, nil},
		{"raw message takes anything", `{"raw": {"whatever": [1, {"x": 2}]}}`, nil},
		{"any takes anything", `{"any": {"whatever": {"x": 2}}}`, nil},
		{"map[string]any takes anything", `{"any_map": {"x": {"y": [1, 2]}}}`, nil},
		{"[]any takes anything", `{"any_list": [{"x": 1}]}`, nil},
		{"unmarshaler decides", `{"custom": {"x": 1}, "custom_p": {"y": 2}}`, nil},
		{"null everywhere", `{"ptr": null, "list": null, "map": null, "any": null, "name": null}`, nil},
		{"null elements", `{"list": [null, {"a": 1}], "ptr_map": {"x": null}}`, nil},
		{"duplicate known keys", `{"name": "a", "name": "b"}`, nil},
		{"duplicate unknown key is named once", `{"name": "a", "zz": 1, "zz": 2}`, unknown("", "zz", "")},
		{"first unknown key in document order", `{"list": [{"q": 1}], "nmae": 1}`, unknown("list[0]", "q", "")},
		{"wrong kind is not looked into", `{"ptr": [{"zz": 1}]}`, nil},
		{"object for a scalar is not looked into", `{"name": {"zz": 1}}`, nil},
		{"object for a text unmarshaler is not looked into", `{"text": {"zz": 1}}`, nil},
		{"object for a bool-keyed map is not looked into", `{"bool_map": {"true": {"zz": 1}}}`, nil},
		{"non-empty interface is not looked into", `{"iface": {"zz": 1}}`, nil},
		{"a quoted field takes a string", `{"quoted": "12"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got outer
			err := strictjson.Decode([]byte(tc.in), &got)
			if tc.want == nil {
				var want outer
				wantErr := json.Unmarshal([]byte(tc.in), &want)
				if errString(err) != errString(wantErr) {
					t.Fatalf("Decode error = %v, want encoding/json's %v", err, wantErr)
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(outer{}, custom{}, embeddedUnexported{})); diff != "" {
					t.Errorf("Decode differs from json.Unmarshal (-want +got):\n%s", diff)
				}
				return
			}
			var uk *strictjson.UnknownKeyError
			if !errors.As(err, &uk) {
				t.Fatalf("Decode error = %v, want an UnknownKeyError", err)
			}
			if uk.Path != tc.want.Path || uk.Key != tc.want.Key || uk.Suggest != tc.want.Suggest {
				t.Errorf("got Path %q Key %q Suggest %q, want %q %q %q", uk.Path, uk.Key, uk.Suggest, tc.want.Path, tc.want.Key, tc.want.Suggest)
			}
			if !reflect.DeepEqual(got, outer{}) {
				t.Errorf("Decode decoded %+v despite the unknown key", got)
			}
			// encoding/json agrees there is a field it would drop.
			if oracle(tc.in, &outer{}) == nil {
				t.Errorf("encoding/json with DisallowUnknownFields takes %s", tc.in)
			}
		})
	}
}

// The keys are listed in the order the type declares them, as
// encoding/json names them; Known is the caller's to keep.
func TestKnownKeys(t *testing.T) {
	var v struct {
		Inner []inner `json:"inner"`
	}
	err := strictjson.Decode([]byte(`{"inner": [{"c": 1}]}`), &v)
	var uk *strictjson.UnknownKeyError
	if !errors.As(err, &uk) {
		t.Fatalf("got %v", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, uk.Known); diff != "" {
		t.Errorf("Known (-want +got):\n%s", diff)
	}
	uk.Known[0] = "changed"
	err = strictjson.Decode([]byte(`{"inner": [{"c": 1}]}`), &v)
	if !errors.As(err, &uk) || uk.Known[0] != "a" {
		t.Errorf("a caller's change to Known leaked into the next error: %v", err)
	}

	var o outer
	err = strictjson.Decode([]byte(`{"x": 1}`), &o)
	if !errors.As(err, &uk) {
		t.Fatalf("got %v", err)
	}
	want := []string{"name", "e1", "u", "ptr", "ptr_ptr", "list", "arr", "nested", "map", "ptr_map", "int_map", "bool_map",
		"raw", "any", "any_map", "any_list", "custom", "custom_p", "text", "iface", "-", "quoted", "Untagged", "k", "map_of_map"}
	if diff := cmp.Diff(want, uk.Known); diff != "" {
		t.Errorf("Known of outer (-want +got):\n%s", diff)
	}
}

func TestErrorText(t *testing.T) {
	var v struct {
		Jobs []struct {
			Task   string `json:"task"`
			Verify string `json:"verify"`
		} `json:"jobs"`
	}
	err := strictjson.Decode([]byte(`{"jobs": [{"task": "a"}, {"task": "b", "verfy": "false"}]}`), &v)
	want := `unknown key "verfy" in jobs[1] (did you mean "verify"? the keys are: task, verify)`
	if errString(err) != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	var uk *strictjson.UnknownKeyError
	if !errors.As(err, &uk) || uk.KeyPath() != "jobs[1].verfy" {
		t.Errorf("KeyPath of %v is not jobs[1].verfy", err)
	}

	err = strictjson.Decode([]byte(`{"zzz": 1}`), &struct{ Alpha int }{})
	if want := `unknown key "zzz" (the keys are: Alpha)`; errString(err) != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	err = strictjson.Decode([]byte(`{"a": 1}`), &empty{})
	if want := `unknown key "a" (it takes no keys)`; errString(err) != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	err = strictjson.Decode([]byte(`{"a": {"b c": 1}}`), &map[string]empty{})
	if want := `unknown key "b c" in a (it takes no keys)`; errString(err) != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	if !errors.As(err, &uk) || uk.KeyPath() != `a["b c"]` {
		t.Errorf("KeyPath of %v is not a[\"b c\"]", err)
	}
}

// Embedded fields follow encoding/json's rules for which of two same-named
// fields a key decodes into.
func TestEmbedding(t *testing.T) {
	var amb ambiguous
	err := strictjson.Decode([]byte(`{"X": 1}`), &amb)
	var uk *strictjson.UnknownKeyError
	if !errors.As(err, &uk) || uk.Key != "X" || !reflect.DeepEqual(uk.Known, []string{"Y"}) {
		t.Errorf("ambiguous X: got %v, want X unknown with only Y known", err)
	}
	if oracle(`{"X": 1}`, &ambiguous{}) == nil {
		t.Error("encoding/json takes the ambiguous X")
	}

	var tw tagWins
	if err := strictjson.Decode([]byte(`{"X": 3}`), &tw); err != nil || tw.c1.X != 3 || tw.a1.X != 0 {
		t.Errorf("tagged X: err %v, value %+v; want it in c1", err, tw)
	}

	var pe ptrEmbed
	if err := strictjson.Decode([]byte(`{"e1": 1, "name": 2, "z": 3}`), &pe); err != nil || pe.Embedded == nil || pe.E1 != 1 || pe.Hidden != 2 {
		t.Errorf("embedded pointer: err %v, value %+v", err, pe)
	}
	if err := strictjson.Decode([]byte(`{"e2": 1}`), &ptrEmbed{}); !errors.As(err, &uk) || uk.Suggest != "e1" {
		t.Errorf("embedded pointer, unknown e2: %v", err)
	}

	var c cycle
	if err := strictjson.Decode([]byte(`{"v": 1, "next": {"v": 2, "next": {"vv": 3}}}`), &c); !errors.As(err, &uk) || uk.Path != "next.next" || uk.Suggest != "v" {
		t.Errorf("cycle: %v", err)
	}
}

// An interface that holds a pointer is decoded into what it points to by
// encoding/json, so its keys are checked against that type.
func TestInterfaceHoldingPointer(t *testing.T) {
	v := struct {
		Any any `json:"any"`
	}{Any: &inner{}}
	err := strictjson.Decode([]byte(`{"any": {"a": 1, "zz": 2}}`), &v)
	var uk *strictjson.UnknownKeyError
	if !errors.As(err, &uk) || uk.Path != "any" || uk.Key != "zz" {
		t.Errorf("got %v, want zz unknown in any", err)
	}
	if err := strictjson.Decode([]byte(`{"any": {"a": 1}}`), &v); err != nil || v.Any.(*inner).A != 1 {
		t.Errorf("got %v, %+v", err, v.Any)
	}
	// A slice's elements are decoded into in place too.
	list := []any{&inner{}}
	if err := strictjson.Decode([]byte(`[{"q": 1}]`), &list); !errors.As(err, &uk) || uk.Path != "[0]" {
		t.Errorf("slice of interfaces holding pointers: %v", err)
	}
	// An interface holding its own address does not loop.
	var self any
	self = &self
	if err := strictjson.Decode([]byte(`{"x": 1}`), &self); err != nil {
		t.Errorf("self-referential interface: %v", err)
	}
}

// What encoding/json refuses gets encoding/json's error, word for word.
func TestEncodingJSONErrors(t *testing.T) {
	var notPtr outer
	var nilPtr *outer
	for _, tc := range []struct {
		name string
		in   string
		v    any
	}{
		{"syntax", `{"name": `, &outer{}},
		{"trailing data", `{} {}`, &outer{}},
		{"empty", ``, &outer{}},
		{"wrong type", `{"name": 3}`, &outer{}},
		{"wrong type deep", `{"list": [{"a": "x"}]}`, &outer{}},
		{"number too big", `{"ptr": {"a": 1e400}}`, &outer{}},
		{"array for a struct", `[1, 2]`, &outer{}},
		{"object for a slice", `{"list": {"a": 1}}`, &outer{}},
		{"bad quoted", `{"quoted": "x"}`, &outer{}},
		{"text unmarshaler given an object", `{"text": {}}`, &outer{}},
		{"bool-keyed map", `{"bool_map": {"true": {}}}`, &outer{}},
		{"not a pointer", `{}`, notPtr},
		{"nil pointer", `{}`, nilPtr},
		{"nil", `{}`, nil},
		{"invalid utf-8 and control", "{\"name\": \"\x01\"}", &outer{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := strictjson.Decode([]byte(tc.in), tc.v)
			fresh := tc.v // not a pointer, or nil: Unmarshal changes nothing
			if rv := reflect.ValueOf(tc.v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
				fresh = reflect.New(rv.Type().Elem()).Interface()
			}
			want := json.Unmarshal([]byte(tc.in), fresh)
			if want == nil {
				t.Fatalf("encoding/json takes %q: the case tests nothing", tc.in)
			}
			if errString(err) != errString(want) {
				t.Errorf("Decode error = %v, want %v", err, want)
			}
			var uk *strictjson.UnknownKeyError
			if errors.As(err, &uk) {
				t.Errorf("an UnknownKeyError for %q", tc.in)
			}
		})
	}
}

func TestNullAndTopLevelValues(t *testing.T) {
	o := outer{Name: "kept"}
	if err := strictjson.Decode([]byte(`null`), &o); err != nil || o.Name != "kept" {
		t.Errorf("null: %v, %+v", err, o)
	}
	var list []inner
	var uk *strictjson.UnknownKeyError
	if err := strictjson.Decode([]byte(` [ {"a": 1}, {"A": 2}, {"c": 3} ] `), &list); !errors.As(err, &uk) || uk.Path != "[2]" || list != nil {
		t.Errorf("top-level array: %v, %+v", err, list)
	}
	m := map[string]*inner{}
	if err := strictjson.Decode([]byte(`{"x": {"a": 1}}`), &m); err != nil || m["x"].A != 1 {
		t.Errorf("top-level map: %v, %+v", err, m)
	}
	var n int
	if err := strictjson.Decode([]byte(`7`), &n); err != nil || n != 7 {
		t.Errorf("number: %v %d", err, n)
	}
	var a any
	if err := strictjson.Decode([]byte(`{"x": [1]}`), &a); err != nil || a == nil {
		t.Errorf("any: %v %v", err, a)
	}
	var r json.RawMessage
	if err := strictjson.Decode([]byte(`{"x": 1}`), &r); err != nil || string(r) != `{"x": 1}` {
		t.Errorf("raw: %v %s", err, r)
	}
}

// Check says what Decode would refuse, and decodes nothing.
func TestCheck(t *testing.T) {
	o := outer{Name: "kept"}
	if err := strictjson.Check([]byte(`{"name": "x"}`), &o); err != nil || o.Name != "kept" {
		t.Errorf("Check: %v, %+v", err, o)
	}
	var uk *strictjson.UnknownKeyError
	if err := strictjson.Check([]byte(`{"nmae": "x"}`), &o); !errors.As(err, &uk) {
		t.Errorf("Check: %v", err)
	}
	if err := strictjson.Check([]byte(`{"nmae": `), &o); err != nil {
		t.Errorf("Check of invalid JSON: %v, want nil (Unmarshal says)", err)
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"task", "repo", "verify", "verify_timeout_s", "max_running", "timeout_s", "model", "max_usd"}
	for key, want := range map[string]string{
		"verfy":           "verify",
		"Verfy":           "verify",
		"verfiy":          "verify",
		"max_runing":      "max_running",
		"maxrunning":      "max_running",
		"modle":           "model",
		"tsak":            "task",
		"timeout":         "timeout_s",
		"verify_timeout":  "verify_timeout_s",
		"rpeo":            "repo",
		"x":               "",
		"foo":             "",
		"max":             "",
		"definitely_not":  "",
		"":                "",
		"tasks":           "task",
		"verify_timeouts": "verify_timeout_s",
	} {
		if got := strictjson.Closest(key, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", key, got, want)
		}
	}
	if got := strictjson.Closest("ab", nil); got != "" {
		t.Errorf("Closest with no names = %q", got)
	}
	// Of two equally close names the first wins.
	if got := strictjson.Closest("bat", []string{"cat", "hat"}); got != "cat" {
		t.Errorf("Closest tie = %q, want cat", got)
	}
}

// oracle decodes with encoding/json's DisallowUnknownFields: an error when
// any key would be dropped (or any other error comes first).
func oracle(in string, v any) error {
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// FuzzDecode holds Decode to encoding/json: what Decode takes, Unmarshal
// decodes the same way with the same error; what Decode calls unknown,
// encoding/json with DisallowUnknownFields refuses too, and nothing is
// decoded; the unknown key matches no known one, even by case.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"name": "x"}`, `{"nmae": 1}`, `{"NAME": 1, "e1": 2}`,
		`{"list": [{"a": 1}, {"zz": 1}]}`, `{"map": {"k": {"b": "x", "q": 1}}}`, `{"arr": [{}, {}, {"x": 1}]}`,
		`{"raw": {"x": 1}, "any": {"y": 2}, "any_map": {"z": {"w": 1}}}`, `{"custom": {"q": 1}}`,
		`{"ptr": {"a": "x", "zz": 1}}`, `{"ptr": [1], "zz": 1}`, `{"\u212a": 1}`, `{"quoted": "3", "Quoted": 4}`,
		`{"nested": [[{"a": 1}], [{"b": "", "c": 1}]]}`, `{"int_map": {"1": {"a": 1}, "x": {"a": 1}}}`,
		`{"bool_map": {"true": {"zz": 1}}}`, `{"text": "t", "iface": null}`, `{"name": "a", "name": 1}`,
		`{"ptr_ptr": {"a": 1}, "custom_p": [1]}`, `{"X": 1, "Y": 2}`, `{"u": 1, "Untagged": 1, "-": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newV := range []func() any{
			func() any { return new(outer) },
			func() any { return new(ambiguous) },
			func() any { return new([]inner) },
			func() any { return new(map[string]inner) },
			func() any { return &struct{ Any any }{Any: &inner{}} },
		} {
			got, want := newV(), newV()
			err := strictjson.Decode(data, got)
			var uk *strictjson.UnknownKeyError
			if errors.As(err, &uk) {
				if !reflect.DeepEqual(got, newV()) {
					t.Fatalf("%s: decoded despite %v", data, err)
				}
				if oracle(string(data), newV()) == nil {
					t.Fatalf("%s: Decode says %v; encoding/json with DisallowUnknownFields takes it", data, err)
				}
				for _, k := range uk.Known {
					if strings.EqualFold(k, uk.Key) || bytes.EqualFold([]byte(k), []byte(uk.Key)) {
						t.Fatalf("%s: %q is called unknown but matches %q", data, uk.Key, k)
					}
				}
				continue
			}
			wantErr := json.Unmarshal(data, want)
			if errString(err) != errString(wantErr) {
				t.Fatalf("%s: Decode error %v, json.Unmarshal %v", data, err, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Decode %+v, json.Unmarshal %+v", data, got, want)
			}
			if wantErr == nil {
				if oerr := oracle(string(data), newV()); oerr != nil && strings.Contains(oerr.Error(), "unknown field") {
					t.Fatalf("%s: Decode takes it; encoding/json says %v", data, oerr)
				}
			}
		}
	})
}
