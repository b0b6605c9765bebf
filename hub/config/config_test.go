package config

import (
	"os"
	"path/filepath"
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
	if err != nil || got != Defaults() {
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

func TestMicros(t *testing.T) {
	for usd, want := range map[float64]int64{0: 0, 0.3: 300_000, 2: 2_000_000, 0.0000015: 2, 19.999999: 19_999_999} {
		if got := Micros(usd); got != want {
			t.Errorf("Micros(%v) = %d, want %d", usd, got, want)
		}
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
