package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/config"
)

// TestNoDaemonStartedInJob: inside a hub job (HUB_JOB set) a client that
// finds no daemon fails, saying what works there, and starts nothing; the
// same client outside a job starts the daemon.
func TestNoDaemonStartedInJob(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	marker := filepath.Join(dir, "started")
	// A stand-in hub binary: it only says it was run.
	fake := filepath.Join(dir, "hub")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths := config.Paths{Home: filepath.Join(dir, "hub-home")}
	o := Options{AutoStart: true, HubBinary: fake, StartTimeout: 200 * time.Millisecond}

	t.Setenv(JobEnv, "job12345")
	_, err := Connect(context.Background(), paths, o)
	if !errors.Is(err, ErrNoDaemonInJob) {
		t.Fatalf("Connect inside a job: %v, want ErrNoDaemonInJob", err)
	}
	for _, want := range []string{"HUB_JOB=job12345", "`hub ask` and `hub progress` work there", paths.Home} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a client inside a job started a daemon")
	}
	if _, err := os.Stat(paths.Home); err == nil {
		t.Error("a client inside a job made HUB_HOME")
	}

	// Outside a job the same call starts one (here the stand-in, which never answers).
	t.Setenv(JobEnv, "")
	if _, err := Connect(context.Background(), paths, o); err == nil {
		t.Fatal("the stand-in daemon answered")
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == "serve" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("outside a job the client did not start the daemon")
		}
	}
}
