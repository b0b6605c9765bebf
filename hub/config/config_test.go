package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_CONFIG_DIR", dir)
	for _, k := range []string{"HUB_MAX_RUNNING", "HUB_MONTHLY_CAP_USD", "HUB_DEFAULT_MAX_USD", "HUB_MAX_JOB_USD",
		"HUB_TIMEOUT_S", "HUB_VERIFY_TIMEOUT_S", "HUB_ASK_TIMEOUT_S", "HUB_STALL_TIMEOUT_S", "HUB_JOB_RETENTION_DAYS"} {
		t.Setenv(k, "")
	}
	got, err := Load()
	if err != nil || !reflect.DeepEqual(got, Defaults()) {
		t.Fatalf("no config: %+v %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_running": 7, "monthly_cap_usd": 12.5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_MAX_RUNNING", "3") // the environment wins
	got, err = Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.MaxRunning, want.MonthlyCapUSD = 3, 12.5
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ file, env, val, msg string }{
		{`{"max_running": `, "", "", "not valid JSON"},
		{`{}`, "HUB_MAX_RUNNING", "many", "not a whole number"},
		{`{}`, "HUB_MAX_RUNNING", "0", "at least 1"},
		{`{}`, "HUB_MONTHLY_CAP_USD", "NaN", "not a number of dollars"},
		{`{}`, "HUB_DEFAULT_MAX_USD", "-1", "must not be negative"},
		{`{}`, "HUB_ASK_TIMEOUT_S", "0", "at least 1 second"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.file), 0o600)
			t.Setenv("HUB_MAX_RUNNING", "")
			if tc.env != "" {
				t.Setenv(tc.env, tc.val)
			}
			if _, err := Load(); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v, want an error with %q", err, tc.msg)
			}
		})
	}
}

func TestEnsure(t *testing.T) {
	p := Paths{Home: filepath.Join(t.TempDir(), "hub")}
	if err := os.MkdirAll(p.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p.Home)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("HUB_HOME mode %v, want 0700", fi.Mode().Perm())
	}
}

// TestCheckEnv: a bad variable is named with whose environment it is in and
// a hint that says where to fix it; the good ones are reported as set.
func TestCheckEnv(t *testing.T) {
	t.Setenv("HUB_CONFIG_DIR", t.TempDir())
	t.Setenv("HUB_MONTHLY_CAP_USD", "abc")
	_, err := CheckEnv(FromCommand)
	var se *SettingError
	if !errors.As(err, &se) || se.Env != "HUB_MONTHLY_CAP_USD" {
		t.Fatalf("CheckEnv = %v, want a SettingError for HUB_MONTHLY_CAP_USD", err)
	}
	for _, want := range []string{`HUB_MONTHLY_CAP_USD="abc"`, "this command's environment", "not a number of dollars"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if h := se.Hint(); !strings.Contains(h, "unset HUB_MONTHLY_CAP_USD") || !strings.Contains(h, "nothing was started") {
		t.Errorf("hint %q", h)
	}
	_, err = CheckEnv(FromDaemon)
	if !errors.As(err, &se) || !strings.Contains(se.Hint(), "where the daemon was started") {
		t.Errorf("from the daemon: %v (hint %q)", err, se.Hint())
	}
	t.Setenv("HUB_MONTHLY_CAP_USD", "5")
	t.Setenv("HUB_MAX_RUNNING", "0")
	if _, err := CheckEnv(FromCommand); err == nil || !strings.Contains(err.Error(), `HUB_MAX_RUNNING="0"`) {
		t.Errorf("HUB_MAX_RUNNING=0: %v", err)
	}
	t.Setenv("HUB_MAX_RUNNING", "2")
	got, err := CheckEnv(FromCommand)
	if err != nil || got["HUB_MAX_RUNNING"] != "2" || got["HUB_MONTHLY_CAP_USD"] != "5" {
		t.Errorf("CheckEnv = %v, %v", got, err)
	}
}

// An agents entry of config.json is read whole; a bad one is refused with
// the entry, the field and what to do.
func TestAgents(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_CONFIG_DIR", dir)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"agents": {"kimi": {"command": "kimi", "args": ["acp"], "provider": "openai", "env": {"KIMI_API_KEY": "{key}", "KIMI_BASE_URL": "{base_url}/v1"}, "auth": ["api-key"]}}}`)
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Agent{Command: "kimi", Args: []string{"acp"}, Provider: "openai", Env: map[string]string{"KIMI_API_KEY": "{key}", "KIMI_BASE_URL": "{base_url}/v1"}, Auth: []string{"api-key"}}
	if !reflect.DeepEqual(s.Agents["kimi"], want) {
		t.Errorf("agents: %+v", s.Agents)
	}
	for cfg, msg := range map[string]string{
		`{"agents": {"Kimi": {"command": "kimi"}}}`:                                           "agents.Kimi: name it with",
		`{"agents": {"claude": {"command": "kimi"}}}`:                                         "claude is one of hub's own engines",
		`{"agents": {"k": {"args": ["acp"]}}}`:                                                `"command" is empty`,
		`{"agents": {"k": {"command": "k", "provider": "azure"}}}`:                            `provider "azure" is not one of`,
		`{"agents": {"k": {"command": "k", "provider": "openai", "env": {"1X": "a"}}}}`:       `env "1X" is not a variable name`,
		`{"agents": {"k": {"command": "k", "provider": "openai", "env": {"X": "{secret}"}}}}`: "env X names {secret}; a value may name {key}, {base_url}, {model}",
		`{"agents": {"k": {"command": "k", "env": {"X": "{key}"}}}}`:                          "no provider to take it from",
		`{"agents": {"k": {"command": "k", "argz": []}}}`:                                     "argz",
		`{"agents": {"k": {"command": "k", "pays": "cheap"}}}`:                                `pays "cheap" is not one of api, subscription, free`,
	} {
		write(cfg)
		if _, err := Load(); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("%s: %v, want %q", cfg, err, msg)
		}
	}
}
