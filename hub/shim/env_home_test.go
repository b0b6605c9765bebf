package shim

import (
	"strings"
	"testing"
)

// TestWorkerEnvHome: the HUB_HOME the shim gives a worker reaches it, once,
// and the shim's own environment adds no other.
func TestWorkerEnvHome(t *testing.T) {
	t.Setenv("HUB_HOME", "/somewhere/else")
	env := workerEnv("/opt/hub/bin/hub", "HUB_JOB=abc", "HUB_SOCKET=/h/jobs/abc/shim.sock", "HUB_HOME=/h")
	var homes []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HUB_HOME="); ok {
			homes = append(homes, v)
		}
	}
	if len(homes) != 1 || homes[0] != "/h" {
		t.Errorf("the worker's HUB_HOME: %q, want only the job's /h", homes)
	}
	if env := workerEnv("/opt/hub/bin/hub", "HUB_JOB=abc"); strings.Contains(strings.Join(env, "\n"), "HUB_HOME=") {
		t.Error("the shim's own HUB_HOME leaked into a worker's environment")
	}
}
