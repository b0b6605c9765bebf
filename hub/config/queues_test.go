package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A queues entry of config.json is read whole, with its defaults; a bad one
// is refused with the entry, the field and what to do.
func TestQueues(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_CONFIG_DIR", dir)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"queues": {"big": {"runner": "temporal", "address": "t.example:7233", "remote": "origin"}}}`)
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	q := s.Queues["big"].Defaulted("big")
	if q.Namespace != "default" || q.TaskQueue != "big" || q.Slots != QueueSlots || q.Address != "t.example:7233" || q.Remote != "origin" {
		t.Errorf("queue: %+v", q)
	}
	for cfg, msg := range map[string]string{
		`{"queues": {"Big": {"runner": "temporal", "address": "a:1", "remote": "o"}}}`:                    "queues.Big: name it with",
		`{"queues": {"b": {"runner": "nats", "address": "a:1", "remote": "o"}}}`:                          `runner "nats" is not one of temporal`,
		`{"queues": {"b": {"runner": "temporal", "remote": "o"}}}`:                                        `"address" is empty`,
		`{"queues": {"b": {"runner": "temporal", "address": "a:1"}}}`:                                     `"remote" is empty`,
		`{"queues": {"b": {"runner": "temporal", "address": "a:1", "remote": "o", "slots": -1}}}`:         "slots -1 is not between 1 and 1000",
		`{"queues": {"b": {"runner": "temporal", "address": "a:1", "remote": "o", "tls_cert": "c.pem"}}}`: "tls_cert and tls_key go together",
		`{"queues": {"b": {"runner": "temporal", "address": "a:1", "remote": "o", "adress": "x"}}}`:       "adress",
	} {
		write(cfg)
		if _, err := Load(); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("%s: %v, want %q", cfg, err, msg)
		}
	}
}

// The runner is found beside hub first, then on PATH; a missing one says
// how to get it.
func TestRunnerCommand(t *testing.T) {
	dir := t.TempDir()
	hub := filepath.Join(dir, "hub")
	q := Queue{Runner: "temporal"}
	t.Setenv("PATH", t.TempDir())
	if _, err := q.RunnerCommand(hub); err == nil || !strings.Contains(err.Error(), "make runners") {
		t.Errorf("no runner: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hub-temporal"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := q.RunnerCommand(hub); err != nil || got != filepath.Join(dir, "hub-temporal") {
		t.Errorf("beside hub: %q %v", got, err)
	}
	q.Command = filepath.Join(dir, "other")
	if _, err := q.RunnerCommand(hub); err == nil || !strings.Contains(err.Error(), "is not there") {
		t.Errorf("a command that is not there: %v", err)
	}
}
