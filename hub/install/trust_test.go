package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGeminiTrust: doctor's folder-trust check reads trustedFolders.json as
// Gemini CLI does (longest rule wins, TRUST_PARENT covers the rule's parent,
// paths compared resolved), and the settings and variables that override it.
func TestGeminiTrust(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	sub := filepath.Join(proj, "sub")
	sibling := filepath.Join(root, "project") // shares proj's prefix, not its folder
	for _, d := range []string{sub, sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		rules    string // trustedFolders.json; "" for none
		settings string // settings.json; "" for none
		env      map[string]string
		dir      string
		want     Status
		detail   string
	}{
		{name: "no rules", dir: proj, want: Warn, detail: "has not been told whether to trust " + proj},
		{name: "trusted", rules: `{"` + proj + `": "TRUST_FOLDER"}`, dir: proj, want: OK, detail: "is trusted"},
		{name: "inside a trusted folder", rules: `{"` + proj + `": "TRUST_FOLDER"}`, dir: sub, want: OK},
		{name: "a prefix is not a parent", rules: `{"` + proj + `": "TRUST_FOLDER"}`, dir: sibling, want: Warn},
		{name: "trust parent", rules: `{"` + filepath.Join(proj, "other") + `": "TRUST_PARENT"}`, dir: sub, want: OK, detail: "TRUST_PARENT"},
		{name: "the longer rule wins", rules: `{"` + root + `": "TRUST_FOLDER", "` + sub + `": "DO_NOT_TRUST"}`, dir: sub, want: Warn, detail: "does not trust"},
		{name: "the longer rule wins the other way", rules: `{"` + root + `": "DO_NOT_TRUST", "` + proj + `": "TRUST_FOLDER"}`, dir: sub, want: OK},
		{name: "through a link", rules: `{"` + proj + `": "TRUST_FOLDER"}`, dir: link, want: OK},
		{name: "a rule on the link", rules: `{"` + link + `": "DO_NOT_TRUST"}`, dir: sub, want: Warn, detail: "does not trust"},
		{name: "comments", rules: "// mine\n{\"" + proj + "\": \"TRUST_FOLDER\", /* x */ \"" + sibling + "\": \"NOPE\"}", dir: proj, want: OK},
		{name: "not JSON", rules: `{"` + proj + `": TRUST_FOLDER}`, dir: proj, want: Fail, detail: "not a JSON object of folder rules"},
		{name: "trust off in settings", settings: `{"security": {"folderTrust": {"enabled": false}}, "mcpServers": {}}`, dir: proj, want: OK, detail: "folder trust is off"},
		{name: "trust on in settings", settings: `{"security": {"folderTrust": {"enabled": true}}}`, dir: proj, want: Warn},
		{name: "trusted by variable", rules: `{"` + proj + `": "DO_NOT_TRUST"}`, env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}, dir: proj, want: OK},
		{name: "untrusted by variable", rules: `{"` + proj + `": "TRUST_FOLDER"}`, env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "false"}, dir: proj, want: Fail},
		{name: "restricted mode", env: map[string]string{"GEMINI_RESTRICTED_MODE": "true"}, dir: proj, want: Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			vars := map[string]string{}
			for k, v := range tc.env {
				vars[k] = v
			}
			w.env.Getenv = func(k string) string { return vars[k] }
			if tc.rules != "" {
				w.write(".gemini/trustedFolders.json", tc.rules, 0o600)
			}
			if tc.settings != "" {
				w.write(".gemini/settings.json", tc.settings, 0o644)
			}
			ch, ok := trustCheck(Gemini, w.env, tc.dir)
			if !ok || ch.Name != "trust" || ch.Status != tc.want || !strings.Contains(ch.Detail, tc.detail) {
				t.Errorf("got %+v, want %s with %q", ch, tc.want, tc.detail)
			}
			if ch.Status != OK && ch.Fix == "" {
				t.Errorf("%s without a fix: %+v", ch.Status, ch)
			}
		})
	}
	// The rules file may move, and other clients have no such check.
	w := newWorld(t)
	moved := filepath.Join(root, "rules.json")
	if err := os.WriteFile(moved, []byte(`{"`+proj+`": "TRUST_FOLDER"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env.Getenv = func(k string) string {
		if k == "GEMINI_CLI_TRUSTED_FOLDERS_PATH" {
			return moved
		}
		return ""
	}
	if ch, _ := trustCheck(Gemini, w.env, proj); ch.Status != OK || !strings.Contains(ch.Detail, moved) {
		t.Errorf("GEMINI_CLI_TRUSTED_FOLDERS_PATH: %+v", ch)
	}
	for _, c := range []Client{Claude, Codex, OpenCode, Qwen} {
		if _, ok := trustCheck(c, w.env, proj); ok {
			t.Errorf("%s has a folder-trust check", c.Name)
		}
	}
}

// TestDiagnoseGeminiTrust: doctor checks trust once hub's entry is there.
func TestDiagnoseGeminiTrust(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	w := newWorld(t)
	dir := t.TempDir()
	o := DoctorOptions{Env: w.env, Timeout: 5 * time.Second, Want: testEntry, Dir: dir}
	if _, ok := statuses(Diagnose(t.Context(), Gemini, o))["trust"]; ok {
		t.Error("a trust check without hub's entry")
	}
	w.write(".gemini/settings.json", `{"mcpServers": {"hub": {"command": "/opt/hub/bin/hub", "args": ["mcp"]}}}`, 0o644)
	w.write(".gemini/trustedFolders.json", `{"`+dir+`": "DO_NOT_TRUST"}`, 0o600)
	r := Diagnose(t.Context(), Gemini, o)
	if st := statuses(r)["trust"]; st != Warn {
		t.Errorf("trust check: %s in %+v", st, r.Checks)
	}
}
