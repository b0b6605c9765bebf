package cli

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/router"
)

// TestEngineNames: the engines hub registers are the router's order, name
// for name, so the order ranks every one and config.json's agents can be
// refused a built-in engine's name from it.
func TestEngineNames(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HUB_HOME", home)
	t.Setenv("HOME", home)
	got := Engines(zerolog.Nop()).Names()
	want := slices.Clone(router.DefaultOrder)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered engines %v; router.DefaultOrder names %v", got, want)
	}
	if slices.Contains(got, router.Auto) {
		t.Errorf("an engine is named %q, the name that asks the router", router.Auto)
	}
}
