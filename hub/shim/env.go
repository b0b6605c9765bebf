package shim

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/redact"
)

// envAllow lists the variables a worker inherits: an allow-list, never a
// deny-list, so keys in the user's environment do not reach a worker. None
// of these names holds a key (redact.SecretName says no to each, and a test
// holds it so); an engine that needs a key (an agent CLI) adds it itself.
var envAllow = map[string]bool{
	"HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "TERM": true, "LANG": true,
	"TZ": true, "TMPDIR": true, "PATH": true, "GOPATH": true, "GOCACHE": true, "GOMODCACHE": true,
	"GOFLAGS": true, "GOTOOLCHAIN": true, "GOPROXY": true, "CGO_ENABLED": true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true,
	"GIT_CONFIG_NOSYSTEM": true, "XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true,
	"NODE_PATH": true, "NPM_CONFIG_CACHE": true, "PYTHONPATH": true, "VIRTUAL_ENV": true,
}

// workerEnv builds the worker's environment from the shim's own, keeping
// only allowed names (and LC_*), with the hub binary's directory first on PATH.
// An allowed variable whose value holds a secret hub recognises (GOPROXY
// with a password in its URL) is left out too. What the shim adds (extra:
// HUB_JOB, HUB_SOCKET, HUB_HOME, …) is kept as given, after the rest, so it
// wins; HUB_HOME in particular comes only from there, so a worker's `hub`
// commands reach the daemon of the job's own HUB_HOME.
func workerEnv(hubBinary string, extra ...string) []string {
	var env []string
	path := os.Getenv("PATH")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" {
			continue
		}
		if (envAllow[k] || strings.HasPrefix(k, "LC_")) && redact.String(kv) == kv {
			env = append(env, kv)
		}
	}
	if hubBinary != "" {
		path = filepath.Dir(hubBinary) + string(os.PathListSeparator) + path
	}
	env = append(env, "PATH="+path)
	return append(env, extra...)
}

// secrets is the redactor for everything the job stores: every key hub
// knows of — each profile's key, every value of the env file — and the
// values of secret-looking variables in the shim's own environment (the
// daemon's), by value; and the common formats.
func secrets() *redact.Redactor {
	return redact.WithEnv(profile.Store{Dir: config.ConfigDir()}.KeyValues()...)
}
