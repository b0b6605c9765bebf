package gen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

const root = "../../.."

// generated returns the generated files' contents by path.
func generated(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f.Path] = f.Data
	}
	return out
}

// TestGeneratedFilesCurrent fails when generated.ts, docs/protocol.md,
// dispatch_gen.go or hubtest's daemon_gen.go differs from what hub/protocol
// generates now.
func TestGeneratedFilesCurrent(t *testing.T) {
	files := generated(t)
	for _, path := range []string{TSPath, MDPath, GoPath, GoTestPath} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatalf("%s: %v; run `make protocol`", path, err)
		}
		if !bytes.Equal(got, files[path]) {
			t.Errorf("%s is stale: hub/protocol changed since it was generated; run `make protocol` and commit the result", path)
		}
	}
}

// TestSpecsCoverConstants: every method and notification constant has
// exactly one Spec, and every Spec names one of them.
func TestSpecsCoverConstants(t *testing.T) {
	src, err := parseSource(root)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, p := range []string{"Method", "Notify"} {
		for _, c := range src.constsWithPrefix(p) {
			consts[strings.Trim(literal(c.value), `"`)] = c.name
		}
	}
	seen := map[string]bool{}
	for _, s := range protocol.Specs {
		if seen[s.Method] {
			t.Errorf("%s has two Specs", s.Method)
		}
		seen[s.Method] = true
		if _, ok := consts[s.Method]; !ok {
			t.Errorf("Spec %s names no Method or Notify constant", s.Method)
		}
		if s.Params == nil {
			t.Errorf("Spec %s has no params type; use Empty", s.Method)
		}
		if !s.Notification && s.Result == nil {
			t.Errorf("request %s has no result type; use Empty", s.Method)
		}
		if s.Doc == "" {
			t.Errorf("Spec %s is undocumented", s.Method)
		}
	}
	for m, name := range consts {
		if !seen[m] {
			t.Errorf("%s (%s) has no Spec in hub/protocol/spec.go", name, m)
		}
	}
}

// TestTypeScriptShapes spot-checks the mapping of Go to TypeScript.
func TestTypeScriptShapes(t *testing.T) {
	files := generated(t)
	ts, md := files[TSPath], files[MDPath]
	for _, want := range []string{
		`export const PROTOCOL_VERSION = "` + protocol.Version + `";`,
		`export type State = "queued" | "preparing" | "running" | "needs_input" | "verifying" | "succeeded" | "failed" | "cancelled" | "timed_out";`,
		"  question?: Question;\n",  // a pointer is optional
		"  verify_exit?: number;\n", // *int
		"  created_at: string;\n",   // time.Time
		"  data?: unknown;\n",       // json.RawMessage, omitempty
		"  states?: State[];\n",     // a slice of a named string type
		"export interface StartManyItem extends Partial<StartResult> {", // embedded pointer
		`  "job/file": [FileParams, FileResult];`,
		`  "question/asked": QuestionNotice;`,
		"  Conflict: -32012,\n",
	} {
		if !bytes.Contains(ts, []byte(want)) {
			t.Errorf("generated.ts lacks %q", want)
		}
	}
	for _, want := range []string{"#### `job/merge`", "| `rev` | `string` |  | Rev is base or head. |", "## Reconnecting"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("protocol.md lacks %q", want)
		}
	}
}
