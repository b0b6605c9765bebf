package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The core binary links nothing of Temporal: the runner is a module of its
// own (hub/temporal), which only the hub-temporal binary pulls in.
func TestNoTemporalInCore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "go.temporal.io/") || strings.HasPrefix(p, "github.com/hub-agents/hub/hub/temporal") {
			t.Errorf("cmd/hub depends on %s", p)
		}
	}
}
