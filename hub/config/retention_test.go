package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJobRetentionDays(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_CONFIG_DIR", dir)
	t.Setenv("HUB_JOB_RETENTION_DAYS", "")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file, env string
		want            int
		err             string
	}{
		{name: "default", file: `{}`, want: 30},
		{name: "config file", file: `{"job_retention_days": 7}`, want: 7},
		{name: "environment wins", file: `{"job_retention_days": 7}`, env: "90", want: 90},
		{name: "zero", file: `{}`, env: "0", err: `HUB_JOB_RETENTION_DAYS="0", set in the environment the hub daemon was started with, must be at least 1 day`},
		{name: "negative in the file", file: `{"job_retention_days": -1}`, err: "job_retention_days is -1 in "},
		{name: "not a number", file: `{}`, env: "30d", err: `HUB_JOB_RETENTION_DAYS="30d", set in the environment the hub daemon was started with, is not a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.file)
			t.Setenv("HUB_JOB_RETENTION_DAYS", tc.env)
			got, err := Load()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || got.JobRetentionDays != tc.want {
				t.Errorf("Load: job_retention_days %d, %v; want %d", got.JobRetentionDays, err, tc.want)
			}
		})
	}
}
