package tomltext_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"

	"github.com/hub-agents/hub/internal/tomltext"
)

func TestValue(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"plain", `"plain"`},
		{"tab\tnl\nq\"b\\", `"tab\tnl\nq\"b\\"`},
		{"del\x7f", `"del\u007F"`},
		{"\x01\b\f\r", `"\u0001\b\f\r"`},
		{"<a&b>", `"<a&b>"`},
		{"ü", `"ü"`},
		{"C:\\path with 'q'", `"C:\\path with 'q'"`},
		{"bad \xff", "\"bad \uFFFD\""},
		{true, "true"},
		{600, "600"},
		{int64(-5), "-5"},
		{[]string{}, "[]"},
		{[]string{"mcp", "a b"}, `["mcp", "a b"]`},
		{map[string]string{}, "{}"},
		{map[string]string{"b": "2", "A_1": "1", "x.y": "3"}, `{ A_1 = "1", b = "2", "x.y" = "3" }`},
	}
	for _, tc := range tests {
		if got := tomltext.Value(tc.in); got != tc.want {
			t.Errorf("Value(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"mcp_servers": "mcp_servers",
		"a-b_9":       "a-b_9",
		"":            `""`,
		"hub.x":       `"hub.x"`,
		"with space":  `"with space"`,
		"é":           `"é"`,
	} {
		if got := tomltext.Key(in); got != want {
			t.Errorf("Key(%q) = %s, want %s", in, got, want)
		}
	}
	if got := tomltext.Header("mcp_servers", "my server"); got != "[mcp_servers.\"my server\"]\n" {
		t.Errorf("Header = %q", got)
	}
}

// What the writer writes, go-toml reads back as what was written.
func FuzzRoundTrip(f *testing.F) {
	f.Add("hub", "/opt/hub/bin/hub", "HUB_HOME")
	f.Add("", "\"\\\n\t\x7f", "a.b")
	f.Add("'", "''' \"\"\"", "\x00")
	f.Add("\xff", "\U0010FFFF", "é")
	f.Fuzz(func(t *testing.T, k, s, e string) {
		// What go-toml reads: the writer's U+FFFD for each byte that is not UTF-8.
		vk, vs, ve := string([]rune(k)), string([]rune(s)), string([]rune(e))
		if vk == "list" || vk == "env" || (e != k && ve == vk) {
			return // two keys would be one: not a document
		}
		doc := tomltext.Header("t", k) + tomltext.KeyValue(k, s) +
			tomltext.KeyValue("list", []string{s, k}) + tomltext.KeyValue("env", map[string]string{e: s, k: e})
		var got map[string]any
		if err := toml.Unmarshal([]byte(doc), &got); err != nil {
			t.Fatalf("go-toml refuses what the writer wrote: %v\n%s", err, doc)
		}
		env := map[string]any{ve: vs}
		env[vk] = ve
		want := map[string]any{"t": map[string]any{vk: map[string]any{vk: vs, "list": []any{vs, vk}, "env": env}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("read back (-want +got):\n%s\n%s", diff, doc)
		}
	})
}
