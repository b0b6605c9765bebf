package install

import (
	"bufio"
	"bytes"
	"io/fs"
	"maps"
	"path"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	tomltest "github.com/toml-lang/toml-test"
)

// toml11 are the files of toml-test's invalid/ that go-toml reads: each
// is invalid TOML 1.0 but valid TOML 1.1 (the suite's own list of TOML
// 1.1 files leaves them out), and go-toml reads TOML 1.1.
var toml11 = map[string]string{
	"invalid/datetime/no-secs.toml":            "a time without seconds",
	"invalid/local-datetime/no-secs.toml":      "a time without seconds",
	"invalid/local-time/no-secs.toml":          "a time without seconds",
	"invalid/inline-table/linebreak-1.toml":    "line breaks in an inline table",
	"invalid/inline-table/linebreak-2.toml":    "line breaks in an inline table",
	"invalid/inline-table/linebreak-3.toml":    "line breaks in an inline table",
	"invalid/inline-table/linebreak-4.toml":    "line breaks in an inline table",
	"invalid/inline-table/trailing-comma.toml": "a comma after an inline table's last key",
	"invalid/string/basic-byte-escapes.toml":   `a \xHH escape`,
}

// corpusFiles returns toml-test's files under dir (valid or invalid), by
// name, and the suite's list of the files that hold for TOML 1.1.
func corpusFiles(t testing.TB, dir string) (map[string][]byte, map[string]bool) {
	t.Helper()
	files := tomltest.EmbeddedTests()
	out := map[string][]byte{}
	err := fs.WalkDir(files, dir, func(name string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || path.Ext(name) != ".toml" {
			return err
		}
		out[name], err = fs.ReadFile(files, name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := fs.ReadFile(files, "files-toml-1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	v11 := map[string]bool{}
	for sc := bufio.NewScanner(bytes.NewReader(list)); sc.Scan(); {
		v11[sc.Text()] = true
	}
	return out, v11
}

// Every valid file of the toml-test suite reads, and every invalid one is
// refused, but for TOML 1.1's (toml11), which go-toml reads.
func TestTOMLTestSuite(t *testing.T) {
	valid, _ := corpusFiles(t, "valid")
	invalid, v11 := corpusFiles(t, "invalid")
	if len(valid) < 150 || len(invalid) < 300 {
		t.Fatalf("the suite has %d valid and %d invalid files: not the suite", len(valid), len(invalid))
	}
	for name, src := range valid {
		if _, err := parseTOML(src); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	for name, src := range invalid {
		_, err := parseTOML(src)
		why, known := toml11[name]
		switch {
		case err == nil && !known:
			t.Errorf("%s: accepted", name)
		case err != nil && known:
			t.Errorf("%s: refused now (%v); take it out of toml11", name, err)
		case known && v11[name]:
			t.Errorf("%s (%s) is invalid TOML 1.1 too; it is no TOML 1.1 exception", name, why)
		}
	}
	for name := range toml11 {
		if _, ok := invalid[name]; !ok {
			t.Errorf("toml11 names %s, which the suite no longer has", name)
		}
	}
}

// checkSplice installs hub's table into src and takes it out again: the
// file reads back with hub's entry and every other value as it was, and
// when src had no hub table, install only appends and uninstall gives
// back src byte for byte.
func checkSplice(t *testing.T, src []byte) {
	before, err := decodeTOML(src)
	if err != nil {
		return // not TOML: refused, see TestMalformed
	}
	hadHub := hubTable(before) != nil
	out, err := Codex.setEntry(src, testEntry)
	if err != nil {
		if _, ok := before["mcp_servers"]; !ok {
			t.Fatalf("install refused a file without mcp_servers: %v\n%s", err, src)
		}
		return // a form of mcp_servers install does not edit (TestMalformed)
	}
	if !hadHub && !bytes.HasPrefix(out, src) {
		t.Fatalf("install changed the file's own text:\n%s\nnow:\n%s", src, out)
	}
	after, err := decodeTOML(out)
	if err != nil {
		t.Fatalf("install wrote what go-toml refuses: %v\n%s", err, out)
	}
	if en, err := Codex.ReadEntry(out); err != nil || en == nil || !cmp.Equal(*en, testEntry) {
		t.Fatalf("hub's entry reads back as %+v, %v:\n%s", en, err, out)
	}
	owned := map[string]bool{}
	for _, f := range codexEntry(testEntry) {
		owned[f.key] = true
	}
	if hadHub {
		keep := func(m map[string]any) map[string]any {
			out := map[string]any{}
			for k, v := range m {
				if !owned[k] {
					out[k] = v
				}
			}
			return out
		}
		if diff := cmp.Diff(keep(hubTable(before)), keep(hubTable(after)), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("install changed keys of hub's table it does not own (-before +after):\n%s\n%s", diff, out)
		}
	}
	if diff := cmp.Diff(withoutHub(before), withoutHub(after), cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("install changed other values (-before +after):\n%s\n%s", diff, out)
	}
	if again, err := Codex.setEntry(out, testEntry); err != nil || !bytes.Equal(again, out) {
		t.Fatalf("a second install changes the file (%v):\n%s\nto\n%s", err, out, again)
	}

	back, err := Codex.removeEntry(out, src)
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if !hadHub {
		if !bytes.Equal(back, src) {
			t.Fatalf("uninstall did not give back the file (-before +after):\n%s", cmp.Diff(string(src), string(back)))
		}
		return
	}
	left, err := decodeTOML(back)
	if err != nil {
		t.Fatalf("uninstall wrote what go-toml refuses: %v\n%s", err, back)
	}
	if hubTable(left) != nil {
		t.Fatalf("uninstall left hub's table:\n%s", back)
	}
	if diff := cmp.Diff(withoutHub(before), withoutHub(left), cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("uninstall changed other values (-before +after):\n%s\n%s", diff, back)
	}
}

// hubTable is mcp_servers.hub in a decoded file, or nil.
func hubTable(data map[string]any) map[string]any {
	servers, _ := data["mcp_servers"].(map[string]any)
	hub, _ := servers["hub"].(map[string]any)
	return hub
}

// withoutHub is a decoded file without mcp_servers.hub, nor mcp_servers
// when nothing else is in it.
func withoutHub(data map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range data {
		out[k] = v
	}
	if servers, ok := out["mcp_servers"].(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range servers {
			if k != ServerName {
				rest[k] = v
			}
		}
		out["mcp_servers"] = rest
		if len(rest) == 0 {
			delete(out, "mcp_servers")
		}
	}
	return out
}

// spliceSeeds are Codex configs of the kinds users have, and the layouts
// a textual edit could trip on.
var spliceSeeds = []string{
	"",
	"model = \"o3\"",
	"model = \"o3\"\r\n[tui]\r\ntheme = \"dark\"\r\n",
	agentsConfig,
	"[mcp_servers.hub]\ncommand = \"/old/hub\" # moved\nenabled_tools = [\"start\"]\n\n[mcp_servers.hub.env]\nFOO = \"bar\"\n\n[tui]\ntheme = \"dark\"\n",
	"[mcp_servers.hub.env]\nA = \"1\"\n",
	"[mcp_servers.other]\ncommand = \"x\"\nargs = [\n  \"[mcp_servers.hub]\", # a header in a string\n]\n",
	"s = \"\"\"\n[mcp_servers.hub]\ncommand = \"no\"\n\"\"\"\nt = '''\n[[x]]\n'''\n",
	"\"mcp_servers\".\"other\" = { command = \"x\" }\n",
	"[ mcp_servers . 'other' ]  # spaced\ncommand = 'x'\n[ \"mcp_servers\".hub ] # quoted\n\"command\" = \"/opt/hub/bin/hub\"\n",
	"mcp_servers.other.command = \"x\"\n",
	"[mcp_servers]\n[[agents]]\nname = \"a\"\n",
	"a = { b = 1, c = [1, { d = 2 }] } # inline\n[x]\ny = 1979-05-27T07:32:00Z\nn = nan\n",
	"[mcp_servers.hub]\nenv.A = \"1\"\nargs = [\n  'x',\n]\nstartup_timeout_sec = 30.0",
	"[mcp_servers.hub]\ncommand = '/opt/hub/bin/hub'\n[[mcp_servers.hub.tools]]\nname = \"x\"\n[[mcp_servers.hub.tools]]\n",
	"[mcp_servers]\nother = { command = \"x\" }\n# the last line, a comment",
}

// agentsConfig is a Codex config with an array of tables whose items have
// a sub-table each: [[agents]] + [agents.env], twice.
const agentsConfig = `model = "gpt-5.5"

[[agents]]
name = "reviewer"
command = "codex"

[agents.env]
ROLE = "review"

[[agents]]
name = "tester"
command = "codex"

[agents.env]
ROLE = "test"

[mcp_servers.other]
command = "other"
`

func FuzzTOMLSplice(f *testing.F) {
	for _, s := range spliceSeeds {
		f.Add([]byte(s))
	}
	valid, _ := corpusFiles(f, "valid")
	for _, name := range slices.Sorted(maps.Keys(valid)) {
		f.Add(valid[name])
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkSplice(t, src)
	})
}

func TestReadTOMLValues(t *testing.T) {
	got, err := readTOMLTable([]byte(`[mcp_servers.hub]
command = 'C:\hub'
args = ["mcp", """two
lines"""]
env.A = "\u00e9"
"env"."B.c" = 'b'
tool_timeout_sec = 600
`), codexTable)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"command": `C:\hub`, "args": []any{"mcp", "two\nlines"}, "env": map[string]any{"A": "é", "B.c": "b"}, "tool_timeout_sec": int64(600)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
