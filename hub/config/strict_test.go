package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hub-agents/hub/internal/strictjson"
)

// A key config.json does not have is refused, naming it, the file and the
// closest key, so a typo does not leave a setting at its default unnoticed.
func TestLoadRefusesUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_CONFIG_DIR", dir)
	for _, k := range []string{"HUB_MAX_RUNNING", "HUB_MONTHLY_CAP_USD", "HUB_DEFAULT_MAX_USD", "HUB_MAX_JOB_USD",
		"HUB_TIMEOUT_S", "HUB_VERIFY_TIMEOUT_S", "HUB_ASK_TIMEOUT_S", "HUB_STALL_TIMEOUT_S", "HUB_JOB_RETENTION_DAYS"} {
		t.Setenv(k, "")
	}
	path := filepath.Join(dir, "config.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write(`{"max_running": 2, "max_runing": 7}`)
	_, err := Load()
	if err == nil {
		t.Fatal("Load took max_runing")
	}
	for _, want := range []string{"config " + path + ": ", `unknown key "max_runing"`, `did you mean "max_running"?`,
		"the keys are: max_running, monthly_cap_usd,", "job_retention_days, limit_processes, limit_memory_mb, limit_disk_mb, max_file_mb, agents, queues)", "; fix it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	var uk *strictjson.UnknownKeyError
	if !errors.As(err, &uk) || uk.Key != "max_runing" || uk.Suggest != "max_running" {
		t.Errorf("error %v does not unwrap to the unknown key", err)
	}

	// No suggestion when nothing is close.
	write(`{"colour": "blue"}`)
	if _, err := Load(); err == nil || !strings.Contains(err.Error(), `unknown key "colour" (the keys are: `) {
		t.Errorf("got %v", err)
	}

	// What encoding/json takes is still taken: keys match case-insensitively.
	write(`{"MAX_RUNNING": 3, "Monthly_Cap_USD": 9}`)
	got, err := Load()
	if err != nil || got.MaxRunning != 3 || got.MonthlyCapUSD != 9 {
		t.Errorf("case-insensitive keys: %+v, %v", got, err)
	}

	// A wrong type is still invalid JSON for the setting, as before.
	write(`{"max_running": "3"}`)
	if _, err := Load(); err == nil || !strings.Contains(err.Error(), "is not valid JSON") {
		t.Errorf("a string for max_running: %v", err)
	}
}
