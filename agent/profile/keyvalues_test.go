package profile_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
)

// TestKeyValues: every key a profile reaches, from the environment (under
// whatever name the profile gives) or the env file, and every value of the
// env file, even one readable by others (which Key refuses).
func TestKeyValues(t *testing.T) {
	env := map[string]string{"GW_CRED": "from-env-gw", "OPENAI_API_KEY": "from-env-openai", "UNRELATED": "not-a-key"}
	s := profile.Store{Dir: t.TempDir(), Environ: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	for _, p := range []profile.Profile{
		{Name: "gw", Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_CRED"},
		{Name: "cheap", Provider: profile.OpenAI, Model: "m"},
		{Name: "claude", Provider: profile.Anthropic, Model: "m"},
		{Name: "local", Provider: profile.Ollama, Model: "q"},
	} {
		if err := s.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	writeEnvFile(t, s, "ANTHROPIC_API_KEY=from-file-anthropic\nSPARE=from-file-spare\n", 0o644)
	got := s.KeyValues()
	slices.Sort(got)
	got = slices.Compact(got)
	want := []string{"from-env-gw", "from-env-openai", "from-file-anthropic", "from-file-spare"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KeyValues (-want +got):\n%s", diff)
	}
}
