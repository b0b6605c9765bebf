package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testEntry = Entry{Command: "/opt/hub/bin/hub", Args: []string{"mcp"}, Env: map[string]string{"HUB_HOME": "/data/hub"}}

// world is a scratch home for one test.
type world struct {
	t   *testing.T
	env Env
}

func newWorld(t *testing.T) *world {
	home := t.TempDir()
	vars := map[string]string{}
	return &world{t: t, env: Env{Home: home, Getenv: func(k string) string { return vars[k] }}}
}

func (w *world) path(rel string) string { return filepath.Join(w.env.Home, rel) }

func (w *world) write(rel, text string, mode os.FileMode) {
	w.t.Helper()
	p := w.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func (w *world) exists(rel string) bool {
	_, err := os.Lstat(w.path(rel))
	return err == nil
}

func (w *world) mode(rel string) os.FileMode {
	w.t.Helper()
	fi, err := os.Stat(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func (w *world) install(c Client, en Entry) *Plan {
	w.t.Helper()
	p, err := PlanInstall(w.env, en, []Client{c})
	if err != nil {
		w.t.Fatalf("PlanInstall: %v", err)
	}
	if err := p.Apply(); err != nil {
		w.t.Fatalf("Apply: %v", err)
	}
	return p
}

func (w *world) uninstall(c Client) *Plan {
	w.t.Helper()
	p, err := PlanUninstall(w.env, []Client{c})
	if err != nil {
		w.t.Fatalf("PlanUninstall: %v", err)
	}
	if err := p.Apply(); err != nil {
		w.t.Fatalf("Apply: %v", err)
	}
	return p
}

func actions(p *Plan) []Action {
	var out []Action
	for _, c := range p.Changes {
		out = append(out, c.Action)
	}
	return out
}

// roundTrip installs into a config that holds before, checks the result
// with check, installs again (nothing changes), and uninstalls: the file
// is then byte for byte what it was.
func roundTrip(t *testing.T, c Client, rel, before string, check func(t *testing.T, after string)) {
	t.Helper()
	w := newWorld(t)
	w.write(rel, before, 0o640)
	p := w.install(c, testEntry)
	if got := p.Changes[0].Action; got != Update {
		t.Fatalf("install: action %s, want update", got)
	}
	if p.Changes[0].Backup != w.path(rel)+BackupSuffix {
		t.Errorf("install: backup %q, want %q", p.Changes[0].Backup, w.path(rel)+BackupSuffix)
	}
	after := w.read(rel)
	check(t, after)
	if got := w.mode(rel); got != 0o640 {
		t.Errorf("mode after install: %o, want 640", got)
	}
	if got := w.read(rel + BackupSuffix); got != before {
		t.Errorf("backup:\n%s\nwant the original:\n%s", got, before)
	}
	again, err := PlanInstall(w.env, testEntry, []Client{c})
	if err != nil {
		t.Fatal(err)
	}
	if again.Pending() {
		t.Errorf("a second install would change files: %v", actions(again))
	}
	w.uninstall(c)
	if diff := cmp.Diff(before, w.read(rel)); diff != "" {
		t.Errorf("uninstall did not give back the file (-before +after):\n%s", diff)
	}
	if got := w.mode(rel); got != 0o640 {
		t.Errorf("mode after uninstall: %o, want 640", got)
	}
}

func TestClaudeConfig(t *testing.T) {
	tests := []struct {
		name, before string
		want         []string // lines the file has after install
	}{{
		name: "other keys, no final newline",
		before: `{
  "numStartups": 3,
  "projects": {
    "/src/app": {
      "allowedTools": [],
      "history": [{"display": "hi", "pastedContents": {}}]
    }
  },
  "userID": "abc"
}`,
		want: []string{`  "userID": "abc",`, `  "mcpServers": {`, `    "hub": {`, `      "command": "/opt/hub/bin/hub",`, `      "env": {`, `        "HUB_HOME": "/data/hub"`},
	}, {
		name: "other servers",
		before: `{
	"mcpServers": {
		"other": {"type": "stdio", "command": "other-mcp", "args": []}
	},
	"theme": "dark"
}
`,
		want: []string{"\t\t\"other\": {\"type\": \"stdio\", \"command\": \"other-mcp\", \"args\": []},", "\t\t\"hub\": {", "\t\t\t\"type\": \"stdio\",", "\t\"theme\": \"dark\""},
	}, {
		name:   "one line",
		before: `{"a":1,"mcpServers":{}}`,
		want:   []string{`{"a":1,"mcpServers":{"hub":{"type":"stdio","command":"/opt/hub/bin/hub","args":["mcp"],"env":{"HUB_HOME":"/data/hub"}}}}`},
	}, {
		name:   "empty object",
		before: "{}\n",
		want:   []string{`  "mcpServers": {`},
	}, {
		name:   "CRLF",
		before: "{\r\n  \"a\": 1\r\n}\r\n",
		want:   []string{`  "a": 1,`, `    "hub": {`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roundTrip(t, Claude, ".claude.json", tc.before, func(t *testing.T, after string) {
				for _, l := range tc.want {
					if !strings.Contains(after+"\n", l+"\n") {
						t.Errorf("no line %q in\n%s", l, after)
					}
				}
				en, err := Claude.ReadEntry([]byte(after))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(&testEntry, en); diff != "" {
					t.Errorf("entry read back (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestOpenCodeJSONC(t *testing.T) {
	before := `{
  // my models
  "$schema": "https://opencode.ai/config.json",
  "model": "anthropic/claude", /* inline */
  "mcp": {
    "other": { "type": "remote", "url": "https://example.com/mcp" }, // trailing comma next
  },
}
`
	roundTrip(t, OpenCode, ".config/opencode/opencode.json", before, func(t *testing.T, after string) {
		for _, l := range []string{"  // my models", `  "model": "anthropic/claude", /* inline */`,
			`    "other": { "type": "remote", "url": "https://example.com/mcp" }, // trailing comma next`,
			`    "hub": {`, `      "type": "local",`, `      "enabled": true,`, `      "environment": {`} {
			if !strings.Contains(after, l+"\n") {
				t.Errorf("no line %q in\n%s", l, after)
			}
		}
		en, err := OpenCode.ReadEntry([]byte(after))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&testEntry, en); diff != "" {
			t.Errorf("entry read back (-want +got):\n%s", diff)
		}
	})
}

// Gemini CLI and Qwen Code read their settings.json as JSON with comments
// (stripped before JSON.parse): comments, other servers, odd layouts stay.
func TestGeminiQwenSettings(t *testing.T) {
	tests := []struct {
		name, before string
		want         []string // lines the file has after install
	}{{
		name: "comments and other servers",
		before: `{
  // my model
  "model": { "name": "gemini-2.5-pro" }, /* inline */
  "mcpServers": {
    "docs": { "command": "docs-mcp", "args": ["--port", "0"] } // keep me
  },
  "privacy": {
    "usageStatisticsEnabled": false
  }
}
`,
		want: []string{"  // my model", `  "model": { "name": "gemini-2.5-pro" }, /* inline */`,
			`    "docs": { "command": "docs-mcp", "args": ["--port", "0"] }, // keep me`,
			`    "hub": {`, `      "command": "/opt/hub/bin/hub",`, `      "args": [`, `      "env": {`, `        "HUB_HOME": "/data/hub"`, `      "trust": true`},
	}, {
		name:   "tabs, no final newline",
		before: "{\n\t\"general\": {\"vimMode\": true}\n}",
		want:   []string{"\t\"general\": {\"vimMode\": true},", "\t\"mcpServers\": {", "\t\t\"hub\": {", "\t\t\t\"trust\": true"},
	}, {
		name:   "one line",
		before: `{"mcpServers":{"docs":{"command":"docs-mcp"}}}`,
		want:   []string{`{"mcpServers":{"docs":{"command":"docs-mcp"},"hub":{"command":"/opt/hub/bin/hub","args":["mcp"],"env":{"HUB_HOME":"/data/hub"},"trust":true}}}`},
	}, {
		name:   "comment in an empty file",
		before: "// settings\n{}\n",
		want:   []string{"// settings", `  "mcpServers": {`},
	}}
	for _, c := range []Client{Gemini, Qwen} {
		rel := map[string]string{"gemini": ".gemini/settings.json", "qwen": ".qwen/settings.json"}[c.Name]
		for _, tc := range tests {
			t.Run(c.Name+"/"+tc.name, func(t *testing.T) {
				roundTrip(t, c, rel, tc.before, func(t *testing.T, after string) {
					for _, l := range tc.want {
						if !strings.Contains(after+"\n", l+"\n") {
							t.Errorf("no line %q in\n%s", l, after)
						}
					}
					var v map[string]any // what the client reads: JSON once the comments are gone
					if err := json.Unmarshal(stripJSONC([]byte(after)), &v); err != nil {
						t.Errorf("not JSON with its comments stripped: %v\n%s", err, after)
					}
					en, err := c.ReadEntry([]byte(after))
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(&testEntry, en); diff != "" {
						t.Errorf("entry read back (-want +got):\n%s", diff)
					}
				})
			})
		}
	}
}

// An entry the user wrote for hub keeps the keys hub does not own (a
// timeout, includeTools) and gets hub's command, args, env and trust.
func TestQwenExistingEntry(t *testing.T) {
	w := newWorld(t)
	w.write(".qwen/settings.json", `{
  "mcpServers": {
    "hub": {
      "command": "/old/hub",
      "args": ["mcp"],
      "timeout": 900000, // wait longer
      "trust": false
    }
  }
}
`, 0o600)
	w.install(Qwen, Entry{Command: "/new/hub", Args: []string{"mcp"}})
	want := `{
  "mcpServers": {
    "hub": {
      "command": "/new/hub",
      "args": ["mcp"],
      "timeout": 900000, // wait longer
      "trust": true
    }
  }
}
`
	if diff := cmp.Diff(want, w.read(".qwen/settings.json")); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if got := w.mode(".qwen/settings.json"); got != 0o600 {
		t.Errorf("mode %o, want 600 as it was", got)
	}
}

func TestCodexTOML(t *testing.T) {
	tests := []struct{ name, before string }{{
		name: "comments and tables",
		before: `# Codex settings
model = "gpt-5.5"   # the default
approval_policy = "never"

[model_providers.local]
name = "Local"
base_url = "http://127.0.0.1:8080/v1"
headers = { "X-Key" = 'v', n = 1_000 }

# servers
[mcp_servers.other]
command = "other"
args = [
  "--flag", # why
  """multi
line""",
]

[profiles.fast]
model = "gpt-5.5-mini"
when = 1979-05-27 07:32:00Z
`,
	}, {
		name:   "no final newline",
		before: "model = \"o3\"",
	}, {
		name:   "blank lines at the end",
		before: "model = \"o3\"\n\n\n",
	}, {
		name:   "CRLF",
		before: "model = \"o3\"\r\n[tui]\r\ntheme = \"dark\"\r\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roundTrip(t, Codex, ".codex/config.toml", tc.before, func(t *testing.T, after string) {
				if !strings.HasPrefix(after, strings.TrimRight(tc.before, "\n")) {
					t.Errorf("install changed the text before its table:\n%s", after)
				}
				want := `[mcp_servers.hub]
command = "/opt/hub/bin/hub"
args = ["mcp"]
env = { HUB_HOME = "/data/hub" }
startup_timeout_sec = 30
tool_timeout_sec = 600
default_tools_approval_mode = "approve"
`
				if !strings.HasSuffix(after, "\n\n"+want) {
					t.Errorf("the file does not end with a blank line and hub's table:\n%s", after)
				}
				en, err := Codex.ReadEntry([]byte(after))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(&testEntry, en); diff != "" {
					t.Errorf("entry read back (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// Codex's agents are an array of tables with a sub-table each: the
// layout installs and uninstalls, every other byte kept.
func TestCodexAgentsTables(t *testing.T) {
	roundTrip(t, Codex, ".codex/config.toml", agentsConfig, func(t *testing.T, after string) {
		if !strings.HasPrefix(after, agentsConfig+"\n[mcp_servers.hub]\n") {
			t.Errorf("install did not append hub's table after the file's text:\n%s", after)
		}
		en, err := Codex.ReadEntry([]byte(after))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&testEntry, en); diff != "" {
			t.Errorf("entry read back (-want +got):\n%s", diff)
		}
	})
}

// An entry already there is updated key by key: keys hub does not own
// stay, and so do comments and indents; the env sub-table `codex mcp add`
// writes gives way to hub's inline env.
func TestCodexExistingEntry(t *testing.T) {
	w := newWorld(t)
	w.write(".codex/config.toml", `[mcp_servers.hub]
  command = "/old/hub" # moved
args = ["mcp"]
enabled_tools = ["start", "wait"]

[mcp_servers.hub.env]
FOO = "bar"

[tui]
theme = "dark"
`, 0o600)
	p := w.install(Codex, testEntry)
	if diff := cmp.Diff([]Action{Update, Create}, actions(p)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	want := `[mcp_servers.hub]
  command = "/opt/hub/bin/hub" # moved
args = ["mcp"]
enabled_tools = ["start", "wait"]
env = { HUB_HOME = "/data/hub" }
startup_timeout_sec = 30
tool_timeout_sec = 600
default_tools_approval_mode = "approve"

[tui]
theme = "dark"
`
	if diff := cmp.Diff(want, w.read(".codex/config.toml")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if again, _ := PlanInstall(w.env, testEntry, []Client{Codex}); again.Pending() {
		t.Errorf("a second install would change files: %v", actions(again))
	}
	w.uninstall(Codex)
	if diff := cmp.Diff("[tui]\ntheme = \"dark\"\n", w.read(".codex/config.toml")); diff != "" {
		t.Errorf("after uninstall (-want +got):\n%s", diff)
	}
}

func TestClaudeExistingEntry(t *testing.T) {
	w := newWorld(t)
	w.write(".claude.json", `{
  "mcpServers": {
    "hub": {
      "type": "stdio",
      "command": "/old/hub",
      "args": [
        "mcp"
      ],
      "env": {"OLD": "1"},
      "timeout": 5
    }
  }
}
`, 0o600)
	w.install(Claude, Entry{Command: "/new/hub", Args: []string{"mcp"}})
	want := `{
  "mcpServers": {
    "hub": {
      "type": "stdio",
      "command": "/new/hub",
      "args": [
        "mcp"
      ],
      "timeout": 5
    }
  }
}
`
	if diff := cmp.Diff(want, w.read(".claude.json")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// New files: made with the client's mode, and gone again after uninstall.
func TestNewFiles(t *testing.T) {
	for _, tc := range []struct {
		c     Client
		files []string
		mode  os.FileMode
	}{
		{Claude, []string{".claude.json", ".claude/skills/hub-delegate/SKILL.md"}, 0o600},
		{Codex, []string{".codex/config.toml", ".codex/AGENTS.md"}, 0o600},
		{OpenCode, []string{".config/opencode/opencode.json", ".config/opencode/AGENTS.md"}, 0o644},
		{Gemini, []string{".gemini/settings.json", ".gemini/skills/hub-delegate/SKILL.md"}, 0o644},
		{Qwen, []string{".qwen/settings.json", ".qwen/skills/hub-delegate/SKILL.md"}, 0o644},
	} {
		t.Run(tc.c.Name, func(t *testing.T) {
			w := newWorld(t)
			p := w.install(tc.c, testEntry)
			if diff := cmp.Diff([]Action{Create, Create}, actions(p)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if got := w.mode(tc.files[0]); got != tc.mode {
				t.Errorf("mode %o, want %o", got, tc.mode)
			}
			if p.Changes[0].Text == "" || !strings.Contains(p.Changes[0].Text, testEntry.Command) {
				t.Errorf("the plan does not show the entry: %q", p.Changes[0].Text)
			}
			for _, f := range tc.files {
				if w.exists(f + BackupSuffix) {
					t.Errorf("%s: a backup of a file that did not exist", f)
				}
			}
			if tc.c.ownsInstructions() && w.read(tc.files[1]) != Skill() {
				t.Errorf("the skill file is not the skill")
			}
			if again, _ := PlanInstall(w.env, testEntry, []Client{tc.c}); again.Pending() {
				t.Errorf("a second install would change files: %v", actions(again))
			}
			u := w.uninstall(tc.c)
			if diff := cmp.Diff([]Action{Remove, Remove}, actions(u)); diff != "" {
				t.Errorf("uninstall actions (-want +got):\n%s", diff)
			}
			for _, f := range tc.files {
				if w.exists(f) || w.exists(f+BackupSuffix) {
					t.Errorf("%s (or a backup of it) is still there after uninstall", f)
				}
			}
			if tc.c.ownsInstructions() && w.exists(filepath.Dir(tc.files[1])) {
				t.Errorf("the skill's folder is still there")
			}
			if again, _ := PlanUninstall(w.env, []Client{tc.c}); again.Pending() {
				t.Errorf("a second uninstall would change files: %v", actions(again))
			}
		})
	}
}

func TestAgentsBlock(t *testing.T) {
	before := "# My rules\n\nAlways run the tests.\n"
	w := newWorld(t)
	w.write(".codex/AGENTS.md", before, 0o644)
	w.install(Codex, testEntry)
	got := w.read(".codex/AGENTS.md")
	if want := before + "\n" + blockText(Instructions()); got != want {
		t.Errorf("AGENTS.md:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "name: hub-delegate") {
		t.Errorf("the block carries the skill's front matter")
	}
	// An old block is replaced in place; the text after it stays.
	w.write(".codex/AGENTS.md", before+"\n"+blockText("old advice\n")+"\n## Mine, after\n", 0o644)
	w.install(Codex, testEntry)
	if want := before + "\n" + blockText(Instructions()) + "\n## Mine, after\n"; w.read(".codex/AGENTS.md") != want {
		t.Errorf("AGENTS.md after update:\n%s", w.read(".codex/AGENTS.md"))
	}
	w.uninstall(Codex)
	if want := before + "\n\n## Mine, after\n"; w.read(".codex/AGENTS.md") != want {
		t.Errorf("AGENTS.md after uninstall:\n%q\nwant\n%q", w.read(".codex/AGENTS.md"), want)
	}
}

// A file install cannot edit safely fails the plan, for every client
// asked, and nothing is written anywhere.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name, rel, text, want string
	}{
		{"claude json", ".claude.json", `{"a": 1,}`, "line 1, column 9: expected a quoted key"},
		{"claude comment", ".claude.json", "{\n// no\n}", "line 2, column 1: expected a quoted key"},
		{"claude array", ".claude.json", `[1]`, "not a JSON object"},
		{"claude duplicate", ".claude.json", `{"mcpServers": {"hub": {}, "hub": {}}}`, `the key "hub" appears twice`},
		{"claude servers not object", ".claude.json", `{"mcpServers": []}`, `"mcpServers" is not an object`},
		{"opencode", ".config/opencode/opencode.json", "{\n  \"mcp\": {\n", "line 3, column 1: expected a quoted key"},
		{"toml unclosed string", ".codex/config.toml", "model = \"o3\n", "line 1, column 12: basic strings cannot have new lines"},
		{"toml bare value", ".codex/config.toml", "a = b\n", `line 1, column 5: unexpected character U+0062 'b' at start of value`},
		{"toml two on a line", ".codex/config.toml", "a = 1 b = 2\n", "line 1, column 7: expected newline but got U+0062 'b'"},
		{"toml duplicate table", ".codex/config.toml", "[a]\nx = 1\n[a]\n", "line 3, column 2: table a already exists"},
		{"toml impossible date", ".codex/config.toml", "[tui]\nsince = 2026-02-30\n", "line 2, column 17: impossible date"},
		{"toml duplicate key", ".codex/config.toml", "[mcp_servers.hub]\ncommand = \"a\"\ncommand = \"b\"\n", "line 3, column 1: key command is already defined"},
		{"toml dotted hub", ".codex/config.toml", "[mcp_servers]\nhub.command = \"hub\"\n", "line 2 sets mcp_servers.hub.command with a key rather than a [mcp_servers.hub] table"},
		{"toml inline servers", ".codex/config.toml", "mcp_servers = { other = { command = \"x\" } }\n", "line 1 sets mcp_servers with a key"},
		{"toml array of tables", ".codex/config.toml", "[[mcp_servers]]\nname = \"x\"\n", "array of tables"},
		{"agents markers", ".codex/AGENTS.md", "mine\n" + blockBeginLine + "\nhalf\n", "never closed"},
		{"gemini trailing comma", ".gemini/settings.json", "{\n  \"a\": 1,\n}\n", "line 3, column 1: expected a quoted key"},
		{"gemini not json", ".gemini/settings.json", "mcpServers:\n  hub: {}\n", "line 1, column 1: the document is not a JSON object"},
		{"gemini servers not object", ".gemini/settings.json", `{"mcpServers": ["hub"]}`, `"mcpServers" is not an object`},
		{"qwen unclosed", ".qwen/settings.json", "{\n  // mine\n  \"mcpServers\": {\n", "line 4, column 1: expected a quoted key"},
		{"qwen unclosed comment", ".qwen/settings.json", "{ /* mine\n}\n", "a /* comment is never closed"},
		{"qwen duplicate", ".qwen/settings.json", `{"mcpServers": {"hub": {}, "hub": {}}}`, `the key "hub" appears twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(tc.rel, tc.text, 0o600)
			_, err := PlanInstall(w.env, testEntry, Clients())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), w.path(tc.rel)) {
				t.Fatalf("err = %v, want one naming %s and saying %q", err, w.path(tc.rel), tc.want)
			}
			if w.read(tc.rel) != tc.text {
				t.Errorf("the file changed")
			}
			for _, f := range []string{".claude.json", ".claude/skills", ".codex/config.toml", ".codex/AGENTS.md", ".config/opencode/opencode.json", ".config/opencode/AGENTS.md",
				".gemini/settings.json", ".gemini/skills", ".qwen/settings.json", ".qwen/skills"} {
				if f != tc.rel && w.exists(f) {
					t.Errorf("%s was written", f)
				}
			}
			if w.exists(tc.rel + BackupSuffix) {
				t.Errorf("a backup was written")
			}
			if _, err := PlanUninstall(w.env, Clients()); err == nil && !strings.HasSuffix(tc.name, "servers not object") {
				t.Errorf("uninstall planned over a malformed file")
			}
		})
	}
}

// The backup is made once: a later change keeps the first original.
func TestBackupOnce(t *testing.T) {
	w := newWorld(t)
	w.write(".claude.json", "{\"v\": 1}\n", 0o600)
	w.install(Claude, testEntry)
	w.install(Claude, Entry{Command: "/elsewhere/hub", Args: []string{"mcp"}})
	if got := w.read(".claude.json" + BackupSuffix); got != "{\"v\": 1}\n" {
		t.Errorf("backup = %q, want the first original", got)
	}
	if got := w.mode(".claude.json" + BackupSuffix); got != 0o600 {
		t.Errorf("backup mode %o, want 600", got)
	}
}

// A config that is a symlink (a dotfiles checkout) stays one: the file it
// points to is edited.
func TestSymlink(t *testing.T) {
	w := newWorld(t)
	w.write("dotfiles/claude.json", "{\"v\": 1}\n", 0o600)
	if err := os.Symlink(w.path("dotfiles/claude.json"), w.path(".claude.json")); err != nil {
		t.Fatal(err)
	}
	w.install(Claude, testEntry)
	if fi, err := os.Lstat(w.path(".claude.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf(".claude.json is no longer a symlink")
	}
	if !strings.Contains(w.read("dotfiles/claude.json"), `"hub"`) {
		t.Errorf("the file the link points to was not edited")
	}
}

// Apply edits the file as it is when it writes: a client that rewrote
// the file after the plan was made keeps its change.
func TestApplyRereads(t *testing.T) {
	w := newWorld(t)
	w.write(".claude.json", "{\"v\": 1}\n", 0o600)
	p, err := PlanInstall(w.env, testEntry, []Client{Claude})
	if err != nil {
		t.Fatal(err)
	}
	w.write(".claude.json", "{\"v\": 2}\n", 0o600)
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if got := w.read(".claude.json"); !strings.Contains(got, `"v": 2`) || !strings.Contains(got, `"hub"`) {
		t.Errorf("after apply:\n%s", got)
	}
}

func TestPaths(t *testing.T) {
	vars := map[string]string{}
	e := Env{Home: "/home/u", Getenv: func(k string) string { return vars[k] }}
	check := func(c Client, config, instr string) {
		t.Helper()
		if got := c.ConfigFile(e); got != config {
			t.Errorf("%s config = %s, want %s", c.Name, got, config)
		}
		if got := c.InstructionsFile(e); got != instr {
			t.Errorf("%s instructions = %s, want %s", c.Name, got, instr)
		}
	}
	check(Claude, "/home/u/.claude.json", "/home/u/.claude/skills/hub-delegate/SKILL.md")
	check(Codex, "/home/u/.codex/config.toml", "/home/u/.codex/AGENTS.md")
	check(OpenCode, "/home/u/.config/opencode/opencode.json", "/home/u/.config/opencode/AGENTS.md")
	check(Gemini, "/home/u/.gemini/settings.json", "/home/u/.gemini/skills/hub-delegate/SKILL.md")
	check(Qwen, "/home/u/.qwen/settings.json", "/home/u/.qwen/skills/hub-delegate/SKILL.md")
	vars["CLAUDE_CONFIG_DIR"] = "/cc"
	vars["CODEX_HOME"] = "/cx"
	vars["XDG_CONFIG_HOME"] = "/xdg"
	check(Claude, "/cc/.claude.json", "/cc/skills/hub-delegate/SKILL.md")
	check(Codex, "/cx/config.toml", "/cx/AGENTS.md")
	check(OpenCode, "/xdg/opencode/opencode.json", "/xdg/opencode/AGENTS.md")
	vars["OPENCODE_CONFIG"] = "/etc/oc.json"
	check(OpenCode, "/etc/oc.json", "/xdg/opencode/AGENTS.md")
	// GEMINI_CLI_HOME stands in for the home directory; QWEN_HOME is the
	// folder itself, ~ and relative paths resolved as Qwen Code does.
	vars["GEMINI_CLI_HOME"] = "/gh"
	check(Gemini, "/gh/.gemini/settings.json", "/gh/.gemini/skills/hub-delegate/SKILL.md")
	vars["QWEN_HOME"] = "/qh"
	check(Qwen, "/qh/settings.json", "/qh/skills/hub-delegate/SKILL.md")
	vars["QWEN_HOME"] = "~/cfg/qwen"
	check(Qwen, "/home/u/cfg/qwen/settings.json", "/home/u/cfg/qwen/skills/hub-delegate/SKILL.md")
	vars["QWEN_HOME"] = "~"
	check(Qwen, "/home/u/settings.json", "/home/u/skills/hub-delegate/SKILL.md")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	vars["QWEN_HOME"] = "rel/qwen"
	check(Qwen, filepath.Join(wd, "rel/qwen/settings.json"), filepath.Join(wd, "rel/qwen/skills/hub-delegate/SKILL.md"))

	// OpenCode reads opencode.jsonc over opencode.json: edit the one it reads.
	w := newWorld(t)
	w.write(".config/opencode/opencode.jsonc", "{}\n", 0o644)
	if got, want := OpenCode.ConfigFile(w.env), w.path(".config/opencode/opencode.jsonc"); got != want {
		t.Errorf("with opencode.jsonc: %s, want %s", got, want)
	}
}

func TestLookup(t *testing.T) {
	if cs, err := Lookup("all"); err != nil || len(cs) != 5 {
		t.Errorf("all: %v %v", cs, err)
	}
	if cs, err := Lookup("codex"); err != nil || cs[0] != Codex {
		t.Errorf("codex: %v %v", cs, err)
	}
	if cs, err := Lookup("qwen"); err != nil || cs[0] != Qwen {
		t.Errorf("qwen: %v %v", cs, err)
	}
	if _, err := Lookup("cursor"); err == nil || !strings.Contains(err.Error(), "claude, codex, opencode, gemini, qwen, or all") {
		t.Errorf("cursor: %v", err)
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{"a": "//not a comment", /* c */ "b": [1, 2, // x
], "c": "\"/*", }`
	var v map[string]any
	if err := jsonUnmarshal(stripJSONC([]byte(in)), &v); err != nil {
		t.Fatalf("%v: %s", err, stripJSONC([]byte(in)))
	}
	if v["a"] != "//not a comment" || v["c"] != `"/*` {
		t.Errorf("got %v", v)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// A file hub made gets no backup later either: it was never the user's
// original, and uninstall removes it when nothing else is in it.
func TestNoBackupOfHubsOwnFile(t *testing.T) {
	w := newWorld(t)
	w.install(Codex, testEntry)
	w.install(Codex, Entry{Command: "/elsewhere/hub", Args: []string{"mcp"}})
	if w.exists(".codex/config.toml"+BackupSuffix) || w.exists(".codex/AGENTS.md"+BackupSuffix) {
		t.Errorf("a backup of a file hub made")
	}
	w.uninstall(Codex)
	if w.exists(".codex/config.toml") || w.exists(".codex/AGENTS.md") {
		t.Errorf("uninstall left a file hub made")
	}
	// A client that added its own settings keeps them.
	w.install(OpenCode, testEntry)
	src := strings.Replace(w.read(".config/opencode/opencode.json"), "{\n", "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n", 1)
	w.write(".config/opencode/opencode.json", src, 0o644)
	w.uninstall(OpenCode)
	if got := w.read(".config/opencode/opencode.json"); got != "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n" {
		t.Errorf("after uninstall: %q", got)
	}
	if w.exists(".config/opencode/opencode.json" + BackupSuffix) {
		t.Errorf("uninstall backed up a file hub made")
	}
}
