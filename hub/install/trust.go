package install

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/hub-agents/hub/hub/internal/pathx"
)

// Gemini CLI starts MCP servers (hub among them) only in a folder it
// trusts. Folder trust is on unless settings.json turns it off; a folder is
// trusted by a rule in trustedFolders.json (the longest matching path wins:
// TRUST_FOLDER, TRUST_PARENT for the rule's parent, DO_NOT_TRUST), or by
// GEMINI_CLI_TRUST_WORKSPACE=true. With no rule the interactive CLI asks;
// headless (`gemini -p`) it runs untrusted, without hub's tools.

// Gemini's trust levels, as trustedFolders.json spells them.
const (
	trustFolder = "TRUST_FOLDER"
	trustParent = "TRUST_PARENT"
	doNotTrust  = "DO_NOT_TRUST"
)

// trustCheck says whether the client runs hub in dir; ok is false for a
// client without folder trust.
func trustCheck(c Client, e Env, dir string) (Check, bool) {
	if c.Name != Gemini.Name || dir == "" {
		return Check{}, false
	}
	ch := func(st Status, fix, format string, args ...any) (Check, bool) {
		return Check{Name: "trust", Status: st, Detail: fmt.Sprintf(format, args...), Fix: fix}, true
	}
	switch {
	case e.getenv("GEMINI_RESTRICTED_MODE") == "true":
		return ch(Fail, "unset GEMINI_RESTRICTED_MODE", "GEMINI_RESTRICTED_MODE=true: Gemini CLI trusts no folder and starts no MCP server, so hub's tools are missing")
	case e.getenv("GEMINI_CLI_TRUST_WORKSPACE") == "false":
		return ch(Fail, "unset GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_CLI_TRUST_WORKSPACE=false: Gemini CLI starts no MCP server, so hub's tools are missing")
	case e.getenv("GEMINI_CLI_TRUST_WORKSPACE") == "true":
		return ch(OK, "", "GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder")
	}
	settings := c.ConfigFile(e)
	if src, exists, err := readFile(settings); err == nil && exists {
		if ft, err := readJSONEntry(src, c.syntax(), "security", "folderTrust"); err == nil && ft["enabled"] == false {
			return ch(OK, "", "folder trust is off in %s", settings)
		}
	}
	file := trustedFoldersFile(e)
	rules, err := readTrustRules(file)
	if err != nil {
		return ch(Fail, "edit "+file+" by hand (Gemini CLI refuses to start while it does not read)", "%s: %v", file, err)
	}
	trust := "in gemini: /permissions trust " + dir
	switch level, rule := trustOf(rules, dir); level {
	case trustFolder, trustParent:
		return ch(OK, "", "%s is trusted (%s %s in %s)", dir, rule, level, file)
	case doNotTrust:
		return ch(Warn, trust, "Gemini CLI does not trust %s (%s %s in %s): it starts no MCP server there, so hub's tools are missing", dir, rule, level, file)
	default:
		return ch(Warn, trust, "Gemini CLI has not been told whether to trust %s: it asks at its first start there, and headless (gemini -p) runs without hub's tools until it is trusted", dir)
	}
}

// trustedFoldersFile is Gemini CLI's list of folder rules.
func trustedFoldersFile(e Env) string {
	if p := e.getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	return filepath.Join(geminiDir(e), "trustedFolders.json")
}

// readTrustRules reads trustedFolders.json (comments allowed, as Gemini CLI
// reads it); a missing file has no rules.
func readTrustRules(file string) (map[string]string, error) {
	src, exists, err := readFile(file)
	if err != nil || !exists {
		return nil, err
	}
	var raw map[string]any
	std, err := standardJSON(src)
	if err == nil {
		err = json.Unmarshal(std, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("not a JSON object of folder rules: %v", err)
	}
	rules := map[string]string{}
	for path, v := range raw {
		if level, ok := v.(string); ok && (level == trustFolder || level == trustParent || level == doNotTrust) {
			rules[path] = level
		}
	}
	return rules, nil
}

// trustOf is the level the longest rule covering dir gives it, and that
// rule's path ("" when none covers it). Paths are compared resolved.
func trustOf(rules map[string]string, dir string) (level, rule string) {
	dir = realPath(dir)
	for path, lv := range rules {
		scope := path
		if lv == trustParent {
			scope = filepath.Dir(path)
		}
		if _, ok := pathx.Under(realPath(scope), dir); !ok || len(path) <= len(rule) {
			continue
		}
		level, rule = lv, path
	}
	return level, rule
}

// realPath resolves p's links when it exists, and cleans it otherwise.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return filepath.Clean(p)
}
