package tool

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSchemaFromStructs checks what the argument structs' tags cannot say
// alone: grep's max_results describes the default grep uses, and
// run_shell's timeout_s is bounded by the workspace's options.
func TestSchemaFromStructs(t *testing.T) {
	f := newFixture(t, &Options{ShellTimeout: 30 * time.Second, MaxShellTimeout: 90 * time.Second})
	prop := func(tool, name string) map[string]any {
		t.Helper()
		props := findTool(t, f.w, tool).Parameters["properties"].(map[string]any)
		return props[name].(map[string]any)
	}
	if desc := prop("grep", "max_results")["description"].(string); !strings.Contains(desc, fmt.Sprintf("(default %d)", defaultGrepMax)) {
		t.Errorf("max_results: %q does not name the default %d", desc, defaultGrepMax)
	}
	if p := prop("run_shell", "timeout_s"); p["minimum"] != 1.0 || p["maximum"] != 90.0 {
		t.Errorf("timeout_s: %v", p)
	}
	_, err := call(t, f.w, "run_shell", obj{"command": "true", "timeout_s": 91})
	wantErr(t, err, `"timeout_s" is 91; it must be between 1 and 90`)
}
