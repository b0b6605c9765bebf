package install

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// stripJSONC blanks out comments and trailing commas, so encoding/json can
// read a JSONC value: what Gemini CLI and Qwen Code read of a document.
func stripJSONC(src []byte) []byte {
	std, err := standardJSON(src)
	if err != nil {
		return src
	}
	return std
}

var jsoncSeeds = []string{
	"",
	"{}\n",
	"// settings\n{}\n",
	`{"a":1,"mcpServers":{}}`,
	"{\r\n  \"a\": 1\r\n}\r\n",
	"{\n\t\"mcpServers\": {\n\t\t\"other\": {\"type\": \"stdio\", \"command\": \"other-mcp\", \"args\": []}\n\t},\n\t\"theme\": \"dark\"\n}\n",
	"{\n  // my models\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"model\": \"anthropic/claude\", /* inline */\n  \"mcp\": {\n    \"other\": { \"type\": \"remote\" }, // trailing comma next\n  },\n}\n",
	"{\n  \"mcpServers\": {\n    \"hub\": {\n      \"command\": \"/old/hub\",\n      \"args\": [\"mcp\"],\n      \"timeout\": 900000, // wait longer\n      \"trust\": false\n    }\n  }\n}\n",
	`{"mcpServers": {"hub": "not an object"}, "mcp": {"hub": [1, 2]}}`,
	`{"mcpServers": {"hub": {}, "hub": {}}}`,
	"{\"a\": 1,}",
	"{\n  \"mcp\": {\n",
	"{ /* mine\n}\n",
	"{\"a\": \"\xff\"} // \xe2\x80\xa8 \xff",
	"{\"a\": [[[[[[[[1]]]]]]]]}",
	"\"\\",
	"{\"mcpServers\": {\"hub\": {\"env\": {\"OLD\": \"1\"}, \"args\": [\n  \"mcp\"\n]}} // end",
}

func FuzzJSONCSplice(f *testing.F) {
	for _, s := range jsoncSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, c := range []Client{Claude, Gemini, OpenCode} {
			checkJSONSplice(t, c, src)
		}
	})
}

// checkJSONSplice: any src is read without a panic; where hub's entry can
// be set, the result reads in the client's syntax, holds the entry, means
// what src meant everywhere else, and keeps every byte of src outside the
// value it changed; taking the entry out again gives back what src meant.
func checkJSONSplice(t *testing.T, c Client, src []byte) {
	syn, container := c.syntax(), c.jsonContainer()
	entry := c.jsonEntry(testEntry)
	_, _ = standardJSON(src)
	_, _ = readJSONEntry(src, syn, container, ServerName)
	_, _ = removeJSONEntry(src, syn, container, ServerName, src)
	root, err := parseJSON(src, syn)
	out, setErr := setJSONEntry(src, syn, container, ServerName, entry)
	switch {
	case err != nil && setErr == nil:
		t.Fatalf("%s: set an entry in a document that does not read (%v):\n%q", c.Name, err, src)
	case setErr != nil:
		return // a document that does not read, a key twice, a container that is not an object
	}
	if _, err := parseJSON(out, syn); err != nil {
		t.Fatalf("%s: the result does not read: %v\n%q\n%q", c.Name, err, src, out)
	}
	got, err := readJSONEntry(out, syn, container, ServerName)
	if err != nil || got == nil {
		t.Fatalf("%s: no entry in the result (%v):\n%q", c.Name, err, out)
	}
	for _, f := range entry {
		v, ok := got[f.key]
		if f.value == nil && ok || f.value != nil && !sameJSON(mustJSON(t, v), f.value) {
			t.Fatalf("%s: %s is %v in the result:\n%q", c.Name, f.key, v, out)
		}
	}
	if root == nil {
		return // a new document
	}
	before := withoutEntry(t, src, container, false)
	if after := withoutEntry(t, out, container, before[container] == nil); !reflect.DeepEqual(before, after) {
		t.Fatalf("%s: the rest changed:\n%q\n%q", c.Name, src, out)
	}
	// The bytes that changed lie in the value that was edited: the entry,
	// else the container, else the document.
	start, end := root.start, root.end
	if m, _ := root.member(container); m != nil {
		start, end = m.value.start, m.value.end
		if e, _ := m.value.member(ServerName); e != nil {
			start, end = e.value.start, e.value.end
		}
	}
	pre := 0
	for pre < len(src) && pre < len(out) && src[pre] == out[pre] {
		pre++
	}
	suf := 0
	for suf < len(src)-pre && suf < len(out)-pre && src[len(src)-1-suf] == out[len(out)-1-suf] {
		suf++
	}
	if pre < len(src)-suf && (pre < start || len(src)-suf > end) {
		t.Fatalf("%s: bytes %d to %d changed, outside the value at %d to %d:\n%q\n%q", c.Name, pre, len(src)-suf, start, end, src, out)
	}
	back, err := removeJSONEntry(out, syn, container, ServerName, src)
	if err != nil {
		t.Fatalf("%s: cannot take the entry out again: %v\n%q", c.Name, err, out)
	}
	if _, err := parseJSON(back, syn); err != nil {
		t.Fatalf("%s: without the entry, it does not read: %v\n%q", c.Name, err, back)
	}
	if again := withoutEntry(t, back, container, false); !reflect.DeepEqual(before, again) {
		t.Fatalf("%s: without the entry, it means something else:\n%q\n%q", c.Name, src, back)
	}
}

// withoutEntry is what the document means, less hub's entry (and the
// container, when drop says so and nothing else is in it).
func withoutEntry(t *testing.T, src []byte, container string, drop bool) map[string]any {
	t.Helper()
	std, err := standardJSON(src)
	if err != nil {
		t.Fatalf("%v: %q", err, src)
	}
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v: %q", err, std)
	}
	if c, ok := doc[container].(map[string]any); ok {
		delete(c, ServerName)
		if drop && len(c) == 0 {
			delete(doc, container)
		}
	}
	return doc
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJSONErrors pins where and how a document that does not read is
// refused: hujson's errors put in hub's words (the tests below would
// notice a newer hujson wording them otherwise), and what a client's
// syntax does not allow refused where its reader stops.
func TestJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		syn       jsonSyntax
		src, want string
	}{
		{jsonc, `{"a":}`, "line 1, column 6: unexpected '}' where a value should be"},
		{jsonc, `{a:1}`, "line 1, column 2: expected a quoted key"},
		{jsonc, `{1:2}`, "line 1, column 2: expected a quoted key"},
		{jsonc, `{"a" 1}`, "line 1, column 6: expected : after a key"},
		{jsonc, `{"a":1 "b":2}`, "line 1, column 8: expected , or } after a value"},
		{jsonc, `{"a":[1 2]}`, "line 1, column 9: expected , or ] in an array"},
		{jsonc, "{\"a\":\"x\x01\"}", "line 1, column 8: a control character inside a string"},
		{jsonc, `{"a":"x\q"}`, `line 1, column 8: a bad escape \q`},
		{jsonc, `{"a":"\u12x4"}`, `line 1, column 7: a bad \u escape`},
		{jsonc, "{\"a\": \"abc\n}", "line 1, column 11: a control character inside a string"},
		{jsonc, `{"a": "abc`, "line 1, column 11: a string is never closed"},
		{jsonc, `{"a":tru}`, "line 1, column 6: unexpected 't' where a value should be"},
		{jsonc, `{"a":1.}`, `line 1, column 6: a bad number "1."`},
		{jsonc, "{} x", "line 1, column 4: unexpected 'x' after the end of the document"},
		{jsonc, "{ /* x", "line 1, column 3: a /* comment is never closed"},
		{jsonc, `{"a":`, "line 1, column 6: the document ends where a value should be"},
		{jsonc, "{\"a\":\xff}", "line 1, column 6: unexpected 'ÿ' where a value should be"},
		{jsonc, `[1,}`, "line 1, column 1: the document is not a JSON object"},
		{jsonc, "  /* x", "line 1, column 3: a /* comment is never closed"},
		{plainJSON, "  /* x", "line 1, column 3: the document is not a JSON object"},
		{plainJSON, "{\"a\": 1 // one\n}", "line 1, column 9: expected , or } after the value of \"a\""},
		{plainJSON, "{\"a\" /* k */: 1}", "line 1, column 6: expected : after the key \"a\""},
		{plainJSON, "{\"a\": [/* none */]}", "line 1, column 8: unexpected '/' where a value should be"},
		{plainJSON, "{}\n// end", "line 2, column 1: unexpected '/' after the end of the document"},
		{commentedJSON, `{"a": [1,]}`, "line 1, column 10: unexpected ']' where a value should be"},
		{jsonc, strings.Repeat("[", 2000), "line 1, column 1: the document is not a JSON object"},
		{jsonc, `{"a":` + strings.Repeat("[", 2000), "line 1, column 206: values nest too deep"},
		{jsonc, `{"a":` + strings.Repeat("[", 200) + "1" + strings.Repeat("]", 200) + "}", "line 1, column 206: values nest too deep"},
	} {
		if _, err := parseJSON([]byte(tc.src), tc.syn); err == nil || err.Error() != tc.want {
			t.Errorf("%.60q: %v, want %s", tc.src, err, tc.want)
		}
	}
	// What the clients' readers take, hujson alone would not.
	for _, src := range []string{"{}\n// end", "{\"a\": 1} // \xff\xe2\x80\xa8", "// only a comment"} {
		if _, err := parseJSON([]byte(src), jsonc); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}
