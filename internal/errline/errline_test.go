package errline

import "testing"

// TestTellingLine: the line a one-line summary shows of a failed command is
// the error, not what the tool printed after it.
func TestTellingLine(t *testing.T) {
	node := "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module 'left-pad'\nRequire stack:\n- /w/index.js\n{\n  code: 'MODULE_NOT_FOUND'\n}\n\nNode.js v20.20.2\n"
	for out, want := range map[string]string{
		node:                                  "Error: Cannot find module 'left-pad'",
		"--- FAIL: TestX\nFAIL\n":             "--- FAIL: TestX",
		"ran 3 tests, 0 failures\nall done\n": "all done",
		"npm ERR! code ELIFECYCLE\n":          "npm ERR! code ELIFECYCLE",
		"just this\n\n":                       "just this",
	} {
		if got := Telling(out); got != want {
			t.Errorf("Telling(%q) = %q, want %q", out, got, want)
		}
	}
}
